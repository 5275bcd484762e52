import IMConfig
import IMHTTP

extension ListenerLimits {
    /// `listener:` — the three timeouts (1s to 1h) and `max_connections` (1–60000).
    package static func decode(_ section: ConfigSection) -> ListenerLimits {
        var limits = ListenerLimits()
        let range = DurationRange(minimum: .seconds(1), maximum: .hours(1))
        if let value = section.duration("header_timeout", range: range, legacy: .init("header_timeout_seconds", .seconds)) {
            limits.headerTimeout = value.value.duration
        }
        if let value = section.duration("body_timeout", range: range, legacy: .init("body_timeout_seconds", .seconds)) {
            limits.bodyTimeout = value.value.duration
        }
        if let value = section.duration("idle_timeout", range: range, legacy: .init("idle_timeout_seconds", .seconds)) {
            limits.idleTimeout = value.value.duration
        }
        if let value = section.read("max_connections", { node -> Int? in
            guard let value = try node.optionalInt() else { return nil }
            guard (1...60_000).contains(value) else { throw node.error("expected connections from 1 to 60000, got \(node.shown(value))") }
            return value
        }) { limits.maxConnections = value }
        return limits
    }
}
