import Foundation
import IMCore

/// A content decoded through a mapping entry.
public struct MappedContent: Sendable {
    public let entry: MappingEntry
    public let content: MessageContent
    /// The body's keys the entry did not use (a codec keeps them so a same-vendor round trip is exact).
    public let remaining: [String: JSONValue]
}

/// A content encoded through a mapping entry: the wire type and the body's mapped keys.
public struct MappedWire: Sendable {
    public let entry: MappingEntry
    public let wireType: String
    public private(set) var body: [String: JSONValue]

    init(entry: MappingEntry, wireType: String, body: [String: JSONValue]) {
        self.entry = entry
        self.wireType = wireType
        self.body = body
    }

    /// The body, moved out (this wire's is left empty): a codec that adds keys to it then changes the
    /// one dictionary instead of a copy (`body` is still referenced by this value otherwise).
    public mutating func takeBody() -> [String: JSONValue] {
        var body: [String: JSONValue] = [:]
        swap(&body, &self.body)
        return body
    }
}

/// Every mapping entry of one vendor, compiled and indexed once (no YAML work per message).
///
/// Decoding picks, among the entries for the wire type, the first whose discriminators hold: entries
/// with discriminators before those without, then file order (built-in table, then custom files by name). Encoding picks, among the entries for the
/// content's kind or custom type, the first that is not `decode_only` and whose required fields'
/// transforms accept the content's values (an optional value a transform cannot take is left out); for a notice, the entry whose wire type is the notice's `notice_type` first.
public struct VendorTable: Sendable {
    public let vendor: String
    public let entries: [MappingEntry]
    /// Per exact wire type, the decoding candidates already in decoding order (discriminated first).
    private let byWire: [String: [MappingEntry]]
    private let ranged: [MappingEntry]
    private let byTarget: [NeutralTarget: [MappingEntry]]
    private let encoders: [NeutralTarget: [MappingEntry]]
    /// `encoders` of the built-in kinds, by `ContentKind.allCases` position: a content's candidates are
    /// found without hashing its target (a kind hashes its raw-value text).
    private let kindEncoders: [[MappingEntry]]

    public init(vendor: String, entries: [MappingEntry]) {
        self.vendor = vendor
        self.entries = entries
        // Most specific first: entries with discriminators before those without (an image with
        // `ext: gif` is a GIF), file order otherwise. Computed once, not per message.
        let ordered = entries.filter { !$0.when.isEmpty } + entries.filter { $0.when.isEmpty }
        var byWire: [String: [MappingEntry]] = [:]
        var ranged: [MappingEntry] = []
        for entry in ordered {
            switch entry.wire {
            case .exact(let value): byWire[value, default: []].append(entry)
            case .range: ranged.append(entry)
            }
        }
        var byTarget: [NeutralTarget: [MappingEntry]] = [:]
        for entry in entries { byTarget[entry.target, default: []].append(entry) }
        self.byWire = byWire
        self.ranged = ranged
        self.byTarget = byTarget
        let encoders = byTarget.mapValues { $0.filter { !$0.decodeOnly && !$0.secondary } }
        self.encoders = encoders
        kindEncoders = ContentKind.allCases.map { encoders[.builtin($0)] ?? [] }
    }

    /// The entries that may write a target, in encoding order.
    private func encoders(for target: NeutralTarget) -> [MappingEntry] {
        if case .builtin(let kind) = target { return kindEncoders[kind.position] }
        return encoders[target] ?? []
    }

    public func entries(for target: NeutralTarget) -> [MappingEntry] { byTarget[target] ?? [] }

    /// Whether this vendor has a wire form for a custom type or built-in kind.
    public func carries(_ target: NeutralTarget) -> Bool { !encoders(for: target).isEmpty }

    /// Decodes a body of a wire type; nil when no entry matches (the codec decides: unsupported, raw custom …).
    /// Throws `malformed_payload` when a required field is missing or a value cannot be converted.
    public func decode(wire: String, body: [String: JSONValue], registry: ContentRegistry) throws -> MappedContent? {
        if let exact = byWire[wire], let entry = exact.first(where: { $0.accepts(body) }) {
            return try decode(entry: entry, wire: wire, body: body, registry: registry)
        }
        guard let entry = ranged.first(where: { $0.wire.matches(wire) && $0.accepts(body) }) else { return nil }
        return try decode(entry: entry, wire: wire, body: body, registry: registry)
    }

