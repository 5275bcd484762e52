import IMAdapterKit
import IMBridgeApp
import IMCore
@testable import IMRelay
import Testing
@_spi(Testing) @testable import IMCatchUp
@testable import IMPositions

/// `catch_up:` parsing and the gate that orders live messages against catch-up (docs/architecture.md,
/// "Catch-up"). The end-to-end behaviour is in Tests/EndToEndTests/CatchUpEndToEndTests.swift.
@Suite struct CatchUpTests {
    static func config(_ catchUp: String, retention: String = "") -> String {
        """
        store: /tmp/imbridge.sqlite
        listen: 127.0.0.1:8090
        \(retention)
        backends:
          wk:
            adapter: wukong
          rc:
            adapter: rongcloud
        routes:
          - from: wk:group:*
            to: rc:group:*
        \(catchUp)
        """
    }

    @Test func defaultsAndDurations() throws {
        #expect(try BridgeConfig.parse(Self.config("")).catchUp == CatchUpSettings())
        let set = try BridgeConfig.parse(Self.config("catch_up:\n  max_age: 2h\n  max_messages_per_conversation: 50\n  interval: 1500ms\n"))
        #expect(set.catchUp == CatchUpSettings(enabled: true, maxAgeMs: 7_200_000, maxMessagesPerConversation: 50, intervalMs: 1500))
        #expect(try BridgeConfig.parse(Self.config("catch_up:\n  enabled: false\n  interval: 90\n")).catchUp
                == CatchUpSettings(enabled: false, intervalMs: 90_000))
    }

    @Test func badValuesAreRefusedWithTheirLine() throws {
        for (yaml, expected) in [
            ("catch_up:\n  max_age: soon\n", "catch_up.max_age"),
            ("catch_up:\n  interval: 10ms\n", "catch_up.interval"),
            ("catch_up:\n  max_messages_per_conversation: 0\n", "catch_up.max_messages_per_conversation"),
            ("catch_up:\n  every: 5m\n", "every"),
            ("catch_up:\n  max_age: 9d\n", "bridge.yaml:13: catch_up.max_age:"),
            ("catch_up:\n  max_age: 9d\n", "catch_up.max_age: must not exceed retention (7d)"),
            ("catch_up:\n  max_age: 9d\nretention: 8d\n", "catch_up.max_age: must not exceed retention (8d)"),
        ] {
            do {
                _ = try BridgeConfig.parse(Self.config(yaml))
                Issue.record("accepted \(yaml)")
            } catch let error as IMError {
                #expect(error.message.contains(expected), "\(yaml): \(error.message)")
            }
        }
        // A longer retention allows a longer max_age; retention 0 keeps the ledger for ever.
        #expect(try BridgeConfig.parse(Self.config("catch_up:\n  max_age: 9d\n", retention: "retention_hours: 240")).catchUp.maxAgeMs == 9 * 86_400_000)
        #expect(try BridgeConfig.parse(Self.config("catch_up:\n  max_age: 90d\n", retention: "retention_hours: 0")).catchUp.maxAgeMs == 90 * 86_400_000)
        #expect(try BridgeConfig.parse(Self.config("catch_up:\n  max_age: 9d\n", retention: "retention: 10d")).catchUp.maxAgeMs == 9 * 86_400_000)
    }

    static func message(_ seq: Int64, in group: String = "g1") -> IMEvent {
        let message = Message(id: MessageID("m\(seq)"), conversation: .group(GroupID(group)), sender: UserID("ann"),
                              sentAt: 1000 + seq, seq: seq, content: .text("\(seq)"))
        return IMEvent(eventID: EventID("msg:m\(seq)"), backend: "wk", kind: .message(message))
    }

    static func seqs(_ events: [IMEvent]) -> [Int64] {
        events.compactMap { if case .message(let message) = $0.kind { message.seq } else { nil } }
    }

    @Test func aSeqJumpIsHeldAndAsksForCatchUp() {
        let gate = CatchUpGate()
        gate.watch("wk", signal: .sequence, starting: false)
        let key = CatchUpGate.Key(backend: "wk", conversation: .group("g1"))
        let first = gate.admit([Self.message(1), Self.message(2)])
        #expect(Self.seqs(first) == [1, 2], "in order: admitted")
        gate.recorded(first)
        #expect(gate.takeRequested().isEmpty)
        #expect(Self.seqs(gate.admit([Self.message(4), Self.message(5)])) == [], "3 is missing: 4 and everything after it in the conversation wait")
        #expect(gate.takeRequested() == [key: "gap"])
        #expect(Self.seqs(gate.admit([Self.message(1, in: "g2")])) == [1], "other conversations go on")
        // The catch-up reads 3…5; something was held since the read began, so it reads again first.
        gate.begin(key)
        #expect(gate.takeMissed(key))
        #expect(Self.seqs(gate.admit([Self.message(6)])) == [], "held while the read runs")
        gate.caughtUp(key, seq: 5)
        #expect(gate.finish(key, force: false) == nil, "6 arrived during the read: read again")
        #expect(gate.takeMissed(key), "the second read starts")
        gate.caughtUp(key, seq: 6)
        let held = gate.finish(key, force: false)
        #expect(held.map(Self.seqs) == [4, 5, 6], "what was held is handed back to be recorded (the ledger drops what the reads took)")
        #expect(Self.seqs(gate.admit([Self.message(7)])) == [], "held while those are recorded: 7 must not go ahead of them")
        gate.recorded(held ?? [])
        let meanwhile = gate.finish(key, force: true)
        #expect(meanwhile.map(Self.seqs) == [7], "what came meanwhile is recorded next")
        gate.recorded(meanwhile ?? [])
        #expect(gate.finish(key, force: true) == [], "nothing more came: the conversation is live again")
        #expect(Self.seqs(gate.admit([Self.message(8)])) == [8], "after the catch-up, live messages are admitted again")
    }

    /// The catch-up read up to 40 and let the conversation go; its hold's release was still being written
    /// when messages 54 and 55 came (41…53 had gone to a paused instance, or their callbacks were lost).
    /// The gate held them for the gap, and the catch-up's last call must not hand them back to be recorded
    /// ahead of 41…53: they wait for the catch-up the gap asked for (seed 21, docs/reliability.md).
    @Test func messagesPastAGapThatCameAfterTheReadWaitForTheNextRead() {
        let gate = CatchUpGate()
        gate.watch("wk", signal: .sequence, starting: false)
        let key = CatchUpGate.Key(backend: "wk", conversation: .group("g1"))
        gate.begin(key)
        _ = gate.takeMissed(key)
        gate.caughtUp(key, seq: 40)
        #expect(gate.finish(key, force: false) == [], "nothing held: the conversation is let go")
        #expect(Self.seqs(gate.admit([Self.message(55), Self.message(54)])) == [], "a gap after 40: held")
        #expect(gate.takeRequested() == [key: "gap"])
        #expect(gate.finish(key, force: true) == [], "54 and 55 are not recorded before 41…53")
        #expect(gate.takeRequested() == [key: "gap"], "the gap is still to be read")
        #expect(Self.seqs(gate.admit([Self.message(56)])) == [], "56 waits behind them")
        // The catch-up the gap asked for reads 41…56.
        gate.begin(key)
        _ = gate.takeMissed(key)
        gate.caughtUp(key, seq: 56)
        #expect(gate.finish(key, force: false).map(Self.seqs) == [54, 55, 56], "handed back in order once the read covered them")
    }

    /// After the last read, what was held meanwhile is recorded up to a gap; what lies past it waits for
    /// a read. What was held before the last read began is the read's answer, gap or not.
    @Test func aForcedFinishStopsAtAGapOnlyForWhatCameAfterTheRead() {
        let gate = CatchUpGate()
        gate.watch("wk", signal: .sequence, starting: false)
        let key = CatchUpGate.Key(backend: "wk", conversation: .group("g1"))
        gate.begin(key)
        _ = gate.admit([Self.message(9)])
        _ = gate.takeMissed(key)
        gate.caughtUp(key, seq: 5)
        #expect(gate.finish(key, force: true).map(Self.seqs) == [9], "held before the read began, which found nothing up to 9")
        gate.recorded([Self.message(9)])
        _ = gate.admit([Self.message(8), Self.message(6), Self.message(12)])
        #expect(gate.finish(key, force: true).map(Self.seqs) == [6], "6 follows 5; 8 comes after a gap (7)")
        gate.recorded([Self.message(6)])
        #expect(gate.finish(key, force: true) == [], "7 is still missing")
        #expect(gate.takeRequested() == [key: "gap"])
    }

    @Test func startingHoldsEverythingOfTheSourceUntilItsConversationsAreListed() {
        let gate = CatchUpGate()
        gate.watch("wk", signal: .none, starting: true)
        #expect(gate.admit([Self.message(10)]).isEmpty)
        let other = IMEvent(eventID: "msg:x", backend: "rc", kind: Self.message(1).kind)
        #expect(gate.admit([other]).count == 1, "a backend that is not a catch-up source is not held")
        let key = CatchUpGate.Key(backend: "wk", conversation: .group("g1"))
        #expect(gate.started("wk") == [key], "the conversation held something: it is caught up too")
        #expect(gate.admit([Self.message(11, in: "g9")]).count == 1, "time-positioned sources show no gaps live")
        #expect(gate.admit([Self.message(12)]).isEmpty, "g1 holds on until it is caught up: 12 cannot overtake the held 10")
        #expect(gate.finish(key, force: true).map(Self.seqs) == [10, 12])
        #expect(gate.finish(key, force: true) == [], "recorded, nothing came meanwhile")
        #expect(gate.admit([Self.message(13)]).count == 1, "after its catch-up g1 is live again")
    }

    /// A conversation the start-up pass read before its first message came, then held one while the pass
    /// went on, is read again before live messages flow: they would otherwise be recorded before it.
    @Test func aMessageHeldAfterItsConversationWasReadIsNotOvertaken() {
        let gate = CatchUpGate()
        gate.watch("rc", signal: .none, starting: true)
        let key = CatchUpGate.Key(backend: "rc", conversation: .group("g1"))
        func event(_ seq: Int64) -> IMEvent { IMEvent(eventID: EventID("msg:\(seq)"), backend: "rc", kind: Self.message(seq).kind) }
        gate.begin(key)
        #expect(gate.finish(key, force: false) == [], "read while empty")
        #expect(gate.admit([event(1)]).isEmpty, "held: the source is still starting")
        #expect(gate.started("rc") == [key], "handed back to be read although it was read in this pass")
        #expect(gate.admit([event(2)]).isEmpty, "2 waits behind 1")
        gate.begin(key)
        #expect(gate.finish(key, force: true).map(Self.seqs) == [1, 2])
    }

    /// A change to an old message the intake could not record (the store failing) asks for its
    /// conversation's catch-up as a refused message does: the catch-up reads the conversation's changes
    /// after it, where the change is found again if the vendor gave up on it.
    @Test func aChangeNotRecordedAsksForItsConversationsCatchUp() {
        let gate = CatchUpGate()
        gate.watch("rc", signal: .none, starting: false)
        let change = IMEvent(eventID: "exp:m1:1", backend: "rc",
                             kind: .expansionChanged(messageID: "m1", conversation: .group("g1"), by: "ann",
                                                     delta: ExpansionDelta(version: 1, removed: ["st"])))
        let elsewhere = IMEvent(eventID: "exp:m2:1", backend: "wk",
                                kind: .expansionChanged(messageID: "m2", conversation: .group("g2"), by: "ann",
                                                        delta: ExpansionDelta(version: 1, removed: ["st"])))
        gate.notRecorded([change, elsewhere])
        #expect(gate.takeRequested() == [CatchUpGate.Key(backend: "rc", conversation: .group("g1")): "refused"],
                "the watched source's conversation is caught up; a backend catch-up does not watch is not")
    }

    @Test func checkpointNamesRoundTrip() throws {
        let key = CatchUpGate.Key(backend: "wk", conversation: .direct("ann", "bob"))
        let name = CatchUpRunner.checkpointName(for: key)
        #expect(name.hasPrefix(CatchUpRunner.checkpointPrefix))
        #expect(CatchUpRunner.key(fromCheckpoint: name) == key)
        #expect(CatchUpRunner.key(fromCheckpoint: "jmessage.jm.poller") == nil)
    }
}
