import Foundation
import IMCore
import IMOutbox

/// A source conversation's catch-up checkpoint (`catchup/<backend>/<conversation>` in the store's
/// checkpoints): written first by the intake, with the conversation's first recorded message, then moved
/// by the catch-up (`CatchUpRunner`) as it finds the conversation complete.
package enum CatchUpCheckpoint {
    package static let prefix = "catchup/"

    /// One conversation's checkpoint, as stored (JSON).
    package struct Record: Codable, Sendable, Equatable {
        package var cursor: String?
        package var seq: Int64?
        package var at: Int64?
        package var id: String?
        package var viewer: String?

        package init(cursor: String? = nil, seq: Int64? = nil, at: Int64? = nil, id: String? = nil, viewer: String? = nil) {
            (self.cursor, self.seq, self.at, self.id, self.viewer) = (cursor, seq, at, id, viewer)
        }

        /// The checkpoint's stored value: JSON with sorted keys.
        package func stored() throws -> String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            return String(decoding: try encoder.encode(self), as: UTF8.self)
        }

        /// A stored value read back; nil when it is not a checkpoint.
        package init?(stored value: String) {
            guard let record = try? JSONDecoder().decode(Record.self, from: Data(value.utf8)) else { return nil }
            self = record
        }

        /// The last message read (its send time and id), when the record names one.
        package var position: (at: Int64, id: String)? {
            guard let at, let id else { return nil }
            return (at, id)
        }

        /// Whether this record's position lies past `other`'s: by sequence number where both have one, else
        /// by the last message's time and id; a record with a position is past one without.
        package func isPast(_ other: Record) -> Bool {
            if let seq, let otherSeq = other.seq { return seq > otherSeq }
            guard let position else { return false }
            guard let theirs = other.position else { return true }
            return (position.at, position.id) > (theirs.at, theirs.id)
        }

        /// What to store in place of `stored`: this record, unless `stored` is past it — several instances
        /// save one conversation's checkpoint, and one whose view is older (paused, or its read done before
        /// another's) must not move the position back under messages recorded past it, which the intake's
        /// screen of late callbacks reads (docs/architecture.md, "Callbacks behind the catch-up position").
        /// Then the stored position is kept, with this record's viewer.
        package func merged(over stored: Record?) -> Record {
            guard let stored, stored.isPast(self) else { return self }
            var merged = stored
            merged.viewer = viewer ?? stored.viewer
            return merged
        }
    }

    /// The first checkpoints of conversations live intake records before catch-up knows them: positioned
    /// at the first message recorded (`cursor`, when the source gives one) with its sender as the member to
    /// read history as; written with the message, kept if one is there already. A bridge killed a moment
    /// later reads the conversation from there on its next start, however much came meanwhile.
    package static func firstCheckpoints(_ fresh: [CatchUpKey: Message], routes: RouteTable,
                                 cursor: (CatchUpKey, Message) -> HistoryCursor?) -> [(name: String, value: String)] {
        fresh.compactMap { key, first in
            guard !routes.legs(from: key.backend, conversation: key.conversation).isEmpty else { return nil }
            var record = Record(viewer: routes.isBridgeIdentity(first.sender, on: key.backend) ? nil : first.sender.rawValue)
            if let position = cursor(key, first) {
                (record.cursor, record.seq, record.at, record.id) = (position.rawValue, first.seq, first.sentAt, first.id.rawValue)
            }
            guard let value = try? record.stored() else { return nil }
            return (name(for: key), value)
        }
    }

    package static func name(for key: CatchUpKey) -> String {
        "\(prefix)\(key.backend.rawValue)/\(key.conversation)"
    }

    package static func key(fromName name: String) -> CatchUpKey? { CatchUpKey(named: name, after: prefix) }
}

/// A conversation of a source backend, as catch-up keeps its position (`CatchUpGate.Key`).
public struct CatchUpKey: Hashable, Sendable {
    public var backend: BackendID
    public var conversation: ConversationRef
    public init(backend: BackendID, conversation: ConversationRef) {
        self.backend = backend
        self.conversation = conversation
    }

    /// The key a store name `<prefix><backend>/<conversation>` stands for (a checkpoint's, a hold's);
    /// nil when the name has another prefix or no conversation.
    package init?(named name: String, after prefix: String) {
        guard name.hasPrefix(prefix) else { return nil }
        let rest = name.dropFirst(prefix.count)
        guard let slash = rest.firstIndex(of: "/"),
              let conversation = try? ConversationRef(parsing: String(rest[rest.index(after: slash)...])) else { return nil }
        self.init(backend: BackendID(String(rest[..<slash])), conversation: conversation)
    }
}
