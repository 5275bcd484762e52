import Foundation
import IMAdapterKit
import IMCore
import IMMapping
import IMVendors

/// One vendor's content codec as the registry builds it, with the call shape the fidelity tests use:
/// a wire type + body in, neutral content and the kept `vendorExtras` out, and back.
struct VendorCodec {
    typealias Kept = [String: JSONValue]
    let vendor: String
    let table: VendorTable
    let codec: any ContentCodec

    static func all(_ set: MappingSet = .shipped) -> [String: VendorCodec] {
        Dictionary(uniqueKeysWithValues: Vendors.names.map { ($0, make($0, set)) })
    }

    static func make(_ vendor: String, _ set: MappingSet = .shipped) -> VendorCodec {
        let table = set.table(vendor)
        return VendorCodec(vendor: vendor, table: table, codec: Vendors.named(vendor)!.adapter.contentCodec(ContentRegistry(), table))
    }

    func decode(_ wire: String, _ body: [String: JSONValue]) throws -> (MessageContent, Kept) {
        let coded = try codec.decode(WireContent(type: wire, body: body))
        return (coded.content, coded.vendorExtras)
    }

    func encode(_ content: MessageContent, _ kept: Kept?) throws -> (wire: String, body: [String: JSONValue]) {
        let wire = try codec.encode(CodedContent(content, vendorExtras: kept ?? [:]))
        return (wire.type, wire.body)
    }
}

/// Wire bodies built from a mapping entry: a sample value for every field, through the field's transform.
enum Samples {
    static func neutral(_ rule: FieldRule, vendor: String) -> JSONValue {
        if case .dataURL(let mime) = rule.transform { return .string("data:\(mime);base64,IyFBTVIKPJEXFr5meeHgAeev8AAAAIAAAAAA") }
        switch rule.neutral {
        case "url", "cover_url", "image": return .string("https://media.example/\(vendor)/\(rule.neutral)")
        case "latitude": return .double(30.25)
        case "longitude": return .double(120.5)
        case "duration_ms": return .int(3000)
        case "amount_cents": return .int(1250)
        case "name", "file_name": return .string("report.pdf")
        case "checksum": return .string("305419896")
        case "template": return .string("{0} 加入了群聊")
        case "parameters": return .array([["name": "alice"]])
        case "data": return ["k": "v"]
        default: break
        }
        switch rule.type {
        case .int: return .int(Int64(100 + rule.neutral.count))
        case .double: return .double(1.5)
        case .bool: return .bool(true)
        case .json: return ["sample": .string(rule.neutral)]
        case .string: return .string("\(rule.neutral)-\(vendor)")
        }
    }

    /// Keys an adapter owns beside the table (file extension, media format), set as a vendor app would.
    static func adapterKeys(_ entry: MappingEntry) -> [String: JSONValue] {
        if entry.wire == .exact("RC:ReferenceMsg") {
            return ["referMsgUid": "MSG-1", "referMsgUserId": "bob", "objName": "RC:TxtMsg", "referMsg": ["content": "quoted"]]
        }
        guard case .builtin(let kind) = entry.target, entry.when.isEmpty else { return [:] }
        switch (entry.vendor, kind) {
        case ("nim", .image): return ["ext": "jpg"]
        case ("nim", .voice): return ["ext": "aac"]
        case ("nim", .video): return ["ext": "mp4"]
        case ("nim", .file): return ["ext": "pdf"]
        case ("jmessage", .image): return ["format": "jpg"]
        case ("jmessage", .voice): return ["format": "amr"]
        default: return [:]
        }
    }

    static func wire(_ entry: MappingEntry) -> (wire: String, body: [String: JSONValue], neutral: [String: JSONValue]) {
        var object: [String: JSONValue] = [:]
        var neutral: [String: JSONValue] = [:]
        for rule in entry.fields {
            let value = Self.neutral(rule, vendor: entry.vendor)
            neutral[rule.neutral] = value
            guard let wire = rule.transform.encode(value) else { continue }
            var path = rule.wire
            var target = object
            put(wire, at: &path, in: &target)
            object = target
        }
        var body = object
        if let dataKey = entry.dataKey { body = [dataKey: .object(object)] }
        for (key, value) in entry.constants { body[key] = value }
        for (key, value) in entry.when { body[key] = value }
        for (key, value) in adapterKeys(entry) { body[key] = value }
        if entry.vendor == "jmessage", case .object(var thumb)? = body["thumb"] {
            thumb["format"] = "jpg"     // the cover's format, which the adapter writes
            body["thumb"] = .object(thumb)
        }
        return (entry.encodeWire, body, neutral)
    }

    static func put(_ value: JSONValue, at path: inout [String], in object: inout [String: JSONValue]) {
        let first = path.removeFirst()
        if path.isEmpty { object[first] = value; return }
        var nested = object[first]?.objectValue ?? [:]
        put(value, at: &path, in: &nested)
        object[first] = .object(nested)
    }
}
