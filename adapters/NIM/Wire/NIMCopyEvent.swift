import IMCore

/// One message-copy (消息抄送) callback body (docs/adapters/nim.md). NIM documents every value as a
/// string but has been seen sending numbers, and prints `attach` both as a JSON string and as an
/// object: every accessor here is lenient. Keys match case-insensitively; the original object is kept
/// in `fields` so nothing is dropped.
public struct NIMCopyEvent: Hashable, Sendable {
    public var fields: [String: JSONValue]
    private var lowered: [String: JSONValue]

    public init(fields: [String: JSONValue]) {
        self.fields = fields
        var lowered: [String: JSONValue] = [:]
        for (key, value) in fields { lowered[key.lowercased()] = value }
        self.lowered = lowered
    }

    /// Parses a callback body; throws `malformed_payload` unless it is a JSON object.
    public init(json data: [UInt8]) throws {
        guard let object = try JSONValue.parse(String(decoding: data, as: UTF8.self)).objectValue else {
            throw IMError(.malformedPayload, "copy callback body is not a JSON object")
        }
        self.init(fields: object)
    }

    public subscript(key: String) -> JSONValue? { lowered[key.lowercased()] }

    /// A scalar as text (string or number); nil when absent or null.
    public func string(_ key: String) -> String? { NIMLenient.string(self[key]) }
    public func int(_ key: String) -> Int64? { self[key]?.int64Value }

    /// A value that may be a JSON string or an inline object, as text (objects serialised with sorted keys).
    public func text(_ key: String) -> String? {
        switch self[key] {
        case .none, .null: nil
        case .string(let text): text
        case .some(let other): other.jsonString()
        }
    }

    public var eventType: Int? { int("eventType").map { Int($0) } }

    // MARK: eventType 1 (conversation message)
    public var convType: String? { string("convType")?.uppercased() }
    public var to: String? { string("to") }
    public var fromAccount: String? { string("fromAccount") }
    public var msgType: String? { string("msgType")?.uppercased() }
    public var body: String? { text("body") }
    public var attach: String? { text("attach") }
    public var msgTimestamp: Int64? { int("msgTimestamp") }
    public var msgidClient: String? { string("msgidClient") }
    public var msgidServer: String? { string("msgidServer") }
    public var ext: String? { text("ext") }

    // MARK: eventType 7/8/25 (recall)
    public var msgId: String? { string("msgId") }
    public var clientId: String? { string("clientId") }
    public var from: String? { string("from") }
    public var deleteTime: Int64? { int("deleteTime") }
    public var sendTime: Int64? { int("sendTime") }
    public var selfMsg: String? { string("selfMsg") }

    /// The raw JSON bytes the sandbox posts (sorted keys; every scalar a string, as the doc shows).
    public var jsonData: [UInt8] { Array(JSONValue.object(fields).jsonData()) }
}
