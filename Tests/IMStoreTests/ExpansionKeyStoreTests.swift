import Foundation
import IMCore
import IMStore
import Testing

/// The expansion keys kept next to the id map (schema v7, earlier writes v12): every field round-trips on both stores,
/// including an unknown slot told apart from a slot known to be absent, and a write replaces a key.
@Suite struct ExpansionKeyStoreTests {
    @Test(arguments: StoreKind.allCases) func keysRoundTripAndReplace(_ kind: StoreKind) throws {
        let path = try kind.freshLocation()
        let store = try BridgeStore(path: path)
        let status = ExpansionKeyRecord(key: "status", value: "已支付", version: 1_767_225_600_123, origin: "rc",
                                        held: .known("已支付"), heldAt: 1_767_225_600_123, written: .unknown)
        let removed = ExpansionKeyRecord(key: "订单状态", value: nil, version: 42, origin: "wk", held: .known(nil), written: .known(nil))
        let fresh = ExpansionKeyRecord(key: "k")
        try store.transaction { try $0.putExpansionKeys([status, removed, fresh], of: "m1", on: "wk") }
        let reopened = try BridgeStore(path: path)
        let read = try reopened.read { try $0.expansionKeys(of: "m1", on: "wk") }
        #expect(read == ["status": status, "订单状态": removed, "k": fresh])
        #expect(read["k"]?.version == .min && read["k"]?.isDecided == false)
        #expect(try reopened.read { try $0.expansionKeys(of: "m1", on: "rc") }.isEmpty, "the backend is part of the key")

        var changed = status
        changed.value = "已发货"
        changed.version += 1
        changed.written = .known("已发货")
        try reopened.transaction { try $0.putExpansionKeys([changed], of: "m1", on: "wk") }
        let after = try reopened.read { try $0.expansionKeys(of: "m1", on: "wk") }
        #expect(after["status"] == changed && after.count == 3)

        // Earlier writes still awaiting their echoes (schema v12), removals among them, and back to none.
        changed.earlierWrites = ["已支付", nil, "a \"quoted\" [value]"]
        try reopened.transaction { try $0.putExpansionKeys([changed], of: "m1", on: "wk") }
        #expect(try reopened.read { try $0.expansionKeys(of: "m1", on: "wk") }["status"] == changed)
        changed.earlierWrites = []
        try reopened.transaction { try $0.putExpansionKeys([changed], of: "m1", on: "wk") }
        #expect(try reopened.read { try $0.expansionKeys(of: "m1", on: "wk") }["status"] == changed)
    }

    /// The bridge's writes of one key and their echoes, in any order: a newer write keeps the older one
    /// awaiting its echo (a vendor can deliver it after the next write), each echo is told apart from a
    /// change of the copy once, and at most `earlierWritesLimit` earlier writes are kept.
    @Test func writesAwaitTheirEchoesInAnyOrder() {
        var record = ExpansionKeyRecord(key: "k")
        record.markWritten("v1")
        record.markWritten("v2")
        record.markWritten(nil)
        #expect(record.written == .known(nil) && record.earlierWrites == ["v1", "v2"])
        #expect(record.takeEcho(of: "v2") == .earlier)
        #expect(record.takeEcho(of: "v2") == .none, "an echo is taken once: the same value again is a change")
        #expect(record.takeEcho(of: nil) == .newest && record.written == .unknown)
        #expect(record.takeEcho(of: "v1") == .earlier && record.earlierWrites.isEmpty)
        record.markWritten("same")
        record.markWritten("same")
        #expect(record.earlierWrites.isEmpty, "writing the awaited value again awaits one echo")
        for n in 1...20 { record.markWritten("w\(n)") }
        #expect(record.earlierWrites.count == ExpansionKeyRecord.earlierWritesLimit && record.earlierWrites.last == "w19")
        #expect(record.takeEcho(of: "w1") == .none, "the oldest beyond the limit are forgotten")
    }

    /// The order of converged states: higher version wins; an equal version is decided by backend id.
    @Test func convergedStatesAreOrdered() {
        var record = ExpansionKeyRecord(key: "k", value: "a", version: 10, origin: "rc")
        #expect(!record.isBeaten(by: 9, origin: "wk"))
        #expect(record.isBeaten(by: 10, origin: "wk") && !record.isBeaten(by: 10, origin: "jm"))
        record.adopt(ExpansionKeyRecord(key: "k", value: nil, version: 11, origin: "jm"))
        #expect(record.value == nil && record.version == 11 && record.origin == "jm")
        record.adopt(ExpansionKeyRecord(key: "k", value: "late", version: 3, origin: "wk"))
        #expect(record.value == nil, "a late update does not bring back a removed key")
    }
}
