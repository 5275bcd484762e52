import IMCore

/// The `option` JSON of `/msg/sendMsg.action` (docs/adapters/nim.md). A nil flag is left out of the JSON and
/// takes the vendor's default (all of them default to `true`).
public struct NIMSendOption: Hashable, Sendable {
    public var roam: Bool?
    public var history: Bool?
    public var sendersync: Bool?
    public var push: Bool?
    public var route: Bool?
    public var badge: Bool?
    public var needPushNick: Bool?
    public var persistent: Bool?
    public var sessionUpdate: Bool?

    public init(roam: Bool? = nil, history: Bool? = nil, sendersync: Bool? = nil, push: Bool? = nil, route: Bool? = nil,
                badge: Bool? = nil, needPushNick: Bool? = nil, persistent: Bool? = nil, sessionUpdate: Bool? = nil) {
        self.roam = roam
        self.history = history
        self.sendersync = sendersync
        self.push = push
        self.route = route
        self.badge = badge
        self.needPushNick = needPushNick
        self.persistent = persistent
        self.sessionUpdate = sessionUpdate
    }

    static let keys = ["roam", "history", "sendersync", "push", "route", "badge", "needPushNick", "persistent", "sessionUpdate"]

    private var pairs: [(String, Bool?)] {
        [("roam", roam), ("history", history), ("sendersync", sendersync), ("push", push), ("route", route),
         ("badge", badge), ("needPushNick", needPushNick), ("persistent", persistent), ("sessionUpdate", sessionUpdate)]
    }

    public var isEmpty: Bool { pairs.allSatisfy { $0.1 == nil } }

    /// The JSON text sent as `option` (keys sorted, only the flags that are set).
    public var json: String {
        var object: [String: JSONValue] = [:]
        for (key, value) in pairs { if let value { object[key] = .bool(value) } }
        return JSONValue.object(object).jsonString()
    }

    /// The neutral options these flags say (the inverse of `NIMMessageCodec.sendForm`'s mapping):
    /// `history` false → not persisted, `badge` false → not counted unread, `push` false → no push.
    public var messageOptions: MessageOptions {
        MessageOptions(persist: history ?? true, countUnread: badge ?? true, push: push ?? true)
    }

    /// The flags the neutral options have no place for (`sendersync`, `route`, `needPushNick`,
    /// `sessionUpdate`), as the JSON object `NIMMessageCodec` keeps in `vendorExtras` under `nim_option`.
    public var unmappedFlags: [String: JSONValue] {
        var object: [String: JSONValue] = [:]
        for (key, value) in [("sendersync", sendersync), ("route", route), ("needPushNick", needPushNick), ("sessionUpdate", sessionUpdate)] {
            if let value { object[key] = .bool(value) }
        }
        return object
    }

    /// Parses an `option` JSON object leniently (booleans as `true`/`"true"`/`1`); unknown keys are ignored,
    /// keys match case-insensitively.
    public init(parsing json: JSONValue) {
        self.init()
        guard let object = json.objectValue else { return }
        func flag(_ key: String) -> Bool? {
            guard let value = object.first(where: { $0.key.lowercased() == key.lowercased() })?.value else { return nil }
            return NIMLenient.bool(value)
        }
        roam = flag("roam"); history = flag("history"); sendersync = flag("sendersync"); push = flag("push")
        route = flag("route"); badge = flag("badge"); needPushNick = flag("needPushNick")
        persistent = flag("persistent"); sessionUpdate = flag("sessionUpdate")
    }
}

/// The form of `POST /msg/sendMsg.action` (docs/adapters/nim.md), with the doc-table field spellings.
public struct NIMSendMessageForm: Hashable, Sendable {
    public var from: String
    public var ope: Int
    public var to: String
    public var type: Int
    /// The JSON string for the type (docs/adapters/nim.md), at most 5000 characters.
    public var body: String
    public var option: NIMSendOption
    public var pushcontent: String?
    public var payload: String?
    public var ext: String?
    public var msgDesc: String?
    /// Team only: JSON array of accids to force-push (the @ list).
    public var forcepushlist: [String]?
    public var forcepushcontent: String?
    public var forcepushall: Bool?

    public init(from: String, ope: Int, to: String, type: Int, body: String, option: NIMSendOption = NIMSendOption(),
                pushcontent: String? = nil, payload: String? = nil, ext: String? = nil, msgDesc: String? = nil,
                forcepushlist: [String]? = nil, forcepushcontent: String? = nil, forcepushall: Bool? = nil) {
        self.from = from
        self.ope = ope
        self.to = to
        self.type = type
        self.body = body
        self.option = option
        self.pushcontent = pushcontent
        self.payload = payload
        self.ext = ext
        self.msgDesc = msgDesc
        self.forcepushlist = forcepushlist
        self.forcepushcontent = forcepushcontent
        self.forcepushall = forcepushall
    }

    /// The form fields in a stable order; booleans as `true`/`false`, lists as JSON-array strings.
    public var fields: [(String, String)] {
        var fields: [(String, String)] = [("from", from), ("ope", String(ope)), ("to", to), ("type", String(type)), ("body", body)]
        if !option.isEmpty { fields.append(("option", option.json)) }
        if let pushcontent { fields.append(("pushcontent", pushcontent)) }
        if let payload { fields.append(("payload", payload)) }
        if let ext { fields.append(("ext", ext)) }
        if let msgDesc { fields.append(("msgDesc", msgDesc)) }
        if let forcepushlist {
            fields.append(("forcepushlist", JSONValue.array(forcepushlist.map { .string($0) }).jsonString()))
        }
        if let forcepushcontent { fields.append(("forcepushcontent", forcepushcontent)) }
        if let forcepushall { fields.append(("forcepushall", forcepushall ? "true" : "false")) }
        return fields
    }
}

/// `data` of a successful sendMsg: `{"msgid":<long>,"timetag":<ms>,"antispam":<bool>}`.
public struct NIMSendResult: Hashable, Sendable {
    public var msgid: Int64
    public var timetag: Int64
    public var antispam: Bool
    public init(msgid: Int64, timetag: Int64, antispam: Bool = false) {
        self.msgid = msgid
        self.timetag = timetag
        self.antispam = antispam
    }
}

/// Lenient scalar reading for NIM's "strings or numbers" payloads.
public enum NIMLenient {
    public static func bool(_ value: JSONValue) -> Bool? {
        switch value {
        case .bool(let flag): return flag
        case .int(let number): return number != 0
        case .string(let text):
            switch text.lowercased() {
            case "true", "1", "yes": return true
            case "false", "0", "no": return false
            default: return nil
            }
        default: return nil
        }
    }

    public static func bool(_ text: String?) -> Bool? { text.flatMap { bool(.string($0)) } }

    /// A string from a string or number value.
    public static func string(_ value: JSONValue?) -> String? {
        guard let value, value != .null else { return nil }
        return value.stringValue
    }
}
