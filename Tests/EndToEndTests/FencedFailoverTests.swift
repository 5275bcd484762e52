import BridgeTestSupport
import Foundation
import IMCore
import IMHTTP
import IMLab
import IMStore
import PostgresTestSupport
import Synchronization
import Testing

/// Two `imbridge run` on one PostgreSQL, one of them frozen (SIGSTOP) while it works: a lane holder paused
/// past its lease must not send late copies when it resumes, and an instance frozen inside a transaction
/// must not hold the other up (docs/high-availability.md, "Fenced deliveries" and "A frozen instance").
extension CrashTests {
    @Suite(.serialized) struct FencedFailoverTests {
        static let leaseMs = 3_000
        static let routes = "  - from: \"wk:group:*\"\n    to: \"rc:group:*\"\n    direction: forward\n    users: puppet\n"
        static let members = [BridgeLab.Member("wk", "wukong", options: ["callback_attempts": "0"]), BridgeLab.Member("rc", "rongcloud")]
        static let groups = ["p1", "p2", "p3"]

        static func start(_ label: String) async throws -> InstancePair {
            let pair = try await InstancePair.start(label, routes: routes, ha: "  lease: \(leaseMs)ms\n", members: members)
            #expect(try await pair.healthy())
            // Every send to the target takes 60 ms: the lanes are busy most of the time, so a pause lands
            // while an entry is claimed or its call is under way.
            _ = try await HTTPClientWrapper().send(.json(pair.lab.url(of: "rc") + "/_sandbox/faults", Data(#"{"latency_ms":60}"#.utf8)))
            return pair
        }

        /// Users writing into the groups, about `perSecond` messages a second in all, until `stop` is set.
        static func sending(_ lab: BridgeLab, perSecond: Int, stop: StopFlag) async throws -> Task<[String: Int], any Error> {
            let wk = try await lab.userBackend("wk", registry: ContentRegistry())
            let pause = UInt64(1_000_000_000 / max(1, perSecond / groups.count))
            return Task {
                try await withThrowingTaskGroup(of: (String, Int).self) { tasks in
                    for id in groups {
                        tasks.addTask {
                            var n = 0
                            while !stop.isSet {
                                n += 1
                                _ = try await wk.send(OutgoingMessage(conversation: .group(GroupID(id)), sender: UserID("u_\(id)"), content: .text("\(id)-\(n)")))
                                try await Task.sleep(nanoseconds: pause)
                            }
                            return (id, n)
                        }
                    }
                    var sent: [String: Int] = [:]
                    for try await (id, n) in tasks { sent[id] = n }
                    return sent
                }
            }
        }

        final class StopFlag: Sendable {
            private let value = Mutex(false)
            var isSet: Bool { value.withLock { $0 } }
            func set() { value.withLock { $0 = true } }
        }

        static func relayed(_ lab: BridgeLab) async throws -> [String: [String]] {
            var texts: [String: [String]] = [:]
            // A late copy the lane took back (recalled) is not a delivery; were it the only copy, the text shows missing.
            for record in try await lab.messages("rc") where record["kind"] == "text" && record["recalled"] != true {
                guard let conversation = record["conversation_id"]?.stringValue, let text = record["text"]?.stringValue else { continue }
                texts[conversation, default: []].append(text)
            }
            return texts
        }

        /// Every message of every group on the target once, in the order it was sent.
        static func expectExactlyOnceInOrder(_ lab: BridgeLab, sent: [String: Int], store: String? = nil,
                                             _ context: @autoclosure () -> String) async throws {
            let total = sent.values.reduce(0, +)
            let settled = await eventually(240) { (try? await relayed(lab).values.map(\.count).reduce(0, +)) ?? 0 >= total }
            // A late copy is taken back by its lane once the entry it doubles is recorded: give it a moment
            // (an instance resumed after 30 s reconnects to the store first). How long it took is printed.
            let settling = Date()
            let exact = await eventually(45) { (try? await relayed(lab).values.map(\.count).reduce(0, +)) ?? 0 == total }
            print("\(total) messages; the target held exactly that many \(exact ? "after" : "never, in") \(String(format: "%.1f", Date().timeIntervalSince(settling))) s")
            try await Task.sleep(nanoseconds: 1_000_000_000)
            let texts = try await relayed(lab)
            #expect(settled, "\(texts.values.map(\.count).reduce(0, +)) of \(total) relayed; \(context())")
            for id in groups {
                let got = texts[id] ?? []
                let expected = (1...(sent[id] ?? 0)).map { "\(id)-\($0)" }
                let doubled = Dictionary(grouping: got, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
                let copies = doubled.isEmpty ? "" : try await lab.messages("rc").filter { doubled.prefix(3).contains($0["text"]?.stringValue ?? "") }.map { "\($0)" }.joined(separator: "\n")
                // What the store kept of the first doubled text, and what each instance last logged.
                let trail = got == expected ? "" : (doubled.first.flatMap { text in store.map { storeTrail($0, text: text) } } ?? "") + "\n" + context()
                #expect(got == expected, "group \(id): \(got.count) copies of \(expected.count), doubled \(doubled.prefix(10)) \(copies), missing \(Set(expected).subtracting(got).sorted().prefix(10)), in order: \(got == got.sorted { Int($0.split(separator: "-")[1])! < Int($1.split(separator: "-")[1])! })\n\(trail)")
            }
        }

        /// The outbox entries whose payload carries `text`, their attempts, and the id map's rows of their
        /// source messages: which entry sent a double, and which instance, when.
        static func storeTrail(_ store: String, text: String) -> String {
            let entries = (try? TestPostgres.query(store, """
                SELECT id || ' ' || lane || ' ' || kind || ' ' || source_event_id || ' ' || state || ' attempts=' || attempts
                    || ' created=' || created_at || ' finished=' || coalesce(finished_at::text, '-')
                FROM outbox WHERE convert_from(payload, 'UTF8') LIKE '%\(text)"%' ORDER BY id
                """)) ?? []
            let ids = entries.compactMap { $0.split(separator: " ").first }.joined(separator: ",")
            let attempts = ids.isEmpty ? [] : (try? TestPostgres.query(store, """
                SELECT outbox_id || ' #' || attempt || ' at=' || at || ' ' || outcome || ' ' || instance || ' ' || left(error, 160)
                FROM attempts WHERE outbox_id IN (\(ids)) ORDER BY at
                """)) ?? []
            let mapped = (try? TestPostgres.query(store, """
                SELECT from_message || ' -> ' || to_message || ' at=' || created_at FROM id_map
                WHERE from_message IN (SELECT substr(source_event_id, 5) FROM outbox WHERE convert_from(payload, 'UTF8') LIKE '%\(text)"%')
                """)) ?? []
            return "store trail of \(text):\n  entries: \(entries)\n  attempts: \(attempts)\n  id map: \(mapped)"
        }

        /// The last warnings and errors each instance logged.
        static func warnings(_ pair: InstancePair) -> String {
            pair.bridges.map { bridge in
                bridge.output.components(separatedBy: "\n").filter { $0.contains("warn") || $0.contains("error") }.suffix(30).joined(separator: "\n")
            }.joined(separator: "\n")
        }

        /// The last lines each instance logged, whatever their level.
        static func tails(_ pair: InstancePair) -> String {
            pair.bridges.enumerated().map { index, bridge in
                "instance \(index):\n" + bridge.output.components(separatedBy: "\n").suffix(25).joined(separator: "\n")
            }.joined(separator: "\n")
        }

        /// The instance holding the most lane leases now (nil when none is held).
        static func laneHolder(_ pair: InstancePair, label: String) throws -> Int? {
            let owners = try TestPostgres.query(pair.store, """
                SELECT owner FROM leases WHERE name LIKE 'lane:%' AND expires_at > (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT
                """)
            let counts = (0..<2).map { index in owners.filter { $0.hasPrefix("\(label)\(index)-") }.count }
            guard counts.max() ?? 0 > 0 else { return nil }
            return counts[0] >= counts[1] ? 0 : 1
        }

        @Test func aLaneHolderPausedPastItsLeaseSendsNoLateCopy() async throws {
            let label = "fence"
            let pair = try await Self.start(label)
            defer { pair.stop() }
            let stop = StopFlag()
            let sender = try await Self.sending(pair.lab, perSecond: 40, stop: stop)
            var paused = 0, attempts = 0
            // What the target held at each look that found no holder: a failure tells a stalled bridge from an
            // unlucky sampling.
            var idle: [String] = []
            let began = Date()
            while paused < 10 && attempts < 60 {
                attempts += 1
                try await Task.sleep(nanoseconds: 1_000_000_000)
                // Looked for every 100 ms for a second: a lane holds its lease only while it has work.
                var found: Int?
                for _ in 0..<10 where found == nil {
                    found = try Self.laneHolder(pair, label: label)
                    if found == nil { try await Task.sleep(nanoseconds: 100_000_000) }
                }
                guard let holder = found else {
                    let relayed = (try? await Self.relayed(pair.lab).values.map(\.count).reduce(0, +)) ?? -1
                    idle.append(String(format: "+%.0fs: %d relayed", Date().timeIntervalSince(began), relayed))
                    continue
                }
                let bridge = pair.bridges[holder]
                bridge.send(SIGSTOP)
                try await Task.sleep(nanoseconds: UInt64(Self.leaseMs + 1_500) * 1_000_000)
                bridge.send(SIGCONT)
                paused += 1
            }
            stop.set()
            let sent = try await sender.value
            #expect(paused == 10, "paused a lane holder \(paused) times; no holder found at \(idle); leases: \((try? TestPostgres.query(pair.store, "SELECT name || ' ' || owner || ' ' || expires_at FROM leases")) ?? []); logs:\n\(Self.tails(pair))")
            try await Self.expectExactlyOnceInOrder(pair.lab, sent: sent, store: pair.store, Self.warnings(pair) + "\n" + Self.tails(pair))
            let fenced = pair.bridges.map { $0.output.components(separatedBy: "lane lease lapsed or taken over").count - 1 }
            let late = pair.bridges.map { $0.output.components(separatedBy: "a late attempt reached the target after the lane was taken over").count - 1 }
            let takenBack = pair.bridges.map { $0.output.components(separatedBy: "late copy taken back from the target").count - 1 }
            print("fenced failover: \(sent.values.reduce(0, +)) messages, 10 pauses of \(Self.leaseMs + 1_500) ms; lanes given up after a pause: \(fenced); late copies: \(late), taken back: \(takenBack)")
            for bridge in pair.bridges { #expect(await bridge.terminate() == 0) }
        }

        /// RongCloud → WuKong: the lane holder is paused while it reads the copy's `extra` to write an
        /// expansion change (WuKongIM's write sets the whole dictionary, so the adapter reads it first; the read
        /// is answered 2.5 s late). Meanwhile the source changes the value again, and the other instance takes
        /// the lane over and writes both changes. When the paused one resumes, its write is refused by the
        /// lease check asked before each request leaves (`WriteGate`), as a send's is, and the copy keeps the
        /// newest value. Before, only the attempt's start asked, and the resumed instance wrote its stale
        /// value over the newer one for good (seed 360, docs/reliability.md).
        @Test func aLaneHolderPausedBeforeAnExpansionWriteWritesNoStaleValue() async throws {
            let label = "stale"
            let routes = "  - from: \"rc:group:*\"\n    to: \"wk:group:*\"\n    direction: forward\n    group_ids: same\n"
            let members = [BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member("wk", "wukong")]
            let pair = try await InstancePair.start(label, routes: routes, ha: "  lease: \(Self.leaseMs)ms\n", members: members)
            defer { pair.stop() }
            #expect(try await pair.healthy())
            let rc = try await pair.lab.userBackend("rc", registry: ContentRegistry())
            let group = ConversationRef.group("g1")
            let message = try await rc.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("m1"), expansion: ["note": "v1"]))
            func copyNote() async throws -> String? {
                try await pair.lab.messages("wk").first { $0["text"]?.stringValue == "m1" }?["expansion"]?["note"]?.stringValue
            }
            #expect(try await eventually(30) { try await copyNote() == "v1" }, "the copy carries the first value:\n\(Self.tails(pair))")
            try await Task.sleep(nanoseconds: 1_000_000_000)

            // The adapter's read of the copy's `extra` before its write (`limit` 10000) is answered 2.5 s late.
            let hold = try await HTTPClientWrapper().send(.json(pair.lab.url(of: "wk") + "/_sandbox/faults",
                Data(#"{"hold_ms":2500,"count":1,"path_prefix":"/v1/message/extra/sync","body_contains":"10000"}"#.utf8)))
            #expect(hold.status == 200)
            let updater = try #require(rc as? any ExpansionUpdating)
            _ = try await updater.updateExpansion(of: message.id, in: group, by: "ann", .set(["note": "v2"]))
            // The instance that claims the change holds the lane's lease; it is paused once it is inside the read.
            let lease = LaneKey(backend: "wk", conversation: group).leaseName
            var holder: Int?
            for _ in 0..<100 where holder == nil {
                let owner = try TestPostgres.query(pair.store, "SELECT owner FROM leases WHERE name = '\(lease)'").first
                holder = (0..<2).first { owner?.hasPrefix("\(label)\($0)-") == true }
                if holder == nil { try await Task.sleep(nanoseconds: 50_000_000) }
            }
            let paused = try #require(holder, "an instance took the lane for the change")
            try await Task.sleep(nanoseconds: 500_000_000)
            pair.bridges[paused].send(SIGSTOP)
            _ = try await updater.updateExpansion(of: message.id, in: group, by: "ann", .set(["note": "v3"]))
            let takenOver = try await eventually(20) { try await copyNote() == "v3" }
            let afterTakeOver = try await copyNote()
            #expect(takenOver, "the other instance wrote the newest value: \(afterTakeOver ?? "none")\n\(Self.tails(pair))")
            try await Task.sleep(nanoseconds: UInt64(Self.leaseMs) * 1_000_000)
            pair.bridges[paused].send(SIGCONT)
            // Its held read answered, the resumed instance would write now.
            try await Task.sleep(nanoseconds: 5_000_000_000)
            let final = try await copyNote()
            #expect(final == "v3", "the copy keeps the newest value, not the resumed instance's stale one: \(final ?? "none")\n\(Self.tails(pair))")
            for bridge in pair.bridges { #expect(await bridge.terminate() == 0) }
        }

        @Test func anInstanceFrozenInsideATransactionHoldsNobodyUp() async throws {
            let label = "frozen"
            let pair = try await Self.start(label)
            defer { pair.stop() }
            let stop = StopFlag()
            let sender = try await Self.sending(pair.lab, perSecond: 30, stop: stop)
            try await Task.sleep(nanoseconds: 2_000_000_000)
            // Freeze an instance at a moment PostgreSQL shows one of its sessions inside a transaction.
            var frozen: Int?
            for attempt in 0..<400 where frozen == nil {
                let index = attempt % 2
                let bridge = pair.bridges[index]
                bridge.send(SIGSTOP)
                let stuck = try TestPostgres.query(pair.store, """
                    SELECT count(*) FROM pg_stat_activity
                    WHERE application_name = 'imbridge pid=\(bridge.pid)' AND state = 'idle in transaction'
                    """).first
                if stuck != "0" && stuck != nil { frozen = index; break }
                bridge.send(SIGCONT)
                try await Task.sleep(nanoseconds: UInt64.random(in: 1...40) * 1_000_000)
            }
            let index = try #require(frozen, "never caught an instance inside a transaction")
            let frozenAt = Date()
            let survivor = pair.ports[1 - index]
            let atFreeze = try await Self.relayed(pair.lab).mapValues(\.count)
            // For 30 s: the survivor's /readyz every second (each must answer within 1 s), and when each group
            // moves again on the target.
            let http = HTTPClientWrapper(timeoutSeconds: 2)
            var probes: [(Double, Int?)] = []
            var resumed: [String: Double] = [:]
            // Per group, the last look that still found it where it was at the freeze: it moved again between
            // that look and the next (the looks are a second or more apart on a loaded machine).
            var stillAt: [String: Double] = [:]
            while Date().timeIntervalSince(frozenAt) < 30 {
                let asked = Date()
                let status = (try? await http.send(OutboundRequest(method: "GET", url: "http://127.0.0.1:\(survivor)/readyz")))?.status
                probes.append((Date().timeIntervalSince(asked), status))
                let now = try await Self.relayed(pair.lab).mapValues(\.count)
                for id in Self.groups where resumed[id] == nil {
                    if (now[id] ?? 0) > (atFreeze[id] ?? 0) { resumed[id] = Date().timeIntervalSince(frozenAt) } else { stillAt[id] = Date().timeIntervalSince(frozenAt) }
                }
                try await Task.sleep(nanoseconds: UInt64(max(0, 1 - Date().timeIntervalSince(asked)) * 1_000_000_000))
            }
            pair.bridges[index].send(SIGCONT)
            stop.set()
            let sent = try await sender.value
            let slowest = resumed.values.max() ?? .infinity
            print("frozen instance: every group relayed again within \(String(format: "%.1f", slowest)) s (\(resumed)); /readyz answered in at most \(String(format: "%.2f", probes.map(\.0).max() ?? 0)) s, statuses \(Set(probes.map { $0.1 ?? 0 }))")
            #expect(resumed.count == Self.groups.count, "groups that moved again during the freeze: \(resumed)")
            // Moving again within lease_ms + 2 s: judged by the last look that found a group still stopped, so
            // that the time between looks (a second, more under load) does not count against the survivor.
            let lastStopped = stillAt.values.max() ?? 0
            #expect(lastStopped <= Double(Self.leaseMs) / 1000 + 2,
                    "a group was still stopped \(lastStopped) s into the freeze (moved again by \(slowest) s): \(stillAt)")
            #expect(probes.count >= 25 && probes.allSatisfy { $0.0 < 1.0 && $0.1 != nil }, "/readyz answers: \(probes)")
            try await Self.expectExactlyOnceInOrder(pair.lab, sent: sent, store: pair.store, Self.warnings(pair) + "\n" + Self.tails(pair))
            #expect(await pair.bridges[1 - index].terminate() == 0, "the survivor ends cleanly")
            // The instance frozen for 30 s has ended with signal 4 on SIGTERM: the service group's trap when a
            // service does not return after cancellation — the callback listener waiting for a request that
            // never ended. Bounded since (`ListenerService`, OperationsTests.aRequestThatNeverEndsDoesNotHoldTheShutdown);
            // kept as a known issue until full runs show it gone. Its log is printed when it happens.
            let frozenStatus = await pair.bridges[index].terminate()
            if frozenStatus != 0 {
                print("frozen instance ended with status \(frozenStatus.map(String.init) ?? "none: SIGKILLed after 60 s"); log:\n\(pair.bridges[index].output.suffix(4000))")
            }
            withKnownIssue("the instance frozen for 30 s sometimes traps on SIGTERM", isIntermittent: true) {
                #expect(frozenStatus == 0)
            }
        }
    }
}
