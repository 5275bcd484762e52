import Foundation
import IMCore
import IMStore
import Synchronization
import Testing

/// Leases (docs/high-availability.md), through two store handles on the same store, as two bridge
/// instances would hold them.
@Suite struct LeaseTests {
    func lane(_ id: String) -> LaneKey { LaneKey(backend: "rc", conversation: .group(GroupID(id))) }

    /// Real milliseconds: PostgreSQL counts leases on its own clock, whatever `now` a caller passes.
    static func clockMs() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// The lease length of the tests that wait for one to expire: long enough for a few transactions on a
    /// loaded machine.
    static let shortTTL: Int64 = 2_000

    /// Waits until a lease of `ttlMs` taken before this call has expired on any store's clock.
    static func outlive(_ ttlMs: Int64) async throws { try await Task.sleep(nanoseconds: UInt64(ttlMs + 150) * 1_000_000) }

    @Test(arguments: StoreKind.allCases) func aLeaseIsExclusiveUntilItExpiresOrIsReleased(_ kind: StoreKind) async throws {
        let location = try kind.freshLocation()
        let a = try BridgeStore(path: location), b = try BridgeStore(path: location)
        let ttl = Self.shortTTL
        func take(_ store: BridgeStore, _ name: String, _ owner: String) throws -> LeaseFence? {
            let now = Self.clockMs()
            return try store.transaction { try $0.takeLease(name, owner: owner, ttlMs: ttl, now: now) }
        }
        let first = try #require(try take(a, "lane:x", "A"))
        #expect(try take(b, "lane:x", "B") == nil, "A holds it")
        #expect(try b.read { try $0.leaseHolder("lane:x", at: Self.clockMs()) } == "A")
        #expect(try take(a, "lane:x", "A") == first, "the holder renews it and keeps its tenure (same token)")
        try await Self.outlive(ttl)
        let taken = try #require(try take(b, "lane:x", "B"), "expired: taken over")
        #expect(taken.token != first.token, "a new tenure")
        #expect(try a.read { try $0.leaseHolder("lane:x", at: Self.clockMs()) } == "B")
        #expect(try a.transaction { try $0.renewLeases(owner: "A", ttlMs: ttl, now: Self.clockMs()) }.isEmpty, "A holds nothing any more")
        try a.transaction { try $0.releaseLease("lane:x", owner: "A") }
        #expect(try a.read { try $0.leaseHolder("lane:x", at: Self.clockMs()) } == "B", "releasing someone else's lease does nothing")
        #expect(try b.transaction { try $0.renewLeases(owner: "B", ttlMs: ttl, now: Self.clockMs()) } == [taken])
        try b.transaction { try $0.releaseLease("lane:x", owner: "B") }
        #expect(try a.read { try $0.leaseHolder("lane:x", at: Self.clockMs()) } == nil)
        let again = try #require(try take(a, "lane:x", "A"), "released: free at once")
        #expect(again.token != first.token, "a tenure after a release is a new one: the old fence does not hold")
        #expect(try a.read { try $0.holds(again) } && !(try a.read { try $0.holds(first) }))
        #expect(try take(b, "leader", "B") != nil)
        #expect(try b.transaction { try $0.dropAllLeases() } == 2)
        #expect(try b.read { try $0.leaseHolder("lane:x", at: Self.clockMs()) } == nil && b.read { try $0.leaseHolder("leader", at: Self.clockMs()) } == nil)
    }

    /// On PostgreSQL a lease is counted on the server's clock: a caller whose `now` lags (an instance
    /// paused between reading its clock and sending the statement, or a host whose clock is behind)
    /// neither keeps a lease past its expiry nor sees one as held. SQLite, one machine, counts on the caller's.
    @Test func postgresCountsLeasesOnItsOwnClock() async throws {
        let location = try StoreKind.postgres.freshLocation()
        let a = try BridgeStore(path: location), b = try BridgeStore(path: location)
        let stale: Int64 = 1_000   // 1970: far behind the server
        #expect(try a.transaction { try $0.takeLease("lane:y", owner: "A", ttlMs: Self.shortTTL, now: stale) } != nil)
        #expect(try b.transaction { try $0.takeLease("lane:y", owner: "B", ttlMs: Self.shortTTL, now: stale) } == nil, "held for 2 s of the server's time")
        try await Self.outlive(Self.shortTTL)
        #expect(try b.read { try $0.leaseHolder("lane:y", at: stale) } == nil, "expired on the server's clock, whatever the caller says")
        #expect(try b.transaction { try $0.takeLease("lane:y", owner: "B", ttlMs: 60_000, now: stale) } != nil)
    }

