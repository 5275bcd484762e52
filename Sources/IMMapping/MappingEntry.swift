import Foundation
import IMCore

/// Where a mapping came from: the file and line an error or a report points at.
public struct MappingSource: Hashable, Sendable, CustomStringConvertible {
    public let file: String
    public let line: Int?
    public var description: String { line.map { "\(file):\($0)" } ?? file }
}

/// One neutral field ⇄ one wire field, compiled from a `fields:` item.
///
/// The values live in one shared, immutable box, as `MappingEntry`'s do: the codecs go through an
/// entry's rules on every message, and a rule copied out of the array was nine values to retain and
/// release, a boxed one is one (docs/performance.md, "Codec round trips"). Equality and hashing are the values'.
public struct FieldRule: Hashable, Sendable {
    struct Values: Hashable, Sendable {
        let neutral: String
        let wire: [String]
        let aliases: [[String]]
        let transform: Transform
        let type: NeutralType
        let decodeDefault: JSONValue?
        let encodeDefault: JSONValue?
        let required: Bool
        let or: [String]
    }

    final class Box: Sendable {
        let values: Values
        init(_ values: Values) { self.values = values }
    }

    private let box: Box

    init(neutral: String, wire: [String], aliases: [[String]], transform: Transform, type: NeutralType, decodeDefault: JSONValue?,
         encodeDefault: JSONValue?, required: Bool, or: [String]) {
        box = Box(Values(neutral: neutral, wire: wire, aliases: aliases, transform: transform, type: type, decodeDefault: decodeDefault,
                         encodeDefault: encodeDefault, required: required, or: or))
    }

    public static func == (lhs: FieldRule, rhs: FieldRule) -> Bool {
        lhs.box === rhs.box || lhs.box.values == rhs.box.values
    }

    public func hash(into hasher: inout Hasher) { box.values.hash(into: &hasher) }

    public var neutral: String { box.values.neutral }
    /// The wire key; a dotted name (`video.media_id`) reaches into nested objects.
    public var wire: [String] { box.values.wire }
    /// Other wire keys accepted when decoding (`lable` for `label`); never written.
    public var aliases: [[String]] { box.values.aliases }
    public var transform: Transform { box.values.transform }
    public var type: NeutralType { box.values.type }
    /// Neutral value used when the wire lacks the field (the WuKongIM custom-message guide: a GIF without width is 100 wide).
    public var decodeDefault: JSONValue? { box.values.decodeDefault }
    /// Wire value written when the neutral side has none (vendors that require the key).
    public var encodeDefault: JSONValue? { box.values.encodeDefault }
    /// A wire body without this field is malformed.
    public var required: Bool { box.values.required }
    /// Neutral fields whose value is written when this one has none (`title` or else `address`).
    public var or: [String] { box.values.or }

    public var wireName: String { wire.joined(separator: ".") }
}

/// The wire type an entry matches: one value, or (WuKong's system notices) a numeric range.
public enum WireSelector: Hashable, Sendable, CustomStringConvertible {
    case exact(String)
    case range(ClosedRange<Int>)

    public func matches(_ wire: String) -> Bool {
        switch self {
        case .exact(let value): value == wire
        case .range(let range): Int(wire).map(range.contains) ?? false
        }
    }

    public var description: String {
        switch self {
        case .exact(let value): value
        case .range(let range): "\(range.lowerBound)-\(range.upperBound)"
        }
    }
}

