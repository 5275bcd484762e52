import Foundation
import IMCore
import IMOutbox
import IMStore
import PostgresTestSupport
import Synchronization
import Testing

/// Two instances on one PostgreSQL store change the same copy's expansion records at once: one plans the
/// write of a message's initial values to its copy (a NIM carrier) while the other takes in the source's
/// first read of those values as a change. Each reads the records, changes them and writes them back; the
/// later write undid the earlier one's mark of what the bridge wrote, so the carrier's completion did not
/// record the copy as holding the value, and the change's own entry sent a second, identical carrier
/// (seed 50, docs/reliability.md). The records of a message are locked for such a read-change-write.
@Suite struct ExpansionKeysTwoInstancesTests {
    let g1 = ConversationRef.group("g1")
    let yxGroup = ConversationRef.group("1300001")

    @Test func aWriteMarkSurvivesTheOtherInstancesIntakeOfTheSameValue() async throws {
        let location = try TestPostgres.freshURL("expansion_lock")
        let a = try BridgeStore(path: location), b = try BridgeStore(path: location)
        let routes = RouteTable([Route(from: try RouteEndpoint(parsing: "wk:group:*"), to: try RouteEndpoint(parsing: "yx:group:*"),
                                       direction: .forward)])
        let source = MessageID("wk-1"), copy = MessageID("yx-1")
        try a.transaction { tx in
            try tx.map(source: ("wk", source, g1), target: ("yx", copy, yxGroup), sentAt: 1, sender: "bob", at: 1)
        }
        let initial = ExpansionDelta(version: 1, set: ["n": "1"])
        let planned = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let statements = DispatchGroup()

        // Instance A: the lane plans the initial values' carrier and holds its transaction open.
        let planWrite = Mutex(ExpansionDelta(version: 0))
        let failures = Mutex<[String]>([])
        statements.enter()
        Thread.detachNewThread {
            defer { statements.leave() }
            do {
                try a.transaction { tx in
                    let write = try ExpansionConvergence.plan(initial, source: source, on: "wk", copy: copy, on: "yx", tx)
                    planWrite.withLock { $0 = write }
                    planned.signal()
                    _ = release.wait(timeout: .now() + 20)
                }
            } catch { failures.withLock { $0.append("A: \(error)") } }
        }
        #expect(planned.wait(timeout: .now() + 20) == .success)

        // Instance B: the source's read of the same value, taken in as a change, meanwhile.
        statements.enter()
        Thread.detachNewThread {
            defer { statements.leave() }
            do {
                try b.transaction { tx in
                    _ = try ExpansionConvergence(routes: routes).intake(ExpansionDelta(version: 1_796_176_873_927, set: ["n": "1"]), of: source,
                                                                        on: "wk", in: g1, version: 1_796_176_873_927, tx)
                }
            } catch { failures.withLock { $0.append("B: \(error)") } }
        }
        // B has read what it reads and waits (for a lock, row or advisory) on A's open transaction.
        let waiting = try await eventually(20) {
            try TestPostgres.query(location, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'") != ["0"]
        }
        #expect(waiting, "instance B never waited for instance A's transaction")
        release.signal()
        #expect(statements.wait(timeout: .now() + 30) == .success)
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        let write = planWrite.withLock { $0 }
        #expect(write.set == ["n": "1"])

        // The carrier went through: the copy now holds the value, and the change's own entry writes nothing.
        try a.transaction { tx in try ExpansionConvergence.wrote(write, copy: copy, on: "yx", at: nil, tx) }
        let held = try a.read { try $0.expansionKeys(of: copy, on: "yx") }["n"]?.held
        #expect(held == .known("1"), "the copy's record after the carrier: \(String(describing: held))")
        let second = try a.transaction { tx in
            try ExpansionConvergence.plan(ExpansionDelta(version: 1_796_176_873_927, set: ["n": "1"]), source: source, on: "wk",
                                          copy: copy, on: "yx", tx)
        }
        #expect(second.isEmpty, "a second carrier of the same value: \(second)")
    }
}