    /// The writes that record a lane's work are fenced by the tenure that claimed it: once another owner
    /// took the lease over, the old holder's finish, reschedule and dead letter write nothing — even when it
    /// resumes with a stale clock — and the new holder's do.
    @Test(arguments: StoreKind.allCases) func writesAreFencedByTheTenureThatClaimed(_ kind: StoreKind) async throws {
        let location = try kind.freshLocation()
        let a = try BridgeStore(path: location), b = try BridgeStore(path: location)
        let g = lane("g")
        let ids = try a.transaction { tx in
            try (0..<3).map { try tx.enqueue(lane: g, sourceBackend: "wk", sourceEventID: EventID("e\($0)"), kind: "send", payload: Data([1]), at: 1) }
        }
        let ttl = Self.shortTTL
        let now = Self.clockMs()
        let (fenceA, head) = try a.transaction { tx in
            (try #require(try tx.takeLease(g.leaseName, owner: "A", ttlMs: ttl, now: now)), try tx.claimHead(of: g, dueBy: now))
        }
        #expect(head?.id == ids[0])
        try await Self.outlive(ttl)
        let later = Self.clockMs()
        let fenceB = try #require(try b.transaction { try $0.takeLease(g.leaseName, owner: "B", ttlMs: 60_000, now: later) })
        let mapping = StoreTransaction.Mapping(source: ("wk", "m0", .group("g")), target: ("rc", "late", .group("g")))
        #expect(throws: StoreTransaction.LeaseLost.self) {
            try a.transaction { try $0.finish(ids[0], lane: g, at: now, mapping: mapping, claimNext: true, fence: fenceA) }
        }
        #expect(try a.read { try $0.head(of: g) }?.id == ids[0], "A's late finish completed nothing")
        #expect(try a.read { try $0.mapped("m0", from: "wk", to: "rc") } == nil, "and mapped nothing")
        #expect(try !a.transaction { try $0.reschedule(ids[0], at: now + 10_000, error: "late", fence: fenceA) })
        #expect(try !a.transaction { try $0.markDead(ids[0], error: "late", at: now, fence: fenceA) })
        let stillHead = try #require(try a.read { try $0.head(of: g) })
        #expect(stillHead.state == .pending && stillHead.nextAttemptAt <= later && stillHead.lastError == nil, "nothing A wrote stuck")
        #expect(try b.read { try $0.leaseHolder(g.leaseName, at: later) } == "B", "A's writes left B's lease alone")
        // B runs the entry (its claim counted; it looks for an earlier copy) and records it.
        let taken = try #require(try b.transaction { try $0.claimHead(of: g, dueBy: later, leaseOwner: "B") })
        #expect(taken.id == ids[0] && taken.attempts == 1)
        let next = try b.transaction { try $0.finish(ids[0], lane: g, at: later, mapping: mapping, claimNext: true, fence: fenceB) }
        #expect(next?.id == ids[1])
        #expect(try b.read { try $0.mapped("m0", from: "wk", to: "rc") }?.toMessage == "late")
        #expect(try b.transaction { try $0.reschedule(ids[1], at: later + 5, error: "429", fence: fenceB) })
        #expect(try b.transaction { try $0.markDead(ids[1], error: "refused", at: later, fence: fenceB) })
        #expect(try b.read { try $0.count(state: .dead) } == 1)
    }