    public func decode(entry: MappingEntry, wire: String, body: [String: JSONValue], registry: ContentRegistry) throws -> MappedContent {
        if entry.flat { return try decodeFlat(entry: entry, wire: wire, body: body, registry: registry) }
        return try decodeTaking(entry: entry, wire: wire, body: body, registry: registry)
    }

    /// The general decoding: each rule takes its value out of a copy of the body, what is left remains.
    func decodeTaking(entry: MappingEntry, wire: String, body: [String: JSONValue], registry: ContentRegistry,
                      byName: Bool = false) throws -> MappedContent {
        let vendor = vendor
        var outer = body
        for key in entry.when.keys { outer.removeValue(forKey: key) }
        var object = outer
        if let dataKey = entry.dataKey {
            object = outer.removeValue(forKey: dataKey)?.objectValue ?? [:]
        }
        let content = try content(of: entry, wire: wire, registry: registry, byName: byName) { rule in
            var raw = MappingEntry.take(rule.wire, from: &object)
            for alias in rule.aliases where raw == nil { raw = MappingEntry.take(alias, from: &object) }
            return try Self.fieldValue(of: rule, raw, entry: entry, wire: wire, vendor: vendor)
        }
        var remaining = object
        if let dataKey = entry.dataKey {
            remaining = outer
            if !object.isEmpty { remaining[dataKey] = .object(object) }
        }
        return MappedContent(entry: entry, content: content, remaining: remaining)
    }

    /// `decode(entry:…)` for a `flat` entry: the values are read where they are instead of being taken
    /// out of a copy of the body, and the remaining keys are only computed when there are any (a text's
    /// body has its one `content` key, nothing remains). Same values, same errors in the same order,
    /// same remaining keys: the rules name distinct top-level keys, so taking one never changes what
    /// another finds.
    func decodeFlat(entry: MappingEntry, wire: String, body: [String: JSONValue], registry: ContentRegistry,
                    byName: Bool = false) throws -> MappedContent {
        let vendor = vendor
        var used = 0   // the body's keys `MappingEntry.take` takes out
        let content = try content(of: entry, wire: wire, registry: registry, byName: byName) { rule in
            var raw: JSONValue?
            if let value = body[rule.wire[0]] {
                used += 1
                if value != .null { raw = value }
            }
            for alias in rule.aliases where raw == nil {
                if let value = body[alias[0]] {
                    used += 1
                    if value != .null { raw = value }
                }
            }
            return try Self.fieldValue(of: rule, raw, entry: entry, wire: wire, vendor: vendor)
        }
        var remaining: [String: JSONValue] = [:]
        if used < body.count {
            remaining = body
            for rule in entry.fields {
                var raw = MappingEntry.take(rule.wire, from: &remaining)
                for alias in rule.aliases where raw == nil { raw = MappingEntry.take(alias, from: &remaining) }
            }
        }
        return MappedContent(entry: entry, content: content, remaining: remaining)
    }

    /// The content an entry's neutral values make, `value` giving each rule's (nil: none) in rule order.
    /// A built-in target's values are held by rule, on the stack, and read by field number
    /// (`MappingEntry.CompiledFields`); a custom target's (or with `byName`, the reference path the
    /// tests compare with) in a dictionary by neutral name. Same content, same errors in the same order.
    private func content(of entry: MappingEntry, wire: String, registry: ContentRegistry, byName: Bool,
                         _ value: (FieldRule) throws -> JSONValue?) throws -> MessageContent {
        let rules = entry.fields
        if !byName, let compiled = entry.compiled, case .builtin(let kind) = entry.target {
            return try withUnsafeTemporaryAllocation(of: JSONValue?.self, capacity: rules.count) { values in
                values.initialize(repeating: nil)
                defer { values.deinitialize() }
                for index in rules.indices { values[index] = try value(rules[index]) }
                var fields = RuleFields(values: UnsafeBufferPointer(values), compiled: compiled)
                if kind == .notice, fields[.noticeType] == nil { fields.noticeType = .string(entry.noticeType ?? wire) }
                return try NeutralForm.content(kind, fields)
            }
        }
        var neutral = [String: JSONValue].withCapacity(rules.count)
        for rule in rules {
            if let value = try value(rule) { neutral[rule.neutral] = value }
        }
        return try makeContent(of: entry, wire: wire, neutral, registry: registry)
    }

