import Foundation
import IMCore
import IMConfig

extension MappingLoader {
    /// Parses `mappings/custom/<name>.yaml`:
    ///
    /// ```yaml
    /// name: order_card            # the neutral custom type name (the registry's contentType)
    /// kind: custom                # or a built-in kind (gif, card) the vendors spell as app types
    /// fields: {order_id: {type: string, required: true}, amount_cents: int}   # custom kind only
    /// digest: "[订单] {title}"
    /// expansion: {status: 待确认}  # expansion keys the type uses, with initial values
    /// fallback: {text: "[订单] {order_id} ¥{amount_cents|yuan}", link: url}
    /// vendors:
    ///   wukong: {wire: 101, fields: {order_id: orderId}}
    /// ```
    static func parseCustom(_ root: ConfigNode, problems: inout [String]) throws -> (CustomTypeMapping, [MappingEntry]) {
        try root.allowOnly(["name", "kind", "fields", "digest", "expansion", "fallback", "vendors"])
        let name = try root["name"].scalar()
        guard !name.isEmpty, !name.contains(where: \.isWhitespace) else { throw root["name"].error("name must be non-empty text without spaces") }
        let kindName = try root["kind"].optionalScalar() ?? "custom"
        guard let kind = ContentKind(rawValue: kindName), kind == .custom || NeutralForm.vocabulary(kind) != nil else {
            throw root["kind"].error("unknown kind '\(kindName)'")
        }
        var vocabulary: [String: NeutralType] = [:]
        var required: Set<String> = []
        let target: NeutralTarget
        if kind == .custom {
            target = .custom(name)
            for (field, spec) in try root["fields"].entries() {
                let typeName: String
                if spec.isScalar {
                    typeName = try spec.scalar()
                } else {
                    try spec.allowOnly(["type", "required"])
                    typeName = try spec["type"].scalar()
                    if spec["required"].isPresent, try spec["required"].bool() { required.insert(field) }
                }
                guard let type = NeutralType(rawValue: typeName) else {
                    throw spec.error("unknown field type '\(typeName)' (known: \(NeutralType.allCases.map(\.rawValue).joined(separator: ", ")))")
                }
                vocabulary[field] = type
            }
        } else {
            if root["fields"].isPresent { throw root["fields"].error("a \(kind.rawValue) type has the built-in fields; declare fields only for kind custom") }
            target = .builtin(kind)
            vocabulary = NeutralForm.vocabulary(kind)!
        }
        func template(_ node: ConfigNode) throws -> Template? {
            guard let text = try node.optionalScalar() else { return nil }
            do { return try Template(text, validField: { vocabulary[$0] != nil }) } catch let error as TemplateError {
                throw node.error(error.message)
            }
        }
        let digest = try template(root["digest"])
        var expansion: [String: String] = [:]
        if root["expansion"].isPresent {
            for (key, value) in try root["expansion"].entries() { expansion[key] = try value.scalar() }
        }
        try root["fallback"].allowOnly(["text", "link"])
        let fallbackText = try template(root["fallback"]["text"])
        let link = try root["fallback"]["link"].optionalScalar()
        if let link, vocabulary[link] == nil { throw root["fallback"]["link"].error("link '\(link)' is not a field of \(name)") }
        var entries: [MappingEntry] = []
        var vendors: [String] = []
        for (vendor, section) in try root["vendors"].entries() {
            guard MappingSet.vendors.contains(vendor) else {
                problems.append(section.error("unknown vendor '\(vendor)' (expected one of: \(MappingSet.vendors.joined(separator: ", ")))").message)
                continue
            }
            do {
                entries.append(try parseEntry(section, vendor: vendor, target: target, vocabulary: vocabulary, required: required,
                                              customFile: name, allowKind: false))
                vendors.append(vendor)
            } catch {
                problems.append(message(error))
            }
        }
        let type = CustomTypeMapping(name: name, target: target, fields: vocabulary, digest: digest, fallbackText: fallbackText,
                                     fallbackLink: link, expansionDefaults: expansion, vendors: vendors,
                                     source: MappingSource(file: root.file, line: root["name"].line))
        return (type, entries)
    }
}
