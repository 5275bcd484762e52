import Foundation

/// A decoded `application/x-www-form-urlencoded` body or query string as RongCloud uses it: keys may
/// repeat (`toUserId=a&toUserId=b`), order is kept, and lookups are by exact key.
public struct WireForm: Hashable, Sendable {
    public var items: [WireFormItem]

    public init(_ items: [WireFormItem] = []) { self.items = items }

    public init(_ pairs: [(String, String)]) { self.items = pairs.map { WireFormItem($0.0, $0.1) } }

    /// The first value of `key`.
    public subscript(key: String) -> String? { items.first { $0.name == key }?.value }

    /// Every value of a repeated key, in order.
    public func all(_ key: String) -> [String] { items.filter { $0.name == key }.map(\.value) }

    public mutating func append(_ name: String, _ value: String?) {
        if let value { items.append(WireFormItem(name, value)) }
    }

    public mutating func append(_ name: String, _ value: Bool?) {
        if let value { items.append(WireFormItem(name, value ? "true" : "false")) }
    }

    /// Appends a 0/1 flag (the fields the vendor documents as Int 0/1).
    public mutating func appendFlag(_ name: String, _ value: Bool?) {
        if let value { items.append(WireFormItem(name, value ? "1" : "0")) }
    }

    public var pairs: [(String, String)] { items.map { ($0.name, $0.value) } }

    /// Reads a boolean the way the vendor's servers tolerate it: `true`/`True`/`TRUE`/`1` are true,
    /// `false`/`False`/`0` false; anything else (or absence) is nil.
    public func bool(_ key: String) -> Bool? {
        guard let raw = self[key]?.trimmingCharacters(in: .whitespaces).lowercased() else { return nil }
        switch raw {
        case "true", "1", "yes": return true
        case "false", "0", "no": return false
        default: return nil
        }
    }

    public func int64(_ key: String) -> Int64? {
        guard let raw = self[key]?.trimmingCharacters(in: .whitespaces) else { return nil }
        return Int64(raw)
    }
}

public struct WireFormItem: Hashable, Sendable {
    public var name: String
    public var value: String
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}