    /// The neutral value of `rule` from the wire value found for it (`raw`, nil when none): converted,
    /// else its decode default, else nil (left out); throws `malformed_payload` for a required field
    /// that is missing or a value that cannot be converted. Shared by both decodings.
    /// (Static, with the vendor's name: the decodings' closures then capture that, not a copy of the table.)
    private static func fieldValue(of rule: FieldRule, _ raw: JSONValue?, entry: MappingEntry, wire: String, vendor: String) throws -> JSONValue? {
        guard let raw else {
            if rule.decodeDefault == nil, rule.required {
                throw IMError(.malformedPayload, "\(vendor) \(wire) body has no '\(rule.wireName)' (\(entry.source))",
                              details: ["field": rule.wireName])
            }
            return rule.decodeDefault
        }
        guard let converted = rule.transform.decode(raw).flatMap(rule.type.coerce) else {
            throw IMError(.malformedPayload, "\(vendor) \(wire): '\(rule.wireName)' value \(raw.jsonString()) is not a \(rule.type.rawValue)",
                          details: ["field": rule.wireName])
        }
        return converted
    }

    /// The content the neutral fields make (a notice without `notice_type` gets the entry's, else the wire type).
    private func makeContent(of entry: MappingEntry, wire: String, _ neutral: [String: JSONValue], registry: ContentRegistry) throws -> MessageContent {
        var neutral = neutral
        if case .builtin(.notice) = entry.target, neutral["notice_type"] == nil {
            neutral["notice_type"] = .string(entry.noticeType ?? wire)
        }
        return try NeutralForm.content(entry.target, neutral, registry: registry)
    }

    /// Encodes a content; nil when the vendor has no entry that takes it (the codec falls back).
    /// Throws `invalid_content` when a custom payload is not a JSON object.
    public func encode(_ content: MessageContent) throws -> MappedWire? {
        try encode(content, byName: false)
    }

    /// `encode(_:)`; a built-in content's values are read from it by field number for the entries
    /// that have them compiled (`ContentFields`), not from `NeutralForm.fields(of:)`'s dictionary
    /// (which `byName` uses throughout, the reference path the tests compare with).
    func encode(_ content: MessageContent, byName: Bool) throws -> MappedWire? {
        let target = NeutralForm.target(of: content)
        var candidates = encoders(for: target)
        guard !candidates.isEmpty else { return nil }
        // A built-in content always has neutral fields; only a custom one's may not be an object.
        var named: [String: JSONValue]?
        if byName || target.isCustom {
            guard let fields = NeutralForm.fields(of: content) else {
                throw IMError(.invalidContent, "\(target) content must be a JSON object to use the \(vendor) mapping")
            }
            named = fields
        }
        if case .notice(let notice) = content, let type = notice.noticeType,
           let preferred = candidates.firstIndex(where: { $0.wire.matches(type) || $0.noticeType == type }) {
            candidates.insert(candidates.remove(at: preferred), at: 0)
        }
        let noticeType = content.notice?.noticeType
        for entry in candidates {
            if named == nil, let compiled = entry.compiled {
                if let body = encode(ContentFields(content: content, compiled: compiled), entry: entry, noticeType: noticeType) { return body }
                continue
            }
            if named == nil { named = NeutralForm.fields(of: content) ?? [:] }
            if let body = encode(named!, entry: entry, noticeType: noticeType) { return body }
        }
        return nil
    }