    @Test(arguments: StoreKind.allCases) func claimsAreFencedByTheLaneLease(_ kind: StoreKind) async throws {
        let location = try kind.freshLocation()
        let a = try BridgeStore(path: location), b = try BridgeStore(path: location)
        let ids = try a.transaction { tx in
            try (0..<3).map { try tx.enqueue(lane: lane("g"), sourceBackend: "wk", sourceEventID: EventID("e\($0)"), kind: "send", payload: Data([1]), at: 1) }
        }
        let ttl = Self.shortTTL
        #expect(try a.transaction { try $0.takeLease(lane("g").leaseName, owner: "A", ttlMs: ttl, now: Self.clockMs()) != nil })
        #expect(try b.transaction { try $0.claimHead(of: lane("g"), dueBy: Self.clockMs(), leaseOwner: "B") } == nil, "B does not hold the lane")
        let first = try a.transaction { try $0.claimHead(of: lane("g"), dueBy: Self.clockMs(), leaseOwner: "A") }
        #expect(first?.id == ids[0] && first?.attempts == 0)
        #expect(try a.read { try $0.head(of: lane("g")) }?.attempts == 1, "the claim counted the attempt")
        // A's lease lapses; B takes the lane over and finds the claimed head still pending: it goes first.
        try await Self.outlive(ttl)
        #expect(try a.transaction { try $0.claimHead(of: lane("g"), dueBy: Self.clockMs(), leaseOwner: "A") } == nil, "expired: A may not claim")
        #expect(try b.transaction { try $0.takeLease(lane("g").leaseName, owner: "B", ttlMs: 60_000, now: Self.clockMs()) != nil })
        let taken = try b.transaction { try $0.claimHead(of: lane("g"), dueBy: Self.clockMs(), leaseOwner: "B") }
        #expect(taken?.id == ids[0] && taken?.attempts == 1, "the takeover resumes the head in hand, knowing it may have been sent")
        #expect(try a.transaction { try $0.claimHead(of: lane("g"), dueBy: Self.clockMs(), leaseOwner: "A") } == nil)
        try b.transaction { try $0.complete(ids[0], at: Self.clockMs()) }
        #expect(try b.transaction { try $0.claimHead(of: lane("g"), dueBy: Self.clockMs(), leaseOwner: "B") }?.id == ids[1], "in order")
    }

