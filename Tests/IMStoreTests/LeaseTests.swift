import Foundation
import IMCore
import IMStore
import Testing

/// Leases (docs/high-availability.md), through two store handles on the same store, as two bridge
/// instances would hold them.
@Suite struct LeaseTests {
    func lane(_ id: String) -> LaneKey { LaneKey(backend: "rc", conversation: .group(GroupID(id))) }

    @Test(arguments: StoreKind.allCases) func aLeaseIsExclusiveUntilItExpiresOrIsReleased(_ kind: StoreKind) throws {
        let location = try kind.freshLocation()
        let a = try BridgeStore(path: location), b = try BridgeStore(path: location)
        #expect(try a.transaction { try $0.acquireLease("lane:x", owner: "A", until: 1_000, now: 0) })
        #expect(try !b.transaction { try $0.acquireLease("lane:x", owner: "B", until: 1_500, now: 500) }, "A holds it until 1000")
        #expect(try b.read { try $0.leaseHolder("lane:x", at: 500) } == "A")
        #expect(try a.transaction { try $0.acquireLease("lane:x", owner: "A", until: 2_000, now: 900) }, "the holder renews")
        #expect(try !b.transaction { try $0.acquireLease("lane:x", owner: "B", until: 2_500, now: 1_500) }, "renewed until 2000")
        #expect(try b.transaction { try $0.acquireLease("lane:x", owner: "B", until: 3_000, now: 2_000) }, "expired: taken over")
        #expect(try a.read { try $0.leaseHolder("lane:x", at: 2_100) } == "B")
        #expect(try a.transaction { try $0.renewLeases(owner: "A", until: 9_000) } == 0, "A holds nothing any more")
        try a.transaction { try $0.releaseLease("lane:x", owner: "A") }
        #expect(try a.read { try $0.leaseHolder("lane:x", at: 2_100) } == "B", "releasing someone else's lease does nothing")
        #expect(try b.transaction { try $0.renewLeases(owner: "B", until: 9_000) } == 1)
        try b.transaction { try $0.releaseLease("lane:x", owner: "B") }
        #expect(try a.read { try $0.leaseHolder("lane:x", at: 2_100) } == nil)
        #expect(try a.transaction { try $0.acquireLease("lane:x", owner: "A", until: 5_000, now: 2_100) }, "released: free at once")
        #expect(try b.transaction { try $0.acquireLease("leader", owner: "B", until: 5_000, now: 2_100) })
        #expect(try b.transaction { try $0.dropAllLeases() } == 2)
        #expect(try b.read { try $0.leaseHolder("lane:x", at: 2_100) } == nil && b.read { try $0.leaseHolder("leader", at: 2_100) } == nil)
    }

    @Test(arguments: StoreKind.allCases) func claimsAreFencedByTheLaneLease(_ kind: StoreKind) throws {
        let location = try kind.freshLocation()
        let a = try BridgeStore(path: location), b = try BridgeStore(path: location)
        let ids = try a.transaction { tx in
            try (0..<3).map { try tx.enqueue(lane: lane("g"), sourceBackend: "wk", sourceEventID: EventID("e\($0)"), kind: "send", payload: Data([1]), at: 1) }
        }
        #expect(try a.transaction { try $0.acquireLease(lane("g").leaseName, owner: "A", until: 1_000, now: 10) })
        #expect(try b.transaction { try $0.claimHead(of: lane("g"), dueBy: 10, leaseOwner: "B") } == nil, "B does not hold the lane")
        let first = try a.transaction { try $0.claimHead(of: lane("g"), dueBy: 10, leaseOwner: "A") }
        #expect(first?.id == ids[0] && first?.attempts == 0)
        #expect(try a.read { try $0.head(of: lane("g")) }?.attempts == 1, "the claim counted the attempt")
        // A's lease lapses; B takes the lane over and finds the claimed head still pending: it goes first.
        #expect(try a.transaction { try $0.claimHead(of: lane("g"), dueBy: 1_000, leaseOwner: "A") } == nil, "expired: A may not claim")
        #expect(try b.transaction { try $0.acquireLease(lane("g").leaseName, owner: "B", until: 9_000, now: 1_000) })
        let taken = try b.transaction { try $0.claimHead(of: lane("g"), dueBy: 1_000, leaseOwner: "B") }
        #expect(taken?.id == ids[0] && taken?.attempts == 1, "the takeover resumes the head in hand, knowing it may have been sent")
        #expect(try a.transaction { try $0.claimHead(of: lane("g"), dueBy: 1_001, leaseOwner: "A") } == nil)
        try b.transaction { try $0.complete(ids[0], at: 1_001) }
        #expect(try b.transaction { try $0.claimHead(of: lane("g"), dueBy: 1_001, leaseOwner: "B") }?.id == ids[1], "in order")
    }