    /// Encodes a content through the entry of wire type `wire` (a `secondary` one included) when that
    /// entry takes the content, over `base` (the body the content was read from, see
    /// `encode(_:base:)`; a key `base` lacks is added only with a value that says something — not
    /// `""`, not `0`, which another vendor's defaults produce); nil when no entry of that wire type
    /// takes it (the caller encodes as usual).
    public func encode(_ content: MessageContent, throughWire wire: String, base: [String: JSONValue]) throws -> MappedWire? {
        try encode(content, throughWire: wire, base: base, byName: false)
    }

    func encode(_ content: MessageContent, throughWire wire: String, base: [String: JSONValue], byName: Bool) throws -> MappedWire? {
        let target = NeutralForm.target(of: content)
        let candidates = (byTarget[target] ?? []).filter { !$0.decodeOnly && $0.wire.matches(wire) }
        guard !candidates.isEmpty, let fields = NeutralForm.fields(of: content) else { return nil }
        for entry in candidates {
            let written = byName || entry.compiled == nil
                ? encode(fields, entry: entry, noticeType: content.notice?.noticeType)
                : encode(ContentFields(content: content, compiled: entry.compiled!), entry: entry, noticeType: content.notice?.noticeType)
            guard var mapped = written else { continue }
            if !base.isEmpty {
                // Another vendor's placeholders (an empty title, a zero size) add no key the body lacked.
                let body = mapped.body.filter { key, value in base[key] != nil || !(value == .string("") || value == .int(0)) }
                mapped = MappedWire(entry: mapped.entry, wireType: mapped.wireType, body: body)
            }
            return Self.overlaid(mapped, base: base)
        }
        return nil
    }

    /// Encodes a content over `base`, the body it was decoded from: keys the mapping does not write
    /// stay, a value the content did not change keeps its original spelling (an alias key such as
    /// `lable`, `16` rather than `16.0`), so a same-vendor round trip writes the body it read.
    public func encode(_ content: MessageContent, base: [String: JSONValue]) throws -> MappedWire? {
        guard let mapped = try encode(content) else { return nil }
        return Self.overlaid(mapped, base: base)
    }

    static func overlaid(_ mapped: MappedWire, base: [String: JSONValue]) -> MappedWire {
        guard !base.isEmpty else { return mapped }
        var body = base
        for (key, value) in mapped.body { body[key] = Self.overlay(value, on: base[key]) }
        for key in mapped.entry.constants.keys where base[key] != nil { body[key] = base[key] }
        for rule in mapped.entry.fields where !rule.aliases.isEmpty && rule.wire.count == 1 && base[rule.wire[0]] == nil {
            guard let written = body[rule.wire[0]],
                  let alias = rule.aliases.first(where: { $0.count == 1 && base[$0[0]].map { Self.same($0, written) } == true }) else { continue }
            body[rule.wire[0]] = nil
            body[alias[0]] = base[alias[0]]
        }
        return MappedWire(entry: mapped.entry, wireType: mapped.wireType, body: body)
    }

    /// The rule's neutral value, or else the first of its `or` fields that has one (no allocation).
    static func value(of rule: FieldRule, in fields: [String: JSONValue]) -> JSONValue? {
        if let value = fields[rule.neutral], value != .null { return value }
        for other in rule.or { if let value = fields[other], value != .null { return value } }
        return nil
    }

    /// Whether any entry may decode this wire type.
    public func knows(wire: String) -> Bool {
        byWire[wire] != nil || ranged.contains { $0.wire.matches(wire) }
    }

    static func overlay(_ value: JSONValue, on original: JSONValue?) -> JSONValue {
        guard let original else { return value }
        if case .object(let new) = value, case .object(let old) = original {
            var merged = old
            for (key, nested) in new { merged[key] = overlay(nested, on: old[key]) }
            return .object(merged)
        }
        return same(value, original) ? original : value
    }

    /// Whether a written value says what the original did: equal, the same number spelled `16` or
    /// `16.0`, or an integer field's value read from a fractional number (the WuKongIM custom-message guide writes a CGFloat
    /// width such as `426.5`; the neutral width 427 came from it, so the original spelling stays).
    static func same(_ a: JSONValue, _ b: JSONValue) -> Bool {
        if a == b { return true }
        switch (a, b) {
        case (.int(let whole), .double(let number)), (.double(let number), .int(let whole)):
            return Double(whole) == number || Int64(exactly: number.rounded()) == whole
        case (.double, .double): return a.doubleValue == b.doubleValue
        default: return false
        }
    }

