import IMConfig
import IMHTTP

extension ListenerLimits {
    /// `listener:` — the three timeouts (1s to 1h), `max_connections` (1–60000), and the networks
    /// `listen` (`allow_from`) and `admin_listen` (`admin_allow_from`) take connections from.
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
        if let networks = sourceNetworks(section, "allow_from") { limits.allowedSources = networks }
        if let networks = sourceNetworks(section, "admin_allow_from") { limits.adminAllowedSources = networks }
        return limits
    }

    /// A list of addresses and networks (`10.0.0.0/8`, `2001:db8::/32`, `192.0.2.7`).
    static func sourceNetworks(_ section: ConfigSection, _ key: String) -> [SourceNetwork]? {
        section.read(key) { node -> [SourceNetwork]? in
            guard node.isPresent else { return nil }
            return try node.list().map { item in
                guard let text = try item.optionalString(), let network = SourceNetwork(text) else {
                    throw item.error("expected an IP address or network (10.0.0.0/8, 2001:db8::/32), got \(item.shown(try item.optionalString() ?? ""))")
                }
                return network
            }
        }
    }
}
