import Foundation
import IMCore
import IMConfig

/// Reads mapping files into compiled tables, collecting every problem with its file and line.
///
/// Problems it reports: YAML syntax; unknown keys; an unknown vendor, kind, neutral field, transform or
/// template filter; a wire type written twice for one vendor (same discriminators); a wire key used by
/// two fields of one entry (or by a field and a discriminator); a custom type declared twice; a custom
/// representation without discriminator or required field on a carrier type another type also uses.
enum MappingLoader {
    static func files(in directory: URL) throws -> [(String, URL)] {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        guard manager.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw MappingProblems(problems: ["\(directory.path): not a directory"])
        }
        var result: [(String, URL)] = []
        for name in try manager.contentsOfDirectory(atPath: directory.path) where name.hasSuffix(".yaml") || name.hasSuffix(".yml") {
            result.append((name, directory.appendingPathComponent(name)))
        }
        let custom = directory.appendingPathComponent("custom")
        if manager.fileExists(atPath: custom.path) {
            for name in try manager.contentsOfDirectory(atPath: custom.path) where name.hasSuffix(".yaml") || name.hasSuffix(".yml") {
                result.append(("custom/\(name)", custom.appendingPathComponent(name)))
            }
        }
        return result
    }

    /// Vendor tables in vendor order, then custom files by name.
    static func loadOrder(_ a: String, _ b: String) -> Bool {
        func rank(_ path: String) -> (Int, String) {
            let stem = path.split(separator: ".").first.map(String.init) ?? path
            if let index = MappingSet.vendors.firstIndex(of: stem) { return (index, path) }
            return (path.hasPrefix("custom/") ? 10 : 5, path)
        }
        return rank(a) < rank(b)
    }

    /// Compiles parsed files. `inputs` are (display name, relative path, text) in load order.
    static func compile(_ inputs: [(name: String, relative: String, text: String)]) throws -> MappingSet {
        var problems: [String] = []
        var entries: [String: [MappingEntry]] = [:]
        var customTypes: [String: CustomTypeMapping] = [:]
        for input in inputs {
            do {
                let root = try ConfigNode.parse(input.text, file: input.name, environment: [:])
                if input.relative.hasPrefix("custom/") {
                    let (type, typeEntries) = try parseCustom(root, problems: &problems)
                    if let existing = customTypes[type.name] {
                        problems.append("\(type.source): custom type '\(type.name)' is already declared in \(existing.source)")
                        continue
                    }
                    customTypes[type.name] = type
                    for entry in typeEntries { entries[entry.vendor, default: []].append(entry) }
                } else {
                    for entry in try parseVendorFile(root, relative: input.relative, problems: &problems) {
                        entries[entry.vendor, default: []].append(entry)
                    }
                }
            } catch {
                problems.append(message(error))
            }
        }
        for vendor in MappingSet.vendors { checkDuplicates(entries[vendor] ?? [], problems: &problems) }
        guard problems.isEmpty else { throw MappingProblems(problems: problems) }
        var tables: [String: VendorTable] = [:]
        for vendor in MappingSet.vendors { tables[vendor] = VendorTable(vendor: vendor, entries: entries[vendor] ?? []) }
        return MappingSet(tables: tables, customTypes: customTypes, files: inputs.map(\.name))
    }

    static func message(_ error: any Error) -> String {
        if let error = error as? IMError { return error.message }
        return "\(error)"
    }

    // MARK: vendor files

    static func parseVendorFile(_ root: ConfigNode, relative: String, problems: inout [String]) throws -> [MappingEntry] {
        try root.allowOnly(["vendor", "types"])
        let vendor = try root["vendor"].scalar()
        guard MappingSet.vendors.contains(vendor) else {
            throw root["vendor"].error("unknown vendor '\(vendor)' (expected one of: \(MappingSet.vendors.joined(separator: ", ")))")
        }
        let stem = relative.split(separator: ".").first.map(String.init) ?? relative
        if stem != vendor { throw root["vendor"].error("file \(relative) must describe vendor '\(stem)', not '\(vendor)'") }
        var result: [MappingEntry] = []
        for item in try root["types"].list() {
            do {
                let kindName = try item["kind"].scalar()
                guard let kind = ContentKind(rawValue: kindName), NeutralForm.vocabulary(kind) != nil else {
                    let known = ContentKind.allCases.filter { NeutralForm.vocabulary($0) != nil }.map(\.rawValue)
                    throw item["kind"].error("unknown kind '\(kindName)' (expected one of: \(known.joined(separator: ", ")))")
                }
                result.append(try parseEntry(item, vendor: vendor, target: .builtin(kind), vocabulary: NeutralForm.vocabulary(kind)!,
                                             required: [], customFile: nil, allowKind: true))
            } catch {
                problems.append(message(error))
            }
        }
        return result
    }

    static func parseEntry(_ node: ConfigNode, vendor: String, target: NeutralTarget, vocabulary: [String: NeutralType],
                           required: Set<String>, customFile: String?, allowKind: Bool) throws -> MappingEntry {
        var allowed: Set<String> = ["wire", "encode_as", "when", "set", "data", "fields", "decode_only", "secondary", "notice_type", "digest"]
        if allowKind { allowed.insert("kind") }
        try node.allowOnly(allowed)
        let wireText = try node["wire"].scalar()
        let wire: WireSelector
        var encodeWire = wireText
        let bounds = wireText.split(separator: "-", omittingEmptySubsequences: false)
        if bounds.count == 2, let low = Int(bounds[0]), let high = Int(bounds[1]) {
            guard low <= high else { throw node["wire"].error("range \(wireText) is empty") }
            wire = .range(low...high)
            encodeWire = try node["encode_as"].optionalScalar() ?? String(low)
            guard let value = Int(encodeWire), (low...high).contains(value) else {
                throw node["encode_as"].error("encode_as \(encodeWire) is not inside \(wireText)")
            }
        } else {
            if node["encode_as"].isPresent { throw node["encode_as"].error("encode_as only applies to a wire range such as 1000-2000") }
            wire = .exact(wireText)
        }
        var when: [String: JSONValue] = [:]
        if node["when"].isPresent {
            for (key, value) in try node["when"].entries() { when[key] = try jsonScalar(value) }
        }
        var constants: [String: JSONValue] = [:]
        if node["set"].isPresent {
            for (key, value) in try node["set"].entries() { constants[key] = try jsonScalar(value) }
        }
        let dataKey = try node["data"].optionalScalar()
        var rules: [FieldRule] = []
        var wireKeys: [String: String] = [:]
        for key in when.keys where dataKey == nil { wireKeys[key] = "when" }
        for (neutral, spec) in try node["fields"].entries() {
            guard let type = vocabulary[neutral] else {
                throw spec.error("'\(neutral)' is not a field of \(target) (fields: \(vocabulary.keys.sorted().joined(separator: ", ")))")
            }
            let rule = try parseField(spec, neutral: neutral, type: type, required: required.contains(neutral))
            for other in rule.or where vocabulary[other] == nil {
                throw spec["or"].error("'\(other)' is not a field of \(target)")
            }
            for path in [rule.wire] + rule.aliases {
                let name = path.joined(separator: ".")
                if let other = wireKeys[name] {
                    throw spec.error("wire field '\(name)' is mapped twice (also by \(other == "when" ? "the `when` discriminator" : "'\(other)'"))")
                }
                wireKeys[name] = neutral
            }
            rules.append(rule)
        }
        let digest = try node["digest"].optionalScalar().map { text in
            do { return try Template(text, validField: { vocabulary[$0] != nil }) } catch let error as TemplateError {
                throw node["digest"].error(error.message)
            }
        }
        if case .builtin(let kind) = target, kind != .notice, node["notice_type"].isPresent {
            throw node["notice_type"].error("notice_type only applies to kind notice")
        }
        return MappingEntry(vendor: vendor, wire: wire, encodeWire: encodeWire, when: when, constants: constants, dataKey: dataKey, target: target,
                            fields: rules, decodeOnly: node["decode_only"].isPresent ? try node["decode_only"].bool() : false,
                            secondary: node["secondary"].isPresent ? try node["secondary"].bool() : false,
                            noticeType: try node["notice_type"].optionalScalar(), digest: digest, customFile: customFile,
                            source: MappingSource(file: node.file, line: node.line))
    }

    static func parseField(_ spec: ConfigNode, neutral: String, type: NeutralType, required: Bool) throws -> FieldRule {
        func path(_ text: String, _ node: ConfigNode) throws -> [String] {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard !parts.contains(where: \.isEmpty) else { throw node.error("wire field '\(text)' has an empty part") }
            return parts
        }
        if spec.isScalar {
            return FieldRule(neutral: neutral, wire: try path(try spec.scalar(), spec), aliases: [], transform: .none, type: type,
                             decodeDefault: nil, encodeDefault: nil, required: required, or: [])
        }
        try spec.allowOnly(["wire", "aliases", "transform", "default", "encode_default", "required", "or"])
        let wire = try path(try spec["wire"].scalar(), spec["wire"])
        var aliases: [[String]] = []
        if spec["aliases"].isPresent {
            for alias in try spec["aliases"].list() { aliases.append(try path(try alias.scalar(), alias)) }
        }
        var transform = Transform.none
        if let name = try spec["transform"].optionalScalar() {
            guard let known = Transform(name: name) else {
                throw spec["transform"].error("unknown transform '\(name)' (known: \(Transform.names.joined(separator: ", ")))")
            }
            transform = known
        }
        var decodeDefault: JSONValue?
        if spec["default"].isPresent {
            guard let value = type.coerce(try jsonScalar(spec["default"])) else {
                throw spec["default"].error("default is not a \(type.rawValue)")
            }
            decodeDefault = value
        }
        let encodeDefault: JSONValue? = spec["encode_default"].isPresent ? try jsonScalar(spec["encode_default"]) : Optional<JSONValue>.none
        let isRequired = spec["required"].isPresent ? try spec["required"].bool() : required
        var or: [String] = []
        if spec["or"].isPresent {
            or = spec["or"].isSequence ? try spec["or"].list().map { try $0.scalar() } : [try spec["or"].scalar()]
        }
        return FieldRule(neutral: neutral, wire: wire, aliases: aliases, transform: transform, type: type,
                         decodeDefault: decodeDefault, encodeDefault: encodeDefault, required: isRequired, or: or)
    }

    /// A YAML scalar as JSON: plain numbers, booleans and null by their YAML meaning; quoted text stays text.
    static func jsonScalar(_ node: ConfigNode) throws -> JSONValue {
        let text = try node.scalar()
        guard node.isPlainScalar else { return .string(text) }
        if let number = Int64(text) { return .int(number) }
        if let number = Double(text), text.contains(".") { return .double(number) }
        switch text {
        case "true": return .bool(true)
        case "false": return .bool(false)
        case "null", "~": return .null
        default: return .string(text)
        }
    }

    // MARK: duplicates

    static func checkDuplicates(_ entries: [MappingEntry], problems: inout [String]) {
        var seen: [String: MappingEntry] = [:]
        var ranges: [MappingEntry] = []
        for entry in entries {
            let discriminators = entry.when.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.jsonString())" }.joined(separator: ",")
            let key = "\(entry.wire)|\(discriminators)"
            if let other = seen[key] {
                problems.append("\(entry.source): \(entry.vendor) wire type \(entry.label) is already mapped at \(other.source) (duplicate wire type)")
            } else {
                seen[key] = entry
            }
            if case .range(let range) = entry.wire {
                for other in ranges { if case .range(let r) = other.wire, r.overlaps(range), other.when == entry.when {
                    problems.append("\(entry.source): \(entry.vendor) range \(entry.wire) overlaps \(other.wire) at \(other.source) (duplicate wire type)")
                } }
                ranges.append(entry)
            }
        }
        for entry in entries {
            guard case .exact(let value) = entry.wire, let number = Int(value) else { continue }
            for range in ranges where range.wire.matches(String(number)) && range.when == entry.when {
                problems.append("\(entry.source): \(entry.vendor) wire type \(value) lies inside the range \(range.wire) mapped at \(range.source) (duplicate wire type)")
            }
        }
    }
}
