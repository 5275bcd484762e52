import Foundation
import NIOCore

/// One network a listener takes connections from (`listener.allow_from`, `listener.admin_allow_from`;
/// docs/operations.md, "Forged and replayed callbacks"): an IPv4 or IPv6 address, alone or with a prefix
/// length (`10.0.0.0/8`, `192.0.2.7`, `2001:db8::/32`, `::1`). An IPv4 network also holds the
/// IPv4-mapped IPv6 form of its addresses (`::ffff:10.1.2.3`).
public struct SourceNetwork: Sendable, Hashable, CustomStringConvertible {
    public let address: [UInt8]
    public let prefixLength: Int
    public let description: String

    /// Nil when `text` is not an address or `address/prefix` with a prefix that fits it.
    public init?(_ text: String) {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 1 || parts.count == 2, let address = Self.bytes(of: String(parts[0])) else { return nil }
        let length = parts.count == 2 ? Int(parts[1]) : address.count * 8
        guard let length, (0...(address.count * 8)).contains(length) else { return nil }
        self.address = address
        self.prefixLength = length
        self.description = text.trimmingCharacters(in: .whitespaces)
    }

    /// Whether `peer` (a connection's remote address) is in the network; a peer that is not an IP
    /// address (a Unix socket) is not.
    public func contains(_ peer: SocketAddress) -> Bool {
        peer.ipAddress.map(contains(ip:)) ?? false
    }

    /// Whether the address written `ip` (`10.1.2.3`, `2001:db8::1`) is in the network.
    public func contains(ip: String) -> Bool {
        guard var bytes = Self.bytes(of: ip) else { return false }
        if address.count == 4, bytes.count == 16, bytes[..<12].elementsEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]) {
            bytes = Array(bytes[12...])
        }
        guard bytes.count == address.count else { return false }
        var remaining = prefixLength
        for index in address.indices where remaining > 0 {
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            if bytes[index] & mask != address[index] & mask { return false }
            remaining -= bits
        }
        return true
    }

    /// Whether any of `networks` holds `peer`; an empty list holds everyone.
    public static func allows(_ networks: [SourceNetwork], _ peer: SocketAddress?) -> Bool {
        guard !networks.isEmpty else { return true }
        guard let peer else { return false }
        return networks.contains { $0.contains(peer) }
    }

    static func bytes(of text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }
}
