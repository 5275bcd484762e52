import IMCore

/// One entry of `msgs` in `/history/querySessionMsg.action` and `/history/queryTeamMsg.action`
/// (docs/adapters/nim.md): `from`, `msgid`, `msgidclient`, `sendtime`, `type`, `fromclienttype`, `body`
/// (a JSON object **or** a JSON string), plus optional `ext`. Keys are read case-insensitively and
/// scalars leniently; keys this type does not name are kept in `others`.
public struct NIMHistoryMessage: Hashable, Sendable {
    public var from: String
    public var msgid: Int64
    public var msgidclient: String?
    public var sendtime: Int64
    public var type: Int
    public var fromclienttype: Int?
    /// The body as text: a string value as is, an object value serialised (sorted keys).
    public var body: String
    public var ext: String?
    public var others: [String: JSONValue]

    public init(from: String, msgid: Int64, msgidclient: String? = nil, sendtime: Int64, type: Int,
                fromclienttype: Int? = nil, body: String, ext: String? = nil, others: [String: JSONValue] = [:]) {
        self.from = from
        self.msgid = msgid
        self.msgidclient = msgidclient
        self.sendtime = sendtime
        self.type = type
        self.fromclienttype = fromclienttype
        self.body = body
        self.ext = ext
        self.others = others
    }

    static let known: Set<String> = ["from", "msgid", "msgidclient", "sendtime", "type", "fromclienttype", "body", "ext"]

    /// Reads one history entry; throws `malformed_payload` when `from`, `msgid`, `sendtime` or `type` is missing.
    public init(json: JSONValue) throws {
        guard let object = json.objectValue else { throw IMError(.malformedPayload, "history entry is not an object") }
        var lower: [String: JSONValue] = [:]
        for (key, value) in object { lower[key.lowercased()] = value }
        guard let from = NIMLenient.string(lower["from"]), let msgid = lower["msgid"]?.int64Value,
              let sendtime = lower["sendtime"]?.int64Value, let type = lower["type"]?.int64Value else {
            throw IMError(.malformedPayload, "history entry lacks from/msgid/sendtime/type: \(json.jsonString().prefix(200))")
        }
        self.init(from: from, msgid: msgid, msgidclient: NIMLenient.string(lower["msgidclient"]), sendtime: sendtime,
                  type: Int(type), fromclienttype: lower["fromclienttype"]?.int64Value.map { Int($0) },
                  body: Self.text(of: lower["body"]), ext: lower["ext"].flatMap { $0 == .null ? nil : Self.text(of: $0) },
                  others: object.filter { !Self.known.contains($0.key.lowercased()) })
    }

    /// The JSON the sandbox answers with; `body` is always the original string, so custom payloads keep
    /// their bytes (NIM may also answer with an object, which `init(json:)` accepts).
    public var json: JSONValue {
        var object = others
        object["from"] = .string(from)
        object["msgid"] = .int(msgid)
        if let msgidclient { object["msgidclient"] = .string(msgidclient) }
        object["sendtime"] = .int(sendtime)
        object["type"] = .int(Int64(type))
        if let fromclienttype { object["fromclienttype"] = .int(Int64(fromclienttype)) }
        object["body"] = .string(body)
        if let ext { object["ext"] = .string(ext) }
        return .object(object)
    }

    static func text(of value: JSONValue?) -> String {
        switch value {
        case .string(let text): text
        case .none, .null: ""
        case .some(let other): other.jsonString()
        }
    }
}

/// The form of `POST /msg/recall.action` (docs/adapters/nim.md).
public struct NIMRecallForm: Hashable, Sendable {
    public var deleteMsgid: Int64
    public var timetag: Int64
    /// 7 p2p, 8 team.
    public var type: Int
    public var from: String
    public var to: String
    public var msg: String?
    public var ignoreTime: Bool
    public var attach: String?

    public init(deleteMsgid: Int64, timetag: Int64, type: Int, from: String, to: String, msg: String? = nil,
                ignoreTime: Bool = false, attach: String? = nil) {
        self.deleteMsgid = deleteMsgid
        self.timetag = timetag
        self.type = type
        self.from = from
        self.to = to
        self.msg = msg
        self.ignoreTime = ignoreTime
        self.attach = attach
    }

    public var fields: [(String, String)] {
        var fields = [("deleteMsgid", String(deleteMsgid)), ("timetag", String(timetag)), ("type", String(type)),
                      ("from", from), ("to", to)]
        if let msg { fields.append(("msg", msg)) }
        if ignoreTime { fields.append(("ignoreTime", "1")) }
        if let attach { fields.append(("attach", attach)) }
        return fields
    }
}
