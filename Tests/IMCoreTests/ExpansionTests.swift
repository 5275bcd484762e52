import IMCore
import IMTesting
import Testing

@Suite struct ExpansionTests {
    @Test func changesCarryOnlyWhatChangedWithVersions() {
        var expansion = Expansion(initial: ["status": "pending"], version: 1)
        let delta = expansion.apply(.set(["status": "pending", "paid": "no"]))
        #expect(delta.set == ["paid": "no"])
        #expect(delta.version == 2)
        #expect(expansion.entries["status"]?.version == 1)
        #expect(expansion.entries["paid"]?.version == 2)
        let none = expansion.apply(.remove(["absent"]))
        #expect(none.isEmpty)
        #expect(expansion.version == 2, "an empty change gets no version")
        let removed = expansion.apply(.remove(["paid", "absent"]))
        #expect(removed.removed == ["paid"] && removed.version == 3)
        let cleared = expansion.apply(.clear)
        #expect(cleared.cleared && cleared.removed == ["status"])
        #expect(expansion.values.isEmpty)
    }

    @Test func mergeIsLastWriterWinsPerKey() {
        var replica = Expansion(entries: ["a": ExpansionEntry(value: "new", version: 5), "b": ExpansionEntry(value: "x", version: 1)])
        replica.merge(ExpansionDelta(version: 3, set: ["a": "stale", "b": "y", "c": "z"]))
        #expect(replica.values == ["a": "new", "b": "y", "c": "z"])
        replica.merge(ExpansionDelta(version: 4, removed: ["a", "c"]))
        #expect(replica.values == ["a": "new", "b": "y"], "a removal older than the key's write loses")
        replica.merge(ExpansionDelta(version: 6, cleared: true))
        #expect(replica.values.isEmpty)
        #expect(replica.version == 6)
    }

    static let limits = ExpansionLimits.rongCloud

    func refusal(_ change: ExpansionChange, current: Expansion = Expansion(), caller: ExpansionLimits.Caller = .server) -> IMError? {
        do {
            try Self.limits.validate(change, current: current, caller: caller)
            return nil
        } catch {
            return error as? IMError
        }
    }

    @Test func keyLengthAndCharset() {
        let long = String(repeating: "k", count: 33)
        let error = refusal(.set(["fine": "1", long: "v"]))
        #expect(error?.code == .expansionLimitExceeded)
        #expect(error?.details == ["limit": "key_length", "key": long])
        #expect(refusal(.set([String(repeating: "k", count: 32): "v"])) == nil)
        #expect(refusal(.set(["状态": "v"]))?.details["limit"] == "key_charset")
        #expect(refusal(.set(["a b": "v"]))?.details["key"] == "a b")
        #expect(refusal(.set(["Az09+=-_": "v"])) == nil)
        #expect(refusal(.set(["": "v"]))?.details["limit"] == "key_empty")
    }

    @Test func valueLength() {
        #expect(refusal(.set(["k": String(repeating: "值", count: 4096)])) == nil)
        let error = refusal(.set(["k": String(repeating: "v", count: 4097)]))
        #expect(error?.details == ["limit": "value_length", "key": "k"])
    }

    @Test func keysPerChangeDependOnTheCaller() {
        let twentyOne = Dictionary(uniqueKeysWithValues: (0..<21).map { (String(format: "k%02d", $0), "v") })
        #expect(refusal(.set(twentyOne), caller: .client)?.details == ["limit": "keys_per_change", "key": "k20"])
        #expect(refusal(.set(twentyOne), caller: .server) == nil)
        let hundredOne = Dictionary(uniqueKeysWithValues: (0..<101).map { (String(format: "k%03d", $0), "v") })
        #expect(refusal(.set(hundredOne), caller: .server)?.details["limit"] == "keys_per_change")
        #expect(refusal(.remove((0..<101).map { "k\($0)" }), caller: .server)?.details["limit"] == "keys_per_change")
    }

    @Test func keysPerMessage() {
        let full = Expansion(initial: Dictionary(uniqueKeysWithValues: (0..<299).map { ("e\($0)", "v") }))
        #expect(refusal(.set(["e0": "overwrite", "new1": "v"]), current: full) == nil, "overwrites do not count")
        let error = refusal(.set(["new1": "v", "new2": "v"]), current: full)
        #expect(error?.details == ["limit": "keys_per_message", "key": "new2"])
    }

    @Test func emptyChangesAreInvalid() {
        #expect(refusal(.set([:]))?.code == .invalidArgument)
        #expect(refusal(.remove([]))?.code == .invalidArgument)
        #expect(refusal(.clear) == nil)
    }
}

@Suite struct CapabilitiesTests {
    @Test func presetsCarryTheVendorFigures() {
        #expect(Capabilities.jMessage.recallWindowMs == 180_000)
        #expect(Capabilities.nim.recallWindowMs == 120_000)
        #expect(Capabilities.rongCloud.recallWindowMs == nil)
        #expect(Capabilities.rongCloud.expansionLimits == .rongCloud)
        #expect(Capabilities.nim.textMaxLength == 5000)
        #expect(Capabilities.jMessage.support(.sendAsAnyUser) == .fallback)
        #expect(Capabilities.nim.support(.expansion) == .fallback)
        #expect(Capabilities.nim.rateLimit(for: "msg/sendMsg")?.blockMs == 10_000)
        #expect(Capabilities.rongCloud.rateLimit(for: "message/group/publish")?.perSecond == 20)
        #expect(Capabilities.preset(named: "RongCloud") == .rongCloud && Capabilities.preset(named: "rc") == nil)
        #expect(Capabilities.allPresets.count == 4)
    }

    @Test func requireRefusesNonNativeFeatures() {
        #expect { try Capabilities.rongCloud.require(.edit) } throws: {
            ($0 as? IMError)?.code == .unsupported && ($0 as? IMError)?.details["feature"] == "edit"
        }
        #expect(throws: Never.self) { try Capabilities.wukong.require(.edit) }
    }

    @Test func textLengthIsCountedInTheVendorsUnit() {
        let jm = Capabilities.jMessage
        #expect(jm.length(of: "中文") == 6)
        #expect(Capabilities.nim.length(of: "中文") == 2)
        #expect { try jm.check(.text(String(repeating: "中", count: 1195))) } throws: { ($0 as? IMError)?.details["limit"] == "text_length" }
        #expect(throws: Never.self) { try jm.check(.text(String(repeating: "中", count: 1194))) }
        #expect { try jm.check(.command(CommandContent(name: "x"))) } throws: { ($0 as? IMError)?.code == .unsupported }
    }
}
