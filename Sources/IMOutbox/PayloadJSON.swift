import Foundation
import IMCore
import Synchronization

/// The outbox payload's JSON without `Codable`: every row is written here at intake and read again when
/// its lane runs (from the row, whenever `PayloadCache` does not hold it), and `JSONEncoder`/`JSONDecoder`
/// were the largest single part of the bridge's own work (docs/performance.md, "The outbox payload
/// without Codable").
///
/// The JSON is the one the synthesized `Codable` conformances write, so rows stay readable both ways
/// (by `JSONDecoder`, and by this reader for rows written before it):
/// - a struct is an object of its stored properties; an optional that is nil is left out (and read back
///   from a missing member or `null`);
/// - an enum case is an object with one member named after the case, whose value is an object of the
///   associated values by label (`_0` for an unlabeled one);
/// - identifiers are strings, a conversation is its `KIND:ID` text.
///
/// The shapes every relayed message has (the actions, the outgoing message, text content, mentions,
/// options, reply, migration mark) are written and read here. The rest (other contents, expansion deltas,
/// user modes) go through `JSONEncoder`/`JSONDecoder` for that member alone, and routes are kept once per
/// route met. The reader is strict: whatever it does not find exactly as written (a member missing or of
/// another type, an unknown case) makes it give up, and `OutboxPayload.decode` hands the row to
/// `JSONDecoder`, whose result or error stands. `OutboxPayloadCodingTests` compares both ways on every
/// action and content kind.
package enum PayloadJSON {
    /// The reader met a shape it does not read; `JSONDecoder` decides.
    package struct Unread: Error {}

    package typealias Object = [String: JSONValue]

    // MARK: Payload

    package static func read(_ value: JSONValue) throws -> OutboxPayload {
        let members = try object(value)
        var payload = OutboxPayload(action: try read(action: members["action"]), route: try read(route: members["route"]),
                                    eventTimeMs: try int64(members["eventTimeMs"]),
                                    sourceConversation: try optional(members["sourceConversation"]) { try conversation($0) },
                                    migration: try optional(members["migration"]) { try read(migration: $0) })
        payload.requeues = try optional(members["requeues"]) { Int(try int64($0)) }
        payload.sourceSender = try optional(members["sourceSender"]) { UserID(try string($0)) }
        payload.firstCopyOnly = try optional(members["firstCopyOnly"]) { try bool($0) }
        return payload
    }

    // MARK: Actions

    package static func write(_ action: RelayAction) throws -> JSONValue {
        var fields = Object.withCapacity(4)
        switch action {
        case .send(let outgoing, let source, let replyToSource):
            fields["outgoing"] = try write(outgoing)
            fields["source"] = .string(source.rawValue)
            if let replyToSource { fields["replyToSource"] = .string(replyToSource.rawValue) }
        case .notice(let outgoing, let replyToSource):
            fields["outgoing"] = try write(outgoing)
            if let replyToSource { fields["replyToSource"] = .string(replyToSource.rawValue) }
        case .edit(let source, let by, let content):
            fields["source"] = .string(source.rawValue)
            fields["by"] = .string(by.rawValue)
            fields["content"] = try write(content)
        case .recall(let source, let by):
            fields["source"] = .string(source.rawValue)
            fields["by"] = .string(by.rawValue)
        case .delete(let source, let by, let forUser):
            fields["source"] = .string(source.rawValue)
            fields["by"] = .string(by.rawValue)
            if let forUser { fields["forUser"] = .string(forUser.rawValue) }
        case .expansion(let source, let by, let delta):
            fields["source"] = .string(source.rawValue)
            fields["by"] = .string(by.rawValue)
            fields["delta"] = try encodedByFoundation(delta)
        case .reaction(let source, let by, let emoji, let added):
            fields["source"] = .string(source.rawValue)
            fields["by"] = .string(by.rawValue)
            fields["emoji"] = .string(emoji)
            fields["added"] = .bool(added)
        case .read(let upToSource, let by):
            fields["upToSource"] = .string(upToSource.rawValue)
            fields["by"] = .string(by.rawValue)
        case .profile(let source, let puppet):
            fields["source"] = .string(source.rawValue)
            fields["puppet"] = .string(puppet.rawValue)
        case .group(let source, let target, let users):
            fields["source"] = .string(source.rawValue)
            if let target { fields["target"] = .string(target.rawValue) }
            fields["users"] = try encodedByFoundation(users)
        case .user(let profile, let known):
            fields["profile"] = try encodedByFoundation(profile)
            fields["known"] = .bool(known)
        case .retract(let source, let copy, let outgoing, let attemptAt):
            fields["source"] = .string(source.rawValue)
            if let copy { fields["copy"] = .string(copy.rawValue) }
            fields["outgoing"] = try write(outgoing)
            fields["attemptAt"] = .int(attemptAt)
        case .retractCarrier(let source, let by, let clientID, let attemptAt):
            fields["source"] = .string(source.rawValue)
            fields["by"] = .string(by.rawValue)
            fields["clientID"] = .string(clientID.rawValue)
            fields["attemptAt"] = .int(attemptAt)
        case .dissolve(let source, let keep, let notice):
            fields["source"] = .string(source.rawValue)
            fields["keep"] = .bool(keep)
            fields["notice"] = try write(notice)
        }
        // `kindName` is the case's own name, the key the synthesized encoding uses.
        return .object([action.kindName: .object(fields)])
    }

    package static func read(action value: JSONValue?) throws -> RelayAction {
        let (kind, fields) = try single(value)
        switch kind {
        case "send":
            return .send(outgoing: try read(outgoing: fields["outgoing"]), source: MessageID(try string(fields["source"])),
                         replyToSource: try optional(fields["replyToSource"]) { MessageID(try string($0)) })
        case "notice":
            return .notice(outgoing: try read(outgoing: fields["outgoing"]),
                           replyToSource: try optional(fields["replyToSource"]) { MessageID(try string($0)) })
        case "edit":
            return .edit(source: MessageID(try string(fields["source"])), by: UserID(try string(fields["by"])),
                         content: try read(content: fields["content"]))
        case "recall":
            return .recall(source: MessageID(try string(fields["source"])), by: UserID(try string(fields["by"])))
        case "delete":
            return .delete(source: MessageID(try string(fields["source"])), by: UserID(try string(fields["by"])),
                           forUser: try optional(fields["forUser"]) { UserID(try string($0)) })
        case "expansion":
            return .expansion(source: MessageID(try string(fields["source"])), by: UserID(try string(fields["by"])),
                              delta: try decodedByFoundation(fields["delta"]))
        case "reaction":
            return .reaction(source: MessageID(try string(fields["source"])), by: UserID(try string(fields["by"])),
                             emoji: try string(fields["emoji"]), added: try bool(fields["added"]))
        case "read":
            return .read(upToSource: MessageID(try string(fields["upToSource"])), by: UserID(try string(fields["by"])))
        case "profile":
            return .profile(source: UserID(try string(fields["source"])), puppet: UserID(try string(fields["puppet"])))
        case "group":
            return .group(source: GroupID(try string(fields["source"])), target: try optional(fields["target"]) { GroupID(try string($0)) },
                          users: try decodedByFoundation(fields["users"]))
        case "user":
            return .user(profile: try decodedByFoundation(fields["profile"]), known: try bool(fields["known"]))
        case "retract":
            return .retract(source: MessageID(try string(fields["source"])),
                            copy: try optional(fields["copy"]) { MessageID(try string($0)) },
                            outgoing: try read(outgoing: fields["outgoing"]), attemptAt: try int64(fields["attemptAt"]))
        case "retractCarrier":
            return .retractCarrier(source: MessageID(try string(fields["source"])), by: UserID(try string(fields["by"])),
                                   clientID: ClientMessageID(try string(fields["clientID"])), attemptAt: try int64(fields["attemptAt"]))
        case "dissolve":
            return .dissolve(source: GroupID(try string(fields["source"])), keep: try bool(fields["keep"]),
                             notice: try read(outgoing: fields["notice"]))
        default:
            throw Unread()
        }
    }

    // MARK: The outgoing message

    package static func write(_ message: OutgoingMessage) throws -> JSONValue {
        var fields = Object.withCapacity(10)
        fields["conversation"] = .string(message.conversation.description)
        fields["sender"] = .string(message.sender.rawValue)
        fields["content"] = try write(message.content)
        if let clientMessageID = message.clientMessageID { fields["clientMessageID"] = .string(clientMessageID.rawValue) }
        fields["mentions"] = .object(["all": .bool(message.mentions.all),
                                      "users": .array(message.mentions.users.map { .string($0.rawValue) })])
        if let reply = message.reply {
            var quoted = Object.withCapacity(3)
            quoted["messageID"] = .string(reply.messageID.rawValue)
            if let sender = reply.sender { quoted["sender"] = .string(sender.rawValue) }
            quoted["digest"] = .string(reply.digest)
            fields["reply"] = .object(quoted)
        }
        fields["options"] = write(message.options)
        if let expansion = message.expansion { fields["expansion"] = .object(expansion.mapValues { .string($0) }) }
        if let sentAt = message.sentAt { fields["sentAt"] = .int(sentAt) }
        fields["vendorExtras"] = .object(message.vendorExtras)
        return .object(fields)
    }

    package static func read(outgoing value: JSONValue?) throws -> OutgoingMessage {
        let fields = try object(value)
        let mentions = try object(fields["mentions"])
        let options = try object(fields["options"])
        return OutgoingMessage(
            conversation: try conversation(fields["conversation"]),
            sender: UserID(try string(fields["sender"])),
            content: try read(content: fields["content"]),
            clientMessageID: try optional(fields["clientMessageID"]) { ClientMessageID(try string($0)) },
            mentions: Mentions(all: try bool(mentions["all"]), users: try array(mentions["users"]).map { UserID(try string($0)) }),
            reply: try optional(fields["reply"]) { value in
                let quoted = try object(value)
                return ReplyRef(messageID: MessageID(try string(quoted["messageID"])),
                                sender: try optional(quoted["sender"]) { UserID(try string($0)) },
                                digest: try string(quoted["digest"]))
            },
            options: MessageOptions(persist: try bool(options["persist"]), countUnread: try bool(options["countUnread"]),
                                    push: try bool(options["push"]), receiptRequested: try bool(options["receiptRequested"]),
                                    pushText: try optional(options["pushText"]) { try string($0) }),
            expansion: try optional(fields["expansion"]) { value in try object(value).mapValues { try string($0) } },
            sentAt: try optional(fields["sentAt"]) { try int64($0) },
            vendorExtras: try object(fields["vendorExtras"]))
    }

    private static func write(_ options: MessageOptions) -> JSONValue {
        var fields = Object.withCapacity(5)
        fields["persist"] = .bool(options.persist)
        fields["countUnread"] = .bool(options.countUnread)
        fields["push"] = .bool(options.push)
        fields["receiptRequested"] = .bool(options.receiptRequested)
        if let pushText = options.pushText { fields["pushText"] = .string(pushText) }
        return .object(fields)
    }

    // MARK: Content

    /// Text here; every other kind through `JSONEncoder`.
    package static func write(_ content: MessageContent) throws -> JSONValue {
        if case .text(let text) = content { return .object(["text": .object(["_0": .object(["text": .string(text.text)])])]) }
        return try encodedByFoundation(content)
    }

    package static func read(content value: JSONValue?) throws -> MessageContent {
        if case .object(let members) = value, members.count == 1, case .object(let fields)? = members["text"],
           case .object(let text)? = fields["_0"], case .string(let words)? = text["text"] {
            return .text(words)
        }
        return try decodedByFoundation(value)
    }

    // MARK: Migration mark

    package static func write(_ mark: MigrationMark) -> JSONValue {
        var fields = Object.withCapacity(4)
        fields["run"] = .string(mark.run)
        if let tally = mark.tally { fields["tally"] = .string(tally) }
        if let kind = mark.kind { fields["kind"] = .string(kind) }
        if let senderMigrated = mark.senderMigrated { fields["senderMigrated"] = .bool(senderMigrated) }
        if let outcome = mark.outcome { fields["outcome"] = .string(outcome) }
        return .object(fields)
    }

    package static func read(migration value: JSONValue) throws -> MigrationMark {
        let fields = try object(value)
        return MigrationMark(run: try string(fields["run"]), tally: try optional(fields["tally"]) { try string($0) },
                             kind: try optional(fields["kind"]) { try string($0) },
                             senderMigrated: try optional(fields["senderMigrated"]) { try bool($0) },
                             outcome: try optional(fields["outcome"]) { try string($0) })
    }

    // MARK: Routes

    /// A configuration has a few routes and every entry carries one: each is converted once each way
    /// (at most `routesKept` of them, then every time).
    private static let routeValues = Mutex<[Route: JSONValue]>([:])
    private static let routesRead = Mutex<[JSONValue: Route]>([:])
    private static let routesKept = 256

    package static func write(_ route: Route) throws -> JSONValue {
        if let known = routeValues.withLock({ $0[route] }) { return known }
        let value = try encodedByFoundation(route)
        routeValues.withLock { if $0.count < routesKept { $0[route] = value } }
        return value
    }

    package static func read(route value: JSONValue?) throws -> Route {
        guard let value else { throw Unread() }
        if let known = routesRead.withLock({ $0[value] }) { return known }
        let route: Route = try decodedByFoundation(value)
        routesRead.withLock { if $0.count < routesKept { $0[value] = route } }
        return route
    }

    // MARK: Members

    /// A member `JSONEncoder` writes: its JSON as a value (parsed by the same rules `JSONDecoder` reads).
    package static func encodedByFoundation<T: Encodable>(_ value: T) throws -> JSONValue {
        try JSONValue.parse(JSONEncoder().encode(value))
    }

    /// A member `JSONDecoder` reads, from that member's JSON.
    package static func decodedByFoundation<T: Decodable>(_ value: JSONValue?) throws -> T {
        guard let value, let data = value.finiteJSONData() else { throw Unread() }
        return try JSONDecoder().decode(T.self, from: data)
    }

    private static func object(_ value: JSONValue?) throws -> Object {
        guard case .object(let members)? = value else { throw Unread() }
        return members
    }

    /// An enum case: the object's one member.
    private static func single(_ value: JSONValue?) throws -> (String, Object) {
        guard case .object(let members)? = value, members.count == 1, let (kind, fields) = members.first,
              case .object(let object) = fields else { throw Unread() }
        return (kind, object)
    }

    private static func array(_ value: JSONValue?) throws -> [JSONValue] {
        guard case .array(let elements)? = value else { throw Unread() }
        return elements
    }

    private static func string(_ value: JSONValue?) throws -> String {
        guard case .string(let text)? = value else { throw Unread() }
        return text
    }

    private static func int64(_ value: JSONValue?) throws -> Int64 {
        guard case .int(let number)? = value else { throw Unread() }
        return number
    }

    private static func bool(_ value: JSONValue?) throws -> Bool {
        guard case .bool(let flag)? = value else { throw Unread() }
        return flag
    }

    /// A conversation's `KIND:ID`, parsed as `ConversationRef`'s own decoding does.
    private static func conversation(_ value: JSONValue?) throws -> ConversationRef {
        try ConversationRef(parsing: try string(value))
    }

    /// An optional member: absent or `null` is nil (as `decodeIfPresent` reads it).
    private static func optional<T>(_ value: JSONValue?, _ read: (JSONValue) throws -> T) throws -> T? {
        guard let value, value != .null else { return nil }
        return try read(value)
    }
}
