import IMCore

/// What the adapter keeps in a message's `ext` (the developer extension JSON, fixed once sent) under
/// the key `imbridge`, next to whatever the app put there:
/// `{"imbridge":{"cid":…,"reply":{"msgid","from","digest"},"mentions":{"all","users"}}}`.
///
/// - `cid`: the sender's client message id (NIM v1 sendMsg takes none), so a bridge recognises its echo;
/// - `reply`: the quoted message (NIM v1 has no reply field: `replies` is `partial`);
/// - `mentions`: who was @-ed (on the wire NIM only has team force-push lists).
/// App keys outside `imbridge` pass through untouched.
struct NIMExtension: Hashable, Sendable {
    static let key = "imbridge"

    var clientMessageID: ClientMessageID?
    var reply: ReplyRef?
    var mentions: Mentions

    init(clientMessageID: ClientMessageID? = nil, reply: ReplyRef? = nil, mentions: Mentions = Mentions()) {
        self.clientMessageID = clientMessageID
        self.reply = reply
        self.mentions = mentions
    }

    /// Reads the `imbridge` object of an `ext` string; anything unreadable gives an empty extension.
    init(ext: String?) {
        self.init()
        guard let ext, let ours = (try? JSONValue.parse(ext))?[Self.key] else { return }
        clientMessageID = NIMLenient.string(ours["cid"]).map { ClientMessageID($0) }
        if let reply = ours["reply"], let id = NIMLenient.string(reply["msgid"]) {
            self.reply = ReplyRef(messageID: MessageID(id), sender: NIMLenient.string(reply["from"]).map { UserID($0) },
                                  digest: NIMLenient.string(reply["digest"]) ?? "")
        }
        if let mentions = ours["mentions"] {
            self.mentions = Mentions(all: mentions["all"].flatMap(NIMLenient.bool) ?? false,
                                     users: mentions["users"]?.arrayValue?.compactMap { $0.stringValue.map { UserID($0) } } ?? [])
        }
    }

    var isEmpty: Bool { clientMessageID == nil && reply == nil && mentions.isEmpty }

    var json: JSONValue {
        var object: [String: JSONValue] = [:]
        if let clientMessageID { object["cid"] = .string(clientMessageID.rawValue) }
        if let reply {
            var quoted: [String: JSONValue] = ["msgid": .string(reply.messageID.rawValue), "digest": .string(reply.digest)]
            if let sender = reply.sender { quoted["from"] = .string(sender.rawValue) }
            object["reply"] = .object(quoted)
        }
        if !mentions.isEmpty {
            object["mentions"] = .object(["all": .bool(mentions.all), "users": .array(mentions.users.map { .string($0.rawValue) })])
        }
        return .object(object)
    }

    /// The `ext` to send: `appExt` (the app's ext, if any) with our object set; `appExt` itself when it
    /// already says exactly this (so an unchanged message re-encodes to the same bytes); nil when both
    /// are empty.
    ///
    /// NIM takes at most `limit` characters of `ext` (docs/adapters/nim.md, "Message field limits"): over it, the quoted
    /// message's digest (a preview; the quoted id stays) is shortened until the whole fits; when it still
    /// does not (a long app `ext`, a long mention list), `limit_exceeded` — nothing is cut that a reader needs.
    func merged(into appExt: String?) throws -> String? {
        let whole = try mergedWhole(into: appExt)
        guard let whole, whole.utf16.count > Self.limit else { return whole }
        if var reply, !reply.digest.isEmpty {
            // Cut the digest by what is over (escaping may cost more, so again until it fits).
            let original = reply.digest
            var shorter = self
            var room = original.utf16.count
            while let fitted = try shorter.mergedWhole(into: appExt) {
                let over = fitted.utf16.count - Self.limit
                if over <= 0 { return fitted }
                room -= over
                guard room > 1 else { break }
                reply.digest = NIMMessageCodec.cut(original, to: room)
                shorter.reply = reply
            }
        }
        throw IMError(.limitExceeded, "the NIM ext is \(whole.utf16.count) characters; NIM allows \(Self.limit) (the app's ext or the mention list is too long)",
                      details: ["limit": "ext_length"])
    }

    /// NIM's `ext` limit, in UTF-16 units (as the vendor's Java SDK counts a string).
    static let limit = NIMMessageCodec.fieldLimits.ext

    private func mergedWhole(into appExt: String?) throws -> String? {
        if NIMExtension(ext: appExt) == self, appExt != nil || isEmpty { return appExt }
        var object: [String: JSONValue] = [:]
        if let appExt {
            guard let parsed = (try? JSONValue.parse(appExt))?.objectValue else {
                throw IMError(.invalidArgument, "ext must be a JSON object to carry replies, mentions or a client id")
            }
            object = parsed
        }
        object[Self.key] = isEmpty ? nil : json
        return object.isEmpty ? nil : JSONValue.object(object).jsonString()
    }
}
