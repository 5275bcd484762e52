import IMMapping

/// `verify:` in `bridge.yaml` (docs/verify.md, "Scheduled audits"): `imbridge run` compares both sides of
/// its routes on its own, every `interval`, over the last `window`. Off unless `interval` is set.
public struct VerifySettings: Sendable, Equatable {
    /// Time between audits; nil: no scheduled audit (the default).
    public var intervalMs: Int64?
    /// How far back each audit reads the sources (default 24 h).
    public var windowMs: Int64 = 24 * 3_600_000

    public init(intervalMs: Int64? = nil, windowMs: Int64 = 24 * 3_600_000) {
        self.intervalMs = intervalMs
        self.windowMs = windowMs
    }

    public static let keys = ["interval", "window"]

    static func parse(_ node: ConfigNode, problems: inout ConfigProblems) -> VerifySettings {
        var settings = VerifySettings()
        guard node.isPresent else { return settings }
        guard problems.attempt({ try node.expectMapping() }) != nil else { return settings }
        problems.attempt { try node.allowOnly(Set(keys)) }
        problems.attempt {
            guard let text = try node["interval"].optionalString() else { return }
            let ms = try CatchUpSettings.duration(text, node["interval"])
            guard ms >= 10_000 else { throw node["interval"].error("expected a duration of at least 10s, got \(node["interval"].shown(text))") }
            settings.intervalMs = ms
        }
        problems.attempt {
            guard let text = try node["window"].optionalString() else { return }
            let ms = try CatchUpSettings.duration(text, node["window"])
            guard ms >= 1000 else { throw node["window"].error("expected a duration of at least 1s, got \(node["window"].shown(text))") }
            settings.windowMs = ms
        }
        return settings
    }
}
