import Foundation
import IMCore

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
