#if canImport(Glibc)
import BridgeTestSupport
import Foundation
import IMCore
import IMHTTP
import IMLab
import SandboxTestSupport
import Synchronization
import Testing

/// `imbridge run` as a subprocess under 100 unauthenticated slow or oversized requests (docs/configuration.md, `listener:`; docs/architecture.md, "Bounded resources for strangers"):
/// each is cut off within its documented bound, the bridge's resident memory stays within 50 MB of
/// where it was, and real callbacks (RongCloud's sandbox → bridge → WuKong's sandbox) keep relaying
/// meanwhile.
@Suite(.serialized) struct HostileClientsTests {
    /// The body timeout is long enough that the trickled bodies are still held when the real messages
    /// have relayed, on a loaded machine too (a full run there took 8 s to relay them; at 6 s the last
    /// stranger was cut first, and "meanwhile" could not be told).
    static let headerTimeout = 2.0, bodyTimeout = 15.0, idleTimeout = 5.0, linger = 2.0
    /// Added to every bound: the machine is shared and may be slow; the bounds stay far below the
    /// 60 s and more such connections were held before the limits existed.
    static let slack = 8.0

    enum Kind: String, CaseIterable, Sendable {
        /// The request line and headers one byte at a time: the header timeout.
        case slowHeaders
        /// `/callbacks/wk` without the secret, 31 MB declared, 64 KB sent then silence: answered 401 before
        /// the body, closed after the linger.
        case hugeDeclaredBody
        /// `/callbacks/wk` without the secret, a chunk of 2^64−1 bytes declared, a few sent: 401, linger.
        case hugeChunkCallback
        /// A body trickled to an endpoint that reads one (`/status`, capped at 64 KiB): the body timeout.
        case trickledBody
        /// A chunk of 2^64−1 bytes to `/status`: refused by the parser or cut at the body timeout.
        case hugeChunkAdmin

        var bound: Double {
            switch self {
            case .slowHeaders: HostileClientsTests.headerTimeout
            case .hugeDeclaredBody, .hugeChunkCallback: HostileClientsTests.linger
            case .trickledBody, .hugeChunkAdmin: HostileClientsTests.bodyTimeout
            }
        }
    }

    struct Outcome: Sendable {
        var kind: Kind
        /// Seconds from connecting to the server closing; nil when still open at the test's limit.
        var closedAfter: Double?
        var status: Int?
    }

    /// One hostile connection, played on its own thread: sends its part, keeps trickling, and times
    /// how long the bridge keeps it open.
    static func play(_ kind: Kind, port: Int) -> Outcome {
        guard let connection = try? RawConnection(port: port) else { return Outcome(kind: kind, closedAfter: 0, status: nil) }
        let start = Date()
        var trickle: [UInt8] = []
        switch kind {
        case .slowHeaders:
            trickle = Array("POST /callbacks/wk?event=msg.notify HTTP/1.1\r\nHost: bridge\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n[]".utf8)
        case .hugeDeclaredBody:
            connection.send("POST /callbacks/wk?event=msg.notify HTTP/1.1\r\nHost: bridge\r\nContent-Type: application/json\r\nContent-Length: 31000000\r\n\r\n")
            connection.send([UInt8](repeating: 0x5b, count: 64 << 10))
        case .hugeChunkCallback:
            connection.send("POST /callbacks/wk?event=msg.notify HTTP/1.1\r\nHost: bridge\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFF\r\n[{\"a\":")
        case .trickledBody:
            connection.send("POST /status HTTP/1.1\r\nHost: bridge\r\nContent-Length: 60000\r\n\r\n")
            trickle = [UInt8](repeating: 0x7a, count: 60000)
        case .hugeChunkAdmin:
            connection.send("POST /status HTTP/1.1\r\nHost: bridge\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFF\r\nzzzz")
        }
        var next = Date()
        while Date().timeIntervalSince(start) < 60 {
            if !trickle.isEmpty, Date() >= next {
                if !connection.send([trickle.removeFirst()]) { break }
                next = Date().addingTimeInterval(0.5)
            }
            if connection.poll(seconds: 0.1) { break }
        }
        guard connection.closed else { return Outcome(kind: kind, closedAfter: nil, status: connection.status) }
        // EOF means the bridge stopped sending; after an early answer it still drops what arrives for
        // the linger before it closes. The connection counts as cut off once writes to it fail.
        let filler = [UInt8](repeating: 0x20, count: 1024)
        while Date().timeIntervalSince(start) < 60, connection.send(filler) { Thread.sleep(forTimeInterval: 0.05) }
        let closedAfter = Date().timeIntervalSince(start) < 60 ? Date().timeIntervalSince(start) : nil
        return Outcome(kind: kind, closedAfter: closedAfter, status: connection.status)
    }

