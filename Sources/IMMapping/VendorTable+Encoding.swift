import Foundation
import IMCore

/// Encoding: a neutral content through the first entry that takes it, alone or over the body it was read from.
extension VendorTable {
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
        let candidates = entries(for: target).filter { !$0.decodeOnly && $0.wire.matches(wire) }
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