/// One wire representation of one neutral target on one vendor (a built-in type from
/// `mappings/<vendor>.yaml`, or a vendor section of a `mappings/custom/*.yaml` type).
///
/// The values live in one shared, immutable box: an entry is copied (into `MappedContent`,
/// `MappedWire`, a candidate list) on every message a codec reads or writes, and copying the box is one
/// reference count where copying its fourteen values was fourteen (docs/performance.md, "Codec round
/// trips"). Equality and hashing are the values'.
public struct MappingEntry: Hashable, Sendable {
    struct Values: Hashable, Sendable {
        let vendor: String
        let wire: WireSelector
        let encodeWire: String
        let when: [String: JSONValue]
        let constants: [String: JSONValue]
        let dataKey: String?
        let target: NeutralTarget
        let fields: [FieldRule]
        let decodeOnly: Bool
        let secondary: Bool
        let noticeType: String?
        let digest: Template?
        let customFile: String?
        let source: MappingSource
        /// No `when`, no `dataKey`, and every field's wire key and aliases are single top-level keys,
        /// no two rules or aliases naming the same one: decoding may then read the body's values
        /// without taking them out of a copy (`VendorTable.decode(entry:wire:body:registry:)`).
        let flat: Bool
        /// For a built-in target, the rules' neutral names compiled (`NeutralKey`s): nil for a custom
        /// target, or when two rules name one field (never from the loader, which reads names as keys).
        let compiled: CompiledFields?
    }

    /// A built-in entry's rules by field number: `VendorTable` reads a content's values and holds the
    /// values it decodes by these instead of a dictionary keyed by name.
    struct CompiledFields: Hashable, Sendable {
        /// Per rule, its field.
        let keys: [NeutralKey]
        /// Per rule, the fields of its `or`.
        let or: [[NeutralKey]]
        /// Per `NeutralKey` (raw value), the index of the rule naming it, or -1.
        let rule: [Int8]

        init?(target: NeutralTarget, fields: [FieldRule]) {
            guard case .builtin = target, fields.count < Int(Int8.max) else { return nil }
            var keys: [NeutralKey] = []
            var or: [[NeutralKey]] = []
            var rule = [Int8](repeating: -1, count: NeutralKey.allCases.count)
            for (index, field) in fields.enumerated() {
                guard let key = NeutralKey(name: field.neutral), rule[key.rawValue] < 0 else { return nil }
                var others: [NeutralKey] = []
                for name in field.or {
                    guard let other = NeutralKey(name: name) else { return nil }
                    others.append(other)
                }
                keys.append(key)
                or.append(others)
                rule[key.rawValue] = Int8(index)
            }
            self.keys = keys
            self.or = or
            self.rule = rule
        }
    }

    final class Box: Sendable {
        let values: Values
        init(_ values: Values) { self.values = values }
    }

    private let box: Box

    init(vendor: String, wire: WireSelector, encodeWire: String, when: [String: JSONValue], constants: [String: JSONValue],
         dataKey: String?, target: NeutralTarget, fields: [FieldRule], decodeOnly: Bool, secondary: Bool, noticeType: String?,
         digest: Template?, customFile: String?, source: MappingSource) {
        box = Box(Values(vendor: vendor, wire: wire, encodeWire: encodeWire, when: when, constants: constants, dataKey: dataKey,
                         target: target, fields: fields, decodeOnly: decodeOnly, secondary: secondary, noticeType: noticeType,
                         digest: digest, customFile: customFile, source: source,
                         flat: Self.isFlat(when: when, dataKey: dataKey, fields: fields),
                         compiled: CompiledFields(target: target, fields: fields)))
    }

    private static func isFlat(when: [String: JSONValue], dataKey: String?, fields: [FieldRule]) -> Bool {
        guard when.isEmpty, dataKey == nil else { return false }
        var keys: Set<String> = []
        for rule in fields {
            for path in [rule.wire] + rule.aliases {
                guard path.count == 1, keys.insert(path[0]).inserted else { return false }
            }
        }
        return true
    }

    var flat: Bool { box.values.flat }
    var compiled: CompiledFields? { box.values.compiled }

    public static func == (lhs: MappingEntry, rhs: MappingEntry) -> Bool {
        lhs.box === rhs.box || lhs.box.values == rhs.box.values
    }

    public func hash(into hasher: inout Hasher) { box.values.hash(into: &hasher) }

