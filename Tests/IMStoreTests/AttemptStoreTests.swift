import Foundation
import IMCore
@_spi(Testing) import IMStore
import Testing

/// The failed-attempt rows and the trace reads (`imbridge trace`), on both implementations: attempts kept
/// in order, the reads that find a message by its id on either side, and retention pruning that keeps
/// the attempts of pending and dead entries.
@Suite struct AttemptStoreTests {
    let lane = LaneKey(backend: "rc", conversation: .group("g1"))

    @Test(arguments: StoreKind.allCases) func attemptsAndTraceReadsFindOneMessageByEitherId(_ kind: StoreKind) throws {
        let store = try BridgeStore(path: try kind.freshLocation())
        defer { store.close() }
        let (sent, dead) = try store.transaction { tx -> (Int64, Int64) in
            _ = try tx.recordEvent("wk", "msg:m1", kind: "message", at: 100)
            _ = try tx.recordEvent("wk", "msg:m2", kind: "message", at: 110)
            _ = try tx.recordEvent("wk", "msg:xm1", kind: "message", at: 120)   // another message ending in "m1"
            return (try tx.enqueue(lane: lane, sourceBackend: "wk", sourceEventID: "msg:m1", kind: "send", payload: Data("p".utf8), at: 100),
                    try tx.enqueue(lane: lane, sourceBackend: "wk", sourceEventID: "msg:m2", kind: "send", payload: Data("p".utf8), at: 110))
        }
        try store.transaction { tx in
            try tx.recordAttempt(AttemptRecord(outboxID: sent, attempt: 1, at: 150, outcome: .retry, errorClass: "http_5xx", errorCode: "unavailable",
                                               vendorCode: "503", error: "WuKong 503", retryAt: 250, instance: "a"))
            try tx.complete(sent, at: 260)
            try tx.map(source: ("wk", "m1", .group("g1")), target: ("rc", "R1", .group("g1")), sentAt: 90, at: 260)
            try tx.recordAttempt(AttemptRecord(outboxID: dead, attempt: 1, at: 160, outcome: .dead, errorClass: "invalid_argument",
                                               error: String(repeating: "x", count: 900), instance: "b"))
            try tx.markDead(dead, error: "refused", at: 160)
        }
        let ledger = try store.read { try $0.ledgerRecords(matching: "m1") }
        #expect(ledger.map(\.eventID) == ["msg:m1"], "a suffix match only after a colon")
        let traced = try store.read { try $0.tracedEntries(matching: "m1") }
        #expect(traced.map(\.entry.id) == [sent] && traced.first?.finishedAt == 260)
        let attempts = try store.read { try $0.attempts(of: [sent, dead]) }
        #expect(attempts.map(\.outcome) == [.retry, .dead] && attempts.first?.retryAt == 250 && attempts.first?.vendorCode == "503")
        #expect(attempts.last?.error.count == 500 && attempts.last?.retryAt == nil && attempts.last?.instance == "b")
        let bySource = try store.read { try $0.mappingRecords(of: "m1") }
        let byCopy = try store.read { try $0.mappingRecords(of: "R1") }
        #expect(bySource.count == 2 && byCopy.count == 2, "both rows name both ids")
        #expect(bySource.contains { $0.mapping.bridgeCreated && $0.mapping.toMessage == "R1" && $0.sourceTime == 90 })
        let window = try store.read { try $0.mappingRecords(in: .group("g1"), on: "rc", from: 0, to: 1000, limit: 10) }
        #expect(window.map(\.mapping.toMessage) == ["R1"], "the copy's row, in its conversation on rc")
        let created = try store.read { try $0.tracedEntries(createdFrom: 105, to: 200, limit: 10) }
        #expect(created.map(\.entry.id) == [dead])
        // Retention: the delivered entry's attempt goes with it; the dead letter's stays.
        let pruned = try store.transaction { try $0.prune(before: 10_000, limit: 100) }
        #expect(pruned.attempts == 1 && pruned.outbox == 1)
        #expect(try store.read { try $0.attempts(of: [sent, dead]) }.map(\.outboxID) == [dead])
    }

    /// Who took an event in is kept on its ledger row, by either way of recording (one event, a callback's
    /// batch); a row recorded without it reads as not known, and a duplicate keeps the first recording's.
    @Test(arguments: StoreKind.allCases) func ledgerRowsKeepTheListenerAndInstance(_ kind: StoreKind) throws {
        let store = try BridgeStore(path: try kind.freshLocation())
        defer { store.close() }
        let callback = EventOrigin(listener: "http://127.0.0.1:8080", instance: "a-1-x")
        try store.transaction { tx in
            _ = try tx.recordEvent("wk", "msg:o1", kind: "message", at: 100, origin: callback)
            _ = try tx.recordEvents([.init(backend: "wk", eventID: "msg:o2", kind: "message", message: "o2"),
                                     .init(backend: "wk", eventID: "msg:o3", kind: "message", message: nil)], at: 110,
                                    origin: EventOrigin(listener: EventOrigin.catchUp, instance: "b-2-y"))
            _ = try tx.recordEvent("wk", "msg:o4", kind: "message", at: 120)
            _ = try tx.recordEvents([.init(backend: "wk", eventID: "msg:o1", kind: "message", message: "o1")], at: 130,
                                    origin: EventOrigin(listener: EventOrigin.poll, instance: "c"))
        }
        func origin(_ id: String) throws -> EventOrigin?? { try store.read { try $0.ledgerRecords(matching: id) }.first.map(\.origin) }
        #expect(try origin("o1") == .some(callback), "a duplicate does not overwrite the first recording")
        #expect(try origin("o2") == .some(EventOrigin(listener: "catch-up", instance: "b-2-y")))
        #expect(try origin("o3") == .some(EventOrigin(listener: "catch-up", instance: "b-2-y")))
        #expect(try origin("o4") == .some(nil))
    }
}