    @Test(arguments: StoreKind.allCases) func theSchedulerSeesOnlyLanesItMayWork(_ kind: StoreKind) async throws {
        let store = try BridgeStore(path: try kind.freshLocation())
        let ttl = Self.shortTTL
        let start = Self.clockMs()
        try store.transaction { tx in
            for name in ["a", "b", "c"] {
                try tx.enqueue(lane: lane(name), sourceBackend: "wk", sourceEventID: EventID(name), kind: "send", payload: Data(), at: 1)
            }
            _ = try tx.takeLease(lane("a").leaseName, owner: "A", ttlMs: ttl, now: start)
            _ = try tx.takeLease(lane("b").leaseName, owner: "B", ttlMs: ttl, now: start)
        }
        func due(_ owner: String?, at now: Int64) throws -> [String] {
            let heads = try store.read { try $0.dueLanes(at: now, leaseOwner: owner) }.map { $0.lane }
            // The scheduler's form, without the heads: the same lanes.
            #expect(try store.read { try $0.dueLaneKeys(at: now, leaseOwner: owner) } == heads)
            return heads.map { $0.conversation.description }
        }
        #expect(try due("A", at: Self.clockMs()) == ["group:a", "group:c"], "its own and free lanes, not B's")
        #expect(try due("B", at: Self.clockMs()) == ["group:b", "group:c"])
        #expect(try due(nil, at: Self.clockMs()) == ["group:a", "group:b", "group:c"])
        try await Self.outlive(ttl)
        #expect(try due("C", at: Self.clockMs()) == ["group:a", "group:b", "group:c"], "expired leases do not hide lanes")
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
        // Both start claiming only once both run: on a busy machine the second task could otherwise begin
        // after the first had claimed everything (the test's concurrency never exercised).
        let ready = StartLatch()
        let claims = try await withThrowingTaskGroup(of: [(String, Int64)].self) { group in
            for (index, store) in stores.enumerated() {
                group.addTask {
                    let owner = "I\(index)"
                    ready.count.withLock { $0 += 1 }
                    while ready.count.withLock({ $0 }) < stores.count { try await Task.sleep(nanoseconds: 1_000_000) }
                    var taken: [(String, Int64)] = []
                    var idle = 0
                    while idle < 3 {
                        var progressed = false
                        for lane in lanes {
                            let now = Int64(Date().timeIntervalSince1970 * 1000)
                            let head = try await store.groupedTransaction { tx -> OutboxEntry? in
                                guard try tx.takeLease(lane.leaseName, owner: owner, ttlMs: 60_000, now: now) != nil,
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

    /// `foreignLeases`: the rows under a prefix that another owner has, expired or not.
    @Test(arguments: StoreKind.allCases) func foreignLeasesListOtherOwnersRowsUnderAPrefix(_ kind: StoreKind) throws {
        let store = try BridgeStore(path: try kind.freshLocation())
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try store.transaction { tx in
            _ = try tx.takeLease("hold:wk/group:a", owner: "me", ttlMs: 60_000, now: now)
            _ = try tx.takeLease("hold:wk/group:b", owner: "other", ttlMs: 60_000, now: now)
            _ = try tx.takeLease("hold:wk/group:c", owner: "gone", ttlMs: 1, now: now - 10_000)
            _ = try tx.takeLease("lane:rc/group:b", owner: "other", ttlMs: 60_000, now: now)
        }
        let foreign = try store.read { try $0.foreignLeases(prefix: "hold:", notOwnedBy: "me", limit: 10) }
        #expect(foreign.sorted() == ["hold:wk/group:b", "hold:wk/group:c"])
        #expect(try store.read { try $0.foreignLeases(prefix: "hold:", notOwnedBy: "me", limit: 1) }.count == 1)
        #expect(try store.read { try $0.foreignLeases(prefix: "hold:", notOwnedBy: "nobody", limit: 10) }.count == 3)
    }
}

/// The writes on a side session (lease renewals, the readiness probe) come on their own clocks: the
/// store counts them apart, so that a count per relayed message can leave them out.
@Suite struct SideSessionCountTests {
    @Test(arguments: StoreKind.allCases) func sideWritesAreCountedApartAndNothingElseIs(_ kind: StoreKind) async throws {
        let store = try BridgeStore(path: try kind.freshLocation())
        let counters = store.counters
        let now = LeaseTests.clockMs()
        _ = try await store.groupedTransaction { try $0.takeLease("lane:x", owner: "A", ttlMs: 60_000, now: now) }

        let before = (counters.statements, counters.transactions, counters.sideStatements, counters.sideTransactions)
        let renewed = try await store.sideTransaction(.leases) { try $0.renewLeases(owner: "A", ttlMs: 60_000, now: now + 1) }
        #expect(renewed.map(\.name) == ["lane:x"])
        let side = (counters.sideStatements - before.2, counters.sideTransactions - before.3)
        #expect(side.1 == 1)
        // BEGIN, the renewal, COMMIT at least; and nothing but the side write ran meanwhile.
        #expect(side.0 >= 3 && side.0 == counters.statements - before.0, "side statements \(side.0)")
        #expect(counters.transactions - before.1 == 1)

        // Grouped writes and reads, also while a side write runs, are never counted as side.
        let middle = (counters.sideStatements, counters.sideTransactions, counters.statements)
        async let reads: Void = {
            for _ in 0..<50 { _ = try await store.reading { try $0.leaseHolder("lane:x", at: now) } }
        }()
        for round in 0..<5 {
            _ = try await store.groupedTransaction { try $0.takeLease("lane:y\(round)", owner: "A", ttlMs: 60_000, now: now) }
            _ = try await store.sideTransaction(.leases) { try $0.renewLeases(owner: "A", ttlMs: 60_000, now: now + 2) }
        }
        try await reads
        #expect(counters.sideTransactions - middle.1 == 5)
        #expect(counters.statements - middle.2 > counters.sideStatements - middle.0 + 50, "reads and grouped writes counted, not as side")
        #expect(counters.sideStatements - middle.0 == 5 * side.0 || kind == .postgres,
                "each renewal takes the same statements on SQLite")
    }
}

/// How many tasks have started (`concurrentInstancesClaimEachEntryOnceInOrder`).
private final class StartLatch: Sendable {
    let count = Mutex(0)
}