    func encode(_ fields: [String: JSONValue], entry: MappingEntry, noticeType: String?) -> MappedWire? {
        encode(NamedRuleValues(fields: fields), entry: entry, noticeType: noticeType)
    }

    func encode<Values: RuleValues>(_ fields: Values, entry: MappingEntry, noticeType: String?) -> MappedWire? {
        // Room for the discriminators, constants and the keys the codecs add (a type, mentions) too.
        var object = [String: JSONValue].withCapacity(entry.fields.count + entry.when.count + entry.constants.count + 2)
        for (index, rule) in entry.fields.enumerated() {
            if let value = fields.value(of: rule, at: index) {
                if let wire = rule.transform.encode(value) {
                    MappingEntry.put(wire, at: rule.wire, in: &object)
                    continue
                }
                // A value the transform cannot take: a required field rules the entry out (an HTTP URL
                // is not inline AMR); an optional one is left out, or written as its encode default.
                if rule.required { return nil }
                if let fallback = rule.encodeDefault { MappingEntry.put(fallback, at: rule.wire, in: &object) }
            } else if let fallback = rule.encodeDefault {
                MappingEntry.put(fallback, at: rule.wire, in: &object)
            }
        }
        var body = object
        if let dataKey = entry.dataKey { body = [dataKey: .object(object)] }
        for (key, value) in entry.constants where body[key] == nil { body[key] = value }
        for (key, value) in entry.when { body[key] = value }
        var wireType = entry.encodeWire
        if case .range = entry.wire, let noticeType, entry.wire.matches(noticeType) { wireType = noticeType }
        return MappedWire(entry: entry, wireType: wireType, body: body)
    }
}

/// A content's neutral values as an encoding reads them, per rule of an entry: the rule's field, else
/// the first of its `or` fields that has a value (`null` counts as none).
protocol RuleValues {
    func value(of rule: FieldRule, at index: Int) -> JSONValue?
}

/// The values in `NeutralForm.fields(of:)`'s dictionary, by name.
struct NamedRuleValues: RuleValues {
    let fields: [String: JSONValue]
    func value(of rule: FieldRule, at index: Int) -> JSONValue? { VendorTable.value(of: rule, in: fields) }
}

/// The values read from a built-in content by the entry's compiled field numbers (no dictionary).
struct ContentFields: RuleValues {
    let content: MessageContent
    let compiled: MappingEntry.CompiledFields
    func value(of rule: FieldRule, at index: Int) -> JSONValue? {
        if let value = NeutralForm.value(compiled.keys[index], of: content), value != .null { return value }
        for other in compiled.or[index] {
            if let value = NeutralForm.value(other, of: content), value != .null { return value }
        }
        return nil
    }
}

/// The values an entry decoded, one per rule (on the stack), read by field number.
struct RuleFields: NeutralFields {
    let values: UnsafeBufferPointer<JSONValue?>
    let compiled: MappingEntry.CompiledFields
    /// A notice's `notice_type` when no rule gave one (the entry's, else the wire type).
    var noticeType: JSONValue?
    subscript(key: NeutralKey) -> JSONValue? {
        if key == .noticeType, let noticeType { return noticeType }
        let index = compiled.rule[key.rawValue]
        guard index >= 0 else { return nil }
        return values[Int(index)]
    }
}

extension ContentKind {
    /// The kind's position in `allCases` (without searching it).
    var position: Int {
        switch self {
        case .text: 0
        case .image: 1
        case .gif: 2
        case .voice: 3
        case .video: 4
        case .file: 5
        case .location: 6
        case .card: 7
        case .command: 8
        case .notice: 9
        case .custom: 10
        case .unsupported: 11
        }
    }
}

extension NeutralTarget {
    var isCustom: Bool {
        if case .custom = self { return true }
        return false
    }
}

extension MessageContent {
    var notice: NoticeContent? {
        if case .notice(let notice) = self { return notice }
        return nil
    }
}
