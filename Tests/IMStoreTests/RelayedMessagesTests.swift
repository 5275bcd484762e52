import Foundation
import IMCore
import IMStore
import Testing

/// `relayedMessages`: the source messages of one conversation the bridge relayed since a time, as the id
/// map's rows (written by `map` or by a lane's `finish`) record them with the source message's own time.
@Suite struct RelayedMessagesTests {
    @Test(arguments: StoreKind.allCases) func listsTheRelayedSourceMessagesOfAConversationSinceATime(_ kind: StoreKind) throws {
        let store = try BridgeStore(path: try kind.freshLocation())
        let group = ConversationRef.group("g1"), other = ConversationRef.group("g2")
        try store.transaction { tx in
            try tx.map(source: ("rc", "old", group), target: ("wk", "c-old", group), sentAt: 1_000, at: 50_000)
            try tx.map(source: ("rc", "a", group), target: ("wk", "c-a", group), sentAt: 20_000, sender: "ann", at: 50_000)
            // Two copies of one message (fan-out): listed once.
            try tx.map(source: ("rc", "b", group), target: ("wk", "c-b", group), sentAt: 30_000, at: 50_000)
            try tx.map(source: ("rc", "b", group), target: ("yx", "y-b", group), sentAt: 30_000, at: 50_000)
            try tx.map(source: ("rc", "elsewhere", other), target: ("wk", "c-e", group), sentAt: 30_000, at: 50_000)
            // Without a time (written before the column existed): not listed.
            try tx.map(source: ("rc", "untimed", group), target: ("wk", "c-u", group), at: 50_000)
            // The bridge's own copy on rc of a wk message is not an rc source message.
            try tx.map(source: ("wk", "w1", group), target: ("rc", "copy", group), sentAt: 40_000, at: 50_000)
        }
        let listed = try store.read { try $0.relayedMessages(from: "rc", in: group, sentSince: 10_000) }
        #expect(listed == [RelayedMessage(id: "a", sentAt: 20_000, sender: "ann"), RelayedMessage(id: "b", sentAt: 30_000)])
        #expect(try store.read { try $0.relayedMessages(from: "rc", in: group, sentSince: 0, limit: 1) }.map(\.id) == ["old"])
        #expect(try store.read { try $0.relayedMessages(from: "wk", in: group, sentSince: 0) }.map(\.id) == ["w1"])
    }

    /// `sourceClockLead`: the least (row time − source send time) over the newest copies of one source's
    /// messages: the source clock's lag behind the bridge's plus the quickest relay.
    @Test(arguments: StoreKind.allCases) func theSourceClocksLeadIsReadFromTheNewestCopies(_ kind: StoreKind) throws {
        let store = try BridgeStore(path: try kind.freshLocation())
        let group = ConversationRef.group("g1")
        #expect(try store.read { try $0.sourceClockLead(of: "rc") } == nil, "no copy: no lead")
        try store.transaction { tx in
            // An old copy (a migration's of old history) left out of the sample of the newest.
            try tx.map(source: ("rc", "old", group), target: ("wk", "c-old", group), sentAt: 1_000, at: 10_000)
            try tx.map(source: ("rc", "a", group), target: ("wk", "c-a", group), sentAt: 20_000, at: 80_200)
            try tx.map(source: ("rc", "b", group), target: ("wk", "c-b", group), sentAt: 30_000, at: 90_050)
            // Another source's copies, and the reverse rows of the bridge's copies, are not rc's clock.
            try tx.map(source: ("wk", "w1", group), target: ("rc", "copy", group), sentAt: 95_000, at: 95_010)
        }
        #expect(try store.read { try $0.sourceClockLead(of: "rc", sample: 2) } == 60_050)
        #expect(try store.read { try $0.sourceClockLead(of: "rc", sample: 3) } == 9_000)
        #expect(try store.read { try $0.sourceClockLead(of: "wk") } == 10)
    }

    /// A lane's `finish` records the time its mapping carries.
    @Test(arguments: StoreKind.allCases) func aFinishedSendRecordsTheSourceTime(_ kind: StoreKind) throws {
        let store = try BridgeStore(path: try kind.freshLocation())
        let lane = LaneKey(backend: "wk", conversation: .group("g1"))
        let id = try store.transaction { try $0.enqueue(lane: lane, sourceBackend: "rc", sourceEventID: "msg:r1", kind: "send", payload: Data([1]), at: 1) }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let fence = try #require(try store.transaction { tx -> LeaseFence? in
            let fence = try tx.takeLease(lane.leaseName, owner: "me", ttlMs: 60_000, now: now)
            _ = try tx.claimHead(of: lane, dueBy: 1, leaseOwner: "me")
            return fence
        })
        let mapping = StoreTransaction.Mapping(source: ("rc", "r1", .group("g1")), target: ("wk", "w1", .group("g1")), sentAt: 12_345, sender: "bob")
        _ = try store.transaction { try $0.finish(id, lane: lane, at: 5, mapping: mapping, claimNext: false, fence: fence) }
        #expect(try store.read { try $0.relayedMessages(from: "rc", in: .group("g1"), sentSince: 12_345) } == [RelayedMessage(id: "r1", sentAt: 12_345, sender: "bob")])
        #expect(try store.read { try $0.relayedMessages(from: "rc", in: .group("g1"), sentSince: 12_346) }.isEmpty)
    }
}
