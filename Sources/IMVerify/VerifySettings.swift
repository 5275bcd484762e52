import IMConfig
import IMRelay

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

    /// Decodes `verify:`; both keys are durations (`24h`; a bare number is still read as seconds, with a warning).
    package static func decode(_ section: ConfigSection) -> VerifySettings {
        var settings = VerifySettings()
        if let interval = section.duration("interval", range: DurationRange(minimum: .seconds(10)), bare: .seconds) {
            settings.intervalMs = interval.value.milliseconds
        }
        if let window = section.duration("window", range: DurationRange(minimum: .seconds(1)), bare: .seconds) {
            settings.windowMs = window.value.milliseconds
        }
        return settings
    }
}
