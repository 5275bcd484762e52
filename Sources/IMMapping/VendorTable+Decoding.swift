import Foundation
import IMCore

/// Decoding: a wire body through an entry into a neutral content, the body's unused keys kept.
extension VendorTable {
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
}
