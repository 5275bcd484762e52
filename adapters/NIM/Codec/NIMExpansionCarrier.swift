import Foundation
import IMCore

/// The expansion fallback: NIM v1 has no key/value expansion, so a change to one is carried as a
/// type-100 message of custom type `imbridge.expansion` whose payload names the target message and the
/// delta: `{"msgid":"<target>","version":N,"set":{…},"removed":[…],"cleared":false}`.
///
/// `NIMBackend.sendExpansionChange` writes one; the inbound side turns one back into an
/// `expansionChanged` event instead of a message. NIM clients that do not know the type show it as an
/// unknown custom message (its digest is `[消息扩展更新]`). The carrier does not make NIM store any
/// state: there is no `expansion(of:)` on NIM, so the capability is `fallback`, never native.
public struct NIMExpansionCarrier: CustomMessageContent {
    public static let contentType = "imbridge.expansion"

    public var msgid: String
    public var version: Int64
    public var set: [String: String]
    public var removed: [String]
    public var cleared: Bool

    public init(target: MessageID, delta: ExpansionDelta) {
        msgid = target.rawValue
        version = delta.version
        set = delta.set
        removed = delta.removed
        cleared = delta.cleared
    }

    public var digest: String { "[消息扩展更新]" }

    public func validate() throws {
        if msgid.isEmpty { throw IMError(.invalidContent, "expansion carrier names no message") }
    }

    public var delta: ExpansionDelta { ExpansionDelta(version: version, set: set, removed: removed, cleared: cleared) }

    /// The `expansionChanged` event a received carrier stands for (`nim:exp:<carrier msgid>`, by its
    /// sender), the same from the message copy and from history. Its version is the carrier's own NIM time
    /// (`msgTimestamp`, history's `sendtime`), not the `version` its JSON names: the order NIM gave the
    /// changes, whenever the bridge takes each in (a carrier caught up or redelivered late must not beat
    /// a newer one taken earlier; docs/expansions.md, "Versions").
    public static func event(for message: Message, backend: BackendID) -> IMEvent? {
        guard let change = change(in: message) else { return nil }
        var delta = change.delta
        delta.version = message.sentAt
        return IMEvent(eventID: EventID("nim:exp:\(message.id)"), backend: backend,
                       kind: .expansionChanged(messageID: change.target, conversation: message.conversation, by: message.sender, delta: delta))
    }

    /// The change a received message carries, if it is a carrier (registered in the registry or not).
    public static func change(in message: Message) -> (target: MessageID, delta: ExpansionDelta)? {
        guard case .custom(let custom) = message.content, custom.typeName == contentType else { return nil }
        let carrier = custom.as(NIMExpansionCarrier.self)
            ?? (try? JSONDecoder().decode(NIMExpansionCarrier.self, from: Data(custom.payload.utf8)))
        guard let carrier, !carrier.msgid.isEmpty else { return nil }
        return (MessageID(carrier.msgid), carrier.delta)
    }
}