    public var vendor: String { box.values.vendor }
    public var wire: WireSelector { box.values.wire }
    /// The wire type written when encoding (a range's `encode_as`).
    public var encodeWire: String { box.values.encodeWire }
    /// Discriminators: wire keys that must hold these values (checked and consumed on decode,
    /// written on encode), e.g. NIM `{"type": "order"}` or an image's `ext: gif`.
    public var when: [String: JSONValue] { box.values.when }
    /// Wire keys written when encoding if the body has no value for them (vendors that require a key
    /// the neutral model has no use for, e.g. JMessage's map `scale`). Not checked when decoding.
    public var constants: [String: JSONValue] { box.values.constants }
    /// The key of the nested object the fields live in (`data` of NIM's `{"type":…,"data":{…}}`).
    public var dataKey: String? { box.values.dataKey }
    public var target: NeutralTarget { box.values.target }
    public var fields: [FieldRule] { box.values.fields }
    /// Decoding only (an older wire form still accepted, never written).
    public var decodeOnly: Bool { box.values.decodeOnly }
    /// A second form of a target on the same vendor (the WuKongIM custom-message guide's app types 102, 103, 104 beside
    /// its built-in 6, 7, 2): decoded like any entry, written only for content that was read from it
    /// (its codec remembers the wire type), never chosen for content from elsewhere.
    public var secondary: Bool { box.values.secondary }
    /// The neutral `notice_type` of a notice; the wire type when not given.
    public var noticeType: String? { box.values.noticeType }
    public var digest: Template? { box.values.digest }
    /// The custom type's name when the entry came from a custom file.
    public var customFile: String? { box.values.customFile }
    public var source: MappingSource { box.values.source }

    /// A short name for reports: `3 → gif`, `App:OrderMsg → custom 'order_card'`.
    public var label: String {
        let conditions = when.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.stringValue ?? $0.value.jsonString())" }
        return "\(wire)\(conditions.isEmpty ? "" : "[" + conditions.joined(separator: ",") + "]") → \(target)"
    }

    /// Whether the entry's discriminators hold for a body.
    func accepts(_ body: [String: JSONValue]) -> Bool {
        for (key, value) in when where !Self.same(body[key], value) { return false }
        if when.isEmpty, customFile != nil {
            // An undiscriminated custom attachment (the NIM custom-message guide) is recognised by its required fields.
            let fieldsBody = dataKey.flatMap { body[$0]?.objectValue } ?? body
            for rule in fields where rule.required {
                guard Self.value(at: rule.wire, in: fieldsBody) != nil else { return false }
            }
        }
        return true
    }

    static func same(_ wire: JSONValue?, _ expected: JSONValue) -> Bool {
        guard let wire else { return false }
        if wire == expected { return true }
        return wire.stringValue?.lowercased() == expected.stringValue?.lowercased()
    }

    static func value(at path: [String], in object: [String: JSONValue]) -> JSONValue? {
        var current: JSONValue = .object(object)
        for key in path {
            guard let next = current[key] else { return nil }
            current = next
        }
        return current == .null ? nil : current
    }

    static func take(_ path: [String], from object: inout [String: JSONValue]) -> JSONValue? {
        guard let first = path.first else { return nil }
        if path.count == 1 {
            let value = object.removeValue(forKey: first)
            return value == .null ? nil : value
        }
        guard case .object(var nested)? = object[first] else { return nil }
        let value = take(Array(path.dropFirst()), from: &nested)
        object[first] = nested.isEmpty ? nil : .object(nested)
        return value
    }

    static func put(_ value: JSONValue, at path: [String], in object: inout [String: JSONValue]) {
        guard let first = path.first else { return }
        if path.count == 1 { object[first] = value; return }
        var nested = object[first]?.objectValue ?? [:]
        put(value, at: Array(path.dropFirst()), in: &nested)
        object[first] = .object(nested)
    }
}