    @Test(arguments: StoreKind.allCases) func theSchedulerSeesOnlyLanesItMayWork(_ kind: StoreKind) throws {
        let store = try BridgeStore(path: try kind.freshLocation())
        try store.transaction { tx in
            for name in ["a", "b", "c"] {
                try tx.enqueue(lane: lane(name), sourceBackend: "wk", sourceEventID: EventID(name), kind: "send", payload: Data(), at: 1)
            }
            _ = try tx.acquireLease(lane("a").leaseName, owner: "A", until: 100, now: 1)
            _ = try tx.acquireLease(lane("b").leaseName, owner: "B", until: 100, now: 1)
        }
        func due(_ owner: String?, at now: Int64) throws -> [String] {
            try store.read { try $0.dueLanes(at: now, leaseOwner: owner) }.map { $0.lane.conversation.description }
        }
        #expect(try due("A", at: 50) == ["group:a", "group:c"], "its own and free lanes, not B's")
        #expect(try due("B", at: 50) == ["group:b", "group:c"])
        #expect(try due(nil, at: 50) == ["group:a", "group:b", "group:c"])
        #expect(try due("C", at: 100) == ["group:a", "group:b", "group:c"], "expired leases do not hide lanes")
    }

    /// Two handles claiming from the same lanes at the same time, each only under its lease: every entry
    /// is claimed once, and each lane's entries in order.
    @Test(arguments: StoreKind.allCases) func concurrentInstancesClaimEachEntryOnceInOrder(_ kind: StoreKind) async throws {
        let location = try kind.freshLocation()
        let stores = [try BridgeStore(path: location), try BridgeStore(path: location)]
        let lanes = (0..<4).map { lane("l\($0)") }
        try stores[0].transaction { tx in
            for n in 0..<50 {
                for lane in lanes {
                    try tx.enqueue(lane: lane, sourceBackend: "wk", sourceEventID: EventID("\(lane)-\(n)"), kind: "send", payload: Data(), at: 1)
                }
            }
        }
        let claims = try await withThrowingTaskGroup(of: [(String, Int64)].self) { group in
            for (index, store) in stores.enumerated() {
                group.addTask {
                    let owner = "I\(index)"
                    var taken: [(String, Int64)] = []
                    var idle = 0
                    while idle < 3 {
                        var progressed = false
                        for lane in lanes {
                            let now = Int64(Date().timeIntervalSince1970 * 1000)
                            let head = try await store.groupedTransaction { tx -> OutboxEntry? in
                                guard try tx.acquireLease(lane.leaseName, owner: owner, until: now + 60_000, now: now),
                                      let head = try tx.claimHead(of: lane, dueBy: now, leaseOwner: owner) else { return nil }
                                try tx.complete(head.id, at: now)
                                // Give the lane up after each entry, so the two handles alternate on it.
                                try tx.releaseLease(lane.leaseName, owner: owner)
                                return head
                            }
                            if let head {
                                taken.append((lane.description, head.id))
                                progressed = true
                            }
                        }
                        idle = progressed ? 0 : idle + 1
                    }
                    return taken
                }
            }
            var all: [[(String, Int64)]] = []
            for try await claims in group { all.append(claims) }
            return all
        }
        let all = claims.flatMap { $0 }
        #expect(all.count == 200 && Set(all.map(\.1)).count == 200, "each entry claimed once: \(all.count) claims")
        #expect(claims.allSatisfy { !$0.isEmpty }, "both instances worked")
        for claimsOfOne in claims {
            for lane in lanes.map(\.description) {
                let ids = claimsOfOne.filter { $0.0 == lane }.map(\.1)
                #expect(ids == ids.sorted(), "an instance takes a lane's entries in order")
            }
        }
        #expect(try stores[1].read { try $0.count(state: .pending) } == 0)
    }

    @Test func storeLocationsParseAndNeverShowThePassword() throws {
        let sqlite = try StoreLocation(parsing: "/var/lib/imbridge/bridge.sqlite", environment: [:])
        #expect(sqlite.kind == .sqlite && sqlite.path == "/var/lib/imbridge/bridge.sqlite")
        let inline = try StoreLocation(parsing: "postgres://bridge:s3cr%40t@db.example:5433/imb?schema=east", environment: [:])
        #expect(inline.kind == .postgres && inline.host == "db.example" && inline.port == 5433 && inline.user == "bridge")
        #expect(inline.password == "s3cr@t" && inline.database == "imb" && inline.schema == "east")
        #expect(inline.redacted == "postgres://bridge:***@db.example:5433/imb?schema=east" && !inline.description.contains("s3cr"))
        let fromEnvironment = try StoreLocation(parsing: "postgresql://bridge@db/imb", environment: ["IMBRIDGE_STORE_PASSWORD": "envpw"])
        #expect(fromEnvironment.password == "envpw" && fromEnvironment.port == 5432 && !fromEnvironment.redacted.contains("envpw"))
        #expect(StoreLocation.redact("postgres://u:pw@h/d") == "postgres://u:***@h/d")
        for bad in ["postgres://db/imb", "postgres://u@db/", "postgres://u@db/imb?schema=a;drop", "postgres://u:pw@db/imb?tls=require"] {
            #expect { try StoreLocation(parsing: bad, environment: [:]) } throws: { error in
                (error as? IMError)?.code == .invalidArgument && !"\(error)".contains(":pw@")
            }
        }
    }
}
