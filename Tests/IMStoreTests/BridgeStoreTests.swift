import Foundation
import IMCore
import IMStore
import Testing

@Suite struct BridgeStoreTests {
    func lane(_ id: String, _ backend: BackendID = "rc") -> LaneKey { LaneKey(backend: backend, conversation: .group(GroupID(id))) }

    @Test(arguments: StoreKind.allCases) func ledgerDedupesAndSurvivesReopening(_ kind: StoreKind) throws {
        let path = try kind.freshLocation()
        let store = try BridgeStore(path: path)
        #expect(try store.transaction { try $0.recordEvent("wk", "msg:1", kind: "message", at: 1) })
        #expect(try !store.transaction { try $0.recordEvent("wk", "msg:1", kind: "message", at: 2) })
        #expect(try store.transaction { try $0.recordEvent("rc", "msg:1", kind: "message", at: 2) }, "the key includes the backend")
        let reopened = try BridgeStore(path: path)
        #expect(try !reopened.transaction { try $0.recordEvent("wk", "msg:1", kind: "message", at: 3) })
        #expect(try reopened.read { try $0.ledgerCount() } == 2)
        #expect(try reopened.schemaVersion() == 5)
    }

    @Test(arguments: StoreKind.allCases) func aFailedTransactionLeavesNothing(_ kind: StoreKind) throws {
        let path = try kind.freshLocation()
        let store = try BridgeStore(path: path)
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try store.transaction { tx in
                _ = try tx.recordEvent("wk", "e1", kind: "message", at: 1)
                try tx.enqueue(lane: lane("g"), sourceBackend: "wk", sourceEventID: "e1", kind: "send", payload: Data("x".utf8), at: 1)
                throw Boom()
            }
        }
        #expect(try store.read { try $0.ledgerCount() } == 0)
        #expect(try store.read { try $0.count(state: .pending) } == 0)
    }

    @Test(arguments: StoreKind.allCases) func lanesAreFIFOAndAWaitingHeadHoldsOnlyItsLane(_ kind: StoreKind) throws {
        let path = try kind.freshLocation()
        let store = try BridgeStore(path: path)
        let ids = try store.transaction { tx in
            try ["a", "b", "a", "c"].enumerated().map { index, name in
                try tx.enqueue(lane: lane(name), sourceBackend: "wk", sourceEventID: EventID("e\(index)"), kind: "send",
                               payload: Data([UInt8(index)]), at: 1)
            }
        }
        var due = try store.read { try $0.dueLanes(at: 10) }
        #expect(due.map(\.id) == [ids[0], ids[1], ids[3]], "one head per lane, oldest first")
        try store.transaction { tx in
            try tx.claim(ids[0])
            try tx.reschedule(ids[0], at: 100, error: "429")
        }
        due = try store.read { try $0.dueLanes(at: 10) }
        #expect(due.map(\.id) == [ids[1], ids[3]], "lane a waits, its second entry does not overtake")
        #expect(try store.read { try $0.nextWakeUp() } == 0)
        #expect(try store.read { try $0.nextWakeUp(after: 10) } == 100, "due heads do not set the timer, the waiting one does")
        try store.transaction { tx in
            try tx.complete(ids[1], at: 11)
            try tx.complete(ids[3], at: 11)
        }
        #expect(try store.read { try $0.nextWakeUp() } == 100)
        #expect(try store.read { try $0.nextWakeUp(after: 100) } == nil)
        due = try store.read { try $0.dueLanes(at: 100) }
        #expect(due.map(\.id) == [ids[0]] && due[0].attempts == 1 && due[0].lastError == "429")
        #expect(try store.read { try $0.laneDepths() } == ["rc/group:a": 2])
    }

    @Test(arguments: StoreKind.allCases) func deadLettersStepAsideAndCanBeRetried(_ kind: StoreKind) throws {
        let path = try kind.freshLocation()
        let store = try BridgeStore(path: path)
        let (first, second) = try store.transaction { tx in
            (try tx.enqueue(lane: lane("a"), sourceBackend: "wk", sourceEventID: "e1", kind: "send", payload: Data(), at: 1),
             try tx.enqueue(lane: lane("a"), sourceBackend: "wk", sourceEventID: "e2", kind: "send", payload: Data(), at: 1))
        }
        try store.transaction { try $0.markDead(first, error: "invalid_argument: too long", at: 2) }
        #expect(try store.read { try $0.head(of: lane("a")) }?.id == second)
        let dead = try store.read { try $0.deadLetters() }
        #expect(dead.map(\.id) == [first] && dead[0].lastError == "invalid_argument: too long")
        #expect(try store.transaction { try $0.retryDeadLetters(ids: [first]) } == 1)
        #expect(try store.read { try $0.head(of: lane("a")) }?.id == first, "a retried letter is back at its place in the lane")
        #expect(try store.read { try $0.deadLetters() }.isEmpty)
    }

    @Test(arguments: StoreKind.allCases) func idMapWorksBothWays(_ kind: StoreKind) throws {
        let path = try kind.freshLocation()
        let store = try BridgeStore(path: path)
        try store.transaction { tx in
            try tx.map(source: ("wk", "101", .group("g1")), target: ("rc", "ABCD-EFGH", .group("g1")), at: 1)
        }
        try store.read { tx in
            let forward = try tx.mapped("101", from: "wk", to: "rc")
            #expect(forward?.toMessage == "ABCD-EFGH" && forward?.bridgeCreated == true)
            let back = try tx.mapped("ABCD-EFGH", from: "rc", to: "wk")
            #expect(back?.toMessage == "101" && back?.toConversation == .group("g1") && back?.bridgeCreated == false)
            #expect(try tx.isBridgeCreated("ABCD-EFGH", on: "rc"))
            #expect(try !tx.isBridgeCreated("101", on: "wk"))
            #expect(try tx.mapped("101", from: "wk", to: "nim") == nil)
            #expect(try tx.mappingCount() == 1)
        }
    }

    @Test(arguments: StoreKind.allCases) func checkpoints(_ kind: StoreKind) throws {
        let path = try kind.freshLocation()
        let store = try BridgeStore(path: path)
        #expect(try store.read { try $0.checkpoint("poller:jm") } == nil)
        try store.transaction { try $0.setCheckpoint("poller:jm", #"{"cursor":"c1"}"#, at: 1) }
        try store.transaction { try $0.setCheckpoint("poller:jm", #"{"cursor":"c2"}"#, at: 2) }
        #expect(try BridgeStore(path: path).read { try $0.checkpoint("poller:jm") } == #"{"cursor":"c2"}"#)
    }

    @Test(arguments: StoreKind.allCases) func anUnopenableStoreIsAClearError(_ kind: StoreKind) {
        #expect { try BridgeStore(path: kind.unopenable) } throws: { ($0 as? IMError)?.code == .unavailable }
    }
}