    @Test func hundredSlowOrOversizedStrangersAreCutOffWhileCallbacksRelay() async throws {
        let extra = """
            log:
              level: error
            listener:
              header_timeout_seconds: \(Int(Self.headerTimeout))
              body_timeout_seconds: \(Int(Self.bodyTimeout))
              idle_timeout_seconds: \(Int(Self.idleTimeout))
              max_connections: 256

            """
        let rig = try await BridgeRig.make([BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member("wk", "wukong")],
                                           routes: "  - from: \"rc:group:*\"\n    to: \"wk:group:*\"\n    direction: forward\n    group_ids: same\n", extra: extra)
        let (lab, port) = (rig.lab, rig.port)
        defer { Task { await rig.stop() } }
        let bridge = try rig.launch()
        defer { bridge.killWithoutWaiting() }
        try #require(await bridge.waitUntilUp(seconds: 60), "bridge log:\n\(bridge.output)")

        let rc = try await lab.userBackend("rc", registry: ContentRegistry())
        func copies(_ text: String) async throws -> Int {
            try await lab.messages("wk").filter { $0["kind"] == "text" && $0["text"]?.stringValue == text }.count
        }
        // Warm up: one message relayed end to end, so the baseline includes what relaying allocates.
        _ = try await rc.send(OutgoingMessage(conversation: .group(GroupID("g1")), sender: "alice", content: .text("before")))
        #expect(try await eventually(30) { try await copies("before") == 1 })
        let pid = bridge.pid
        let baseline = try #require(residentKilobytes(of: pid))

        // The attack: 100 connections, 20 of each kind, each on its own thread.
        let peak = Mutex(baseline)
        let attacking = Mutex(true)
        let sampler = Task.detached {
            while attacking.withLock({ $0 }) {
                if let now = residentKilobytes(of: pid) { peak.withLock { $0 = max($0, now) } }
                try? await Task.sleep(nanoseconds: 100_000_000)
            }
        }
        let kinds = (0..<100).map { Kind.allCases[$0 % Kind.allCases.count] }
        let attackStart = Date()
        let attack = Task {
            await withTaskGroup(of: Outcome.self) { group in
                for kind in kinds { group.addTask { await RawConnection.run { Self.play(kind, port: port) } } }
                var outcomes: [Outcome] = []
                for await outcome in group { outcomes.append(outcome) }
                return outcomes
            }
        }

        // Meanwhile, real traffic: messages sent on RongCloud's sandbox reach WuKong's through the bridge.
        try? await Task.sleep(nanoseconds: 500_000_000)
        for n in 1...5 {
            _ = try await rc.send(OutgoingMessage(conversation: .group(GroupID("g1")), sender: "alice", content: .text("during-\(n)")))
        }
        var relayedDuring = true
        for n in 1...5 { relayedDuring = try await eventually(30) { try await copies("during-\(n)") == 1 } && relayedDuring }
        let relayedAfter = Date().timeIntervalSince(attackStart)
        let outcomes = await attack.value
        let lastCutOff = outcomes.compactMap(\.closedAfter).max() ?? 0
        attacking.withLock { $0 = false }
        await sampler.value

        #expect(relayedDuring, "callbacks relayed while the strangers were connected")
        #expect(relayedAfter < lastCutOff, "relayed \(relayedAfter) s into the attack, its last connection cut at \(lastCutOff) s: not meanwhile")
        #expect(outcomes.count == 100)
        for kind in Kind.allCases {
            let mine = outcomes.filter { $0.kind == kind }
            let open = mine.filter { $0.closedAfter == nil }
            #expect(open.isEmpty, "\(kind): \(open.count) of \(mine.count) connections still open after 60 s")
            let slowest = mine.compactMap(\.closedAfter).max() ?? 0
            #expect(slowest <= kind.bound + Self.slack, "\(kind): cut off after \(slowest) s; documented bound \(kind.bound) s")
        }
        // Unauthenticated callbacks are refused from their head: 401, never a body read.
        for outcome in outcomes where outcome.kind == .hugeDeclaredBody {
            #expect(outcome.status == 401, "\(outcome)")
        }
        for outcome in outcomes where outcome.kind == .slowHeaders || outcome.kind == .trickledBody {
            #expect(outcome.status == 408, "\(outcome)")
        }
        let grownMB = Double(peak.withLock { $0 } - baseline) / 1024
        let slowest = Kind.allCases.map { kind in "\(kind) \(outcomes.filter { $0.kind == kind }.compactMap(\.closedAfter).max() ?? -1) s" }
        print("hostile clients: relayed after \(relayedAfter) s; baseline \(baseline) kB, peak \(peak.withLock { $0 }) kB; slowest cut-off: \(slowest.joined(separator: ", "))")
        #expect(grownMB < 50, "resident memory grew by \(grownMB) MB under the attack (baseline \(baseline / 1024) MB)")

        // And after: the bridge still relays, and its descriptors went back down.
        _ = try await rc.send(OutgoingMessage(conversation: .group(GroupID("g1")), sender: "alice", content: .text("after")))
        #expect(try await eventually(30) { try await copies("after") == 1 })
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
        #expect(descriptors < 100, "\(descriptors) descriptors open after the attack")
        #expect(await bridge.terminate() == 0, "bridge log:\n\(bridge.output)")
    }
}
#endif
