import IMCore

/// Reading mapped fields out of a content object while collecting what is left.
struct ContentFields {
    var remaining: [String: JSONValue]

    init(_ object: [String: JSONValue]) { remaining = object }

    mutating func take(_ key: String) -> JSONValue? {
        guard let value = remaining.removeValue(forKey: key) else { return nil }
        return value == .null ? nil : value
    }

    mutating func string(_ key: String) -> String? { take(key)?.stringValue }
}

/// Building a content object from neutral values: absent values are left out.
struct ContentObject {
    private(set) var object: [String: JSONValue] = [:]

    init() {}

    /// Starting from keys already written (a mapping's body), kept as they are.
    init(_ object: [String: JSONValue]) { self.object = object }

    subscript(key: String) -> JSONValue? {
        get { object[key] }
        set { object[key] = newValue }
    }

    mutating func set(_ key: String, _ value: String?) { if let value { object[key] = .string(value) } }

    /// Adds kept vendor fields for keys this object did not write; nested objects merge one level deep.
    mutating func merge(_ kept: [String: JSONValue]) {
        for (key, value) in kept {
            if case .object(let extra)? = object[key], case .object(let nested) = value {
                object[key] = .object(extra.merging(nested) { mine, _ in mine })
            } else if object[key] == nil {
                object[key] = value
            }
        }
    }

    var json: String { JSONValue.object(object).jsonString() }
}
