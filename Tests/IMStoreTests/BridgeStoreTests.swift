import Foundation
import IMCore
@_spi(Testing) import IMStore
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
        #expect(try reopened.schemaVersion() == 12)
    }

    /// `finish` is `map` + `complete` + fenced `claimHead` + `releaseLease` at once (one statement on
    /// PostgreSQL): the next head claimed with its attempt counted, the lease kept while the lane goes on,
    /// released when it runs dry, and nothing claimed for an owner whose lease is gone.
    @Test(arguments: StoreKind.allCases) func finishCompletesMapsAndClaimsTheNextHead(_ kind: StoreKind) throws {
        let store = try BridgeStore(path: try kind.freshLocation())
        let a = lane("a")
        let ids = try store.transaction { tx in
            try (0..<3).map { try tx.enqueue(lane: a, sourceBackend: "wk", sourceEventID: EventID("e\($0)"), kind: "send", payload: Data([1]), at: 1) }
        }
        let real = Int64(Date().timeIntervalSince1970 * 1000)
        var fence: LeaseFence?
        let first = try #require(try store.transaction { tx -> OutboxEntry? in
            fence = try tx.takeLease(a.leaseName, owner: "me", ttlMs: 60_000, now: real)
            #expect(fence != nil)
            return try tx.claimHead(of: a, dueBy: 1, leaseOwner: "me")
        })
        let mine = try #require(fence)
        #expect(first.id == ids[0])
        let mapping = StoreTransaction.Mapping(source: ("wk", "m0", .group("a")), target: ("rc", "r0", .group("a")))
        let second = try store.transaction { try $0.finish(first.id, lane: a, at: 5, mapping: mapping, claimNext: true, fence: mine) }
        #expect(second?.id == ids[1] && second?.attempts == 0, "the next head, claimed; its attempts as before this claim")
        #expect(try store.read { try $0.mapped("m0", from: "wk", to: "rc") }?.toMessage == "r0")
        #expect(try store.read { try $0.isBridgeCreated("r0", on: "rc") })
        #expect(try store.read { try $0.mapped("r0", from: "rc", to: "wk") }?.toMessage == "m0", "both directions")
        #expect(try store.read { try $0.count(state: .done) } == 1)
        #expect(try store.read { try $0.leaseHolder(a.leaseName, at: real) } == "me", "the lane goes on: the lease stays")
        #expect(try store.read { try $0.head(of: a) }?.attempts == 1, "the claim was counted")

        // Not asked to go on (stopping): nothing claimed, the lease released.
        #expect(try store.transaction { try $0.finish(ids[1], lane: a, at: 6, mapping: nil, claimNext: false, fence: mine) } == nil)
        #expect(try store.read { try $0.leaseHolder(a.leaseName, at: real) } == nil)
        #expect(try store.read { try $0.head(of: a) }?.id == ids[2])

        // Another owner holds the lease: the head is not claimed by us, and their lease stays.
        #expect(try store.transaction { try $0.takeLease(a.leaseName, owner: "other", ttlMs: 60_000, now: real) != nil })
        #expect(throws: StoreTransaction.LeaseLost.self) {
            try store.transaction { try $0.finish(ids[1], lane: a, at: 7, mapping: nil, claimNext: true, fence: mine) }
        }
        #expect(try store.read { try $0.head(of: a) }?.attempts == 0, "fenced: no attempt counted")
        #expect(try store.read { try $0.leaseHolder(a.leaseName, at: real) } == "other")
    }

    /// Recording an inbound message tells a redelivery, the bridge's own copy (through the id map) and a new one apart.
    @Test(arguments: StoreKind.allCases) func recordingAMessageFindsRedeliveriesAndEchoes(_ kind: StoreKind) throws {
        let store = try BridgeStore(path: try kind.freshLocation())
        try store.transaction { try $0.map(source: ("wk", "w1", .group("g")), target: ("rc", "r1", .group("g")), at: 1) }
        #expect(try store.transaction { try $0.recordEvent("rc", "msg:r1", kind: "message", at: 2, echoOf: "r1") } == .echo)
        #expect(try store.transaction { try $0.recordEvent("rc", "msg:r1", kind: "message", at: 3, echoOf: "r1") } == .duplicate)
        #expect(try store.transaction { try $0.recordEvent("rc", "msg:r2", kind: "message", at: 4, echoOf: "r2") } == .new)
        #expect(try store.transaction { try $0.recordEvent("wk", "msg:w1", kind: "message", at: 5, echoOf: "w1") } == .new,
                "the source side of a mapping is not the bridge's")
        #expect(try store.transaction { try $0.recordEvent("wk", "msg:r1", kind: "message", at: 6, echoOf: "r1") } == .new,
                "the copy is the bridge's on its own backend only")
        #expect(try store.read { try $0.ledgerCount() } == 4)
    }

    /// A callback's events recorded at once: each as `recordEvent` would, in order, a repeat within the batch
    /// a duplicate; a batch of entries appended in order with growing ids, FIFO in their lanes.
    @Test(arguments: StoreKind.allCases) func batchesRecordAndEnqueueLikeSingleCalls(_ kind: StoreKind) throws {
        let store = try BridgeStore(path: try kind.freshLocation())
        try store.transaction { tx in
            try tx.map(source: ("wk", "w1", .group("g")), target: ("rc", "r1", .group("g")), at: 1)
            _ = try tx.recordEvent("rc", "msg:old", kind: "message", at: 1)
        }
        let events: [StoreTransaction.InboundEvent] = [
            .init(backend: "rc", eventID: "msg:a", kind: "message", message: "a"),
            .init(backend: "rc", eventID: "msg:old", kind: "message", message: "old"),
            .init(backend: "rc", eventID: "msg:r1", kind: "message", message: "r1"),
            .init(backend: "rc", eventID: "msg:a", kind: "message", message: "a"),
            .init(backend: "rc", eventID: "edit:a", kind: "edit", message: nil),
            .init(backend: "wk", eventID: "msg:a", kind: "message", message: "a"),
        ]
        let outcomes = try store.transaction { try $0.recordEvents(events, at: 2) }
        #expect(outcomes == [.new, .duplicate, .echo, .duplicate, .new, .new])
        #expect(try store.read { try $0.ledgerCount() } == 5)
        #expect(try store.transaction { try $0.recordEvents([], at: 3) }.isEmpty)

        let entries = ["a", "b", "a", "c", "a"].enumerated().map { index, name in
            StoreTransaction.NewEntry(lane: lane(name), sourceBackend: "wk", sourceEventID: EventID("e\(index)"), kind: "send",
                                      payload: Data([UInt8(index), 0, 255]))
        }
        let ids = try store.transaction { try $0.enqueueAll(entries, at: 4) }
        #expect(ids.count == 5 && ids == ids.sorted() && Set(ids).count == 5)
        let heads = try store.read { try $0.dueLanes(at: 10) }
        #expect(heads.map(\.id) == [ids[0], ids[1], ids[3]])
        #expect(heads.map(\.sourceEventID) == ["e0", "e1", "e3"])
        #expect(heads.map(\.payload) == [Data([0, 0, 255]), Data([1, 0, 255]), Data([3, 0, 255])])
        #expect(try store.read { try $0.laneDepths() } == ["rc/group:a": 3, "rc/group:b": 1, "rc/group:c": 1])
        #expect(try store.transaction { try $0.enqueueAll([], at: 5) }.isEmpty)
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

    /// `/healthz` reads the oldest pending entry per target backend; done entries do not count.
    @Test(arguments: StoreKind.allCases) func oldestPendingPerTarget(_ kind: StoreKind) throws {
        let store = try BridgeStore(path: try kind.freshLocation())
        #expect(try store.read { try $0.oldestPendingByTarget() }.isEmpty)
        let ids = try store.transaction { tx in
            try [("rc", 50), ("rc", 70), ("yx", 60), ("wk", 10)].enumerated().map { index, item in
                try tx.enqueue(lane: lane("g\(index)", BackendID(item.0)), sourceBackend: "jm", sourceEventID: EventID("e\(index)"),
                               kind: "send", payload: Data(), at: Int64(item.1))
            }
        }
        try store.transaction { tx in
            try tx.claim(ids[0])
            try tx.complete(ids[0], at: 80)
            try tx.claim(ids[3])
            try tx.complete(ids[3], at: 80)
        }
        #expect(try store.read { try $0.oldestPendingByTarget() } == ["rc": 70, "yx": 60])
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
        #expect(try store.read { try $0.dueLaneKeys(at: 10) } == due.map(\.lane))
        #expect(try store.read { try $0.dueLaneKeys(at: 10, limit: 1) } == [due[0].lane])
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

    /// What a migration reads back (docs/migration.md, "Through the outbox"): a lane's pending entries in
    /// order, and entries by id in whatever state they are.
    @Test(arguments: StoreKind.allCases) func pendingEntriesOfALaneAndEntriesByID(_ kind: StoreKind) throws {
        let store = try BridgeStore(path: try kind.freshLocation())
        let ids = try store.transaction { tx in
            try (1...4).map { n in
                try tx.enqueue(lane: lane(n == 3 ? "b" : "a"), sourceBackend: "wk", sourceEventID: EventID("e\(n)"), kind: "send",
                               payload: Data("p\(n)".utf8), at: 1)
            }
        }
        try store.transaction { tx in
            try tx.complete(ids[0], at: 2)
            try tx.markDead(ids[1], error: "invalid_argument: no", at: 2)
        }
        #expect(try store.read { try $0.pendingEntries(of: lane("a"), limit: 10) }.map(\.id) == [ids[3]])
        #expect(try store.read { try $0.pendingEntries(of: lane("b"), limit: 10) }.map(\.sourceEventID) == ["e3"])
        #expect(try store.read { try $0.pendingEntries(of: lane("a"), limit: 0) }.isEmpty)
        let found = try store.read { try $0.entries(ids: [ids[3], ids[0], ids[1], 999_999]) }
        #expect(found.map(\.id) == [ids[0], ids[1], ids[3]], "by id, the unknown one left out")
        #expect(found.map(\.state) == [.done, .dead, .pending])
        #expect(found[1].lastError == "invalid_argument: no" && found[2].payload == Data("p4".utf8))
        #expect(try store.read { try $0.entries(ids: []) }.isEmpty)
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

/// The store holds message contents: created 0600 with its sidecars, and an existing wider file is
/// tightened (docs/configuration.md, `store:`).
@Suite struct StorePermissionTests {
    func mode(_ path: String) -> mode_t? {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o777 : nil
    }

    @Test func aNewStoreAndItsSidecarsAreOwnerOnly() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-perm-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let previous = umask(0o022)
        defer { umask(previous) }
        let path = directory + "/bridge.sqlite"
        let store = try BridgeStore(path: path)
        try store.transaction { _ = try $0.recordEvent("rc", "e1", kind: "message", at: 1) }
        #expect(mode(path) == 0o600)
        #expect(mode(path + "-wal") == 0o600, "the WAL file exists while the store is open and follows the store's mode")
        #expect(mode(path + "-shm") == 0o600)
    }

    @Test func anExistingWorldReadableStoreIsTightened() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-perm-\(UUID().uuidString).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        do {
            let store = try BridgeStore(path: path)
            try store.transaction { _ = try $0.recordEvent("rc", "e1", kind: "message", at: 1) }
        }
        #expect(chmod(path, 0o644) == 0 && mode(path) == 0o644)
        let reopened = try BridgeStore(path: path)
        #expect(try reopened.read { try $0.ledgerCount() } == 1)
        #expect(mode(path) == 0o600)
    }
}
