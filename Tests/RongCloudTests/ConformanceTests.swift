import Foundation
import IMAdapterKit
import IMCore
import IMHTTP
import IMSandbox
import IMTesting
import Synchronization
import Testing
@testable import RongCloud
import RongCloudSandbox

/// `RongCloudBackend` against its sandbox over loopback: the sandbox routes every message, recall and
/// expansion change to a callback listener that hands each request to `RongCloudBackend.handle(_:sink:)`.
@Suite(.serialized) struct RongCloudConformanceTests {
    /// One sandbox + listener + backend; `stop` closes both servers.
    final class Rig: Sendable {
        let sandbox: SandboxServer
        let listener: HTTPServer
        let backend: RongCloudBackend
        init(sandbox: SandboxServer, listener: HTTPServer, backend: RongCloudBackend) {
            self.sandbox = sandbox
            self.listener = listener
            self.backend = backend
        }
        func stop() async {
            if let vendor = sandbox.vendor as? RongCloudSandbox {
                _ = await vendor.waitForDeliveries(timeoutMs: 2000)
                await vendor.stopDeliveries()
            }
            await sandbox.stop()
            await listener.stop()
        }
    }

    static func rig(registry: ContentRegistry = ContentRegistry()) async throws -> Rig {
        let box = Mutex<RongCloudBackend?>(nil)
        let listener = HTTPServer { request in
            guard let backend = box.withLock({ $0 }) else { return .text("starting", status: 503) }
            return await backend.handle(request, sink: CollectingSink())
        }
        let listenerPort = try await listener.start()
        let sandbox = try RongCloudSandbox.server(SandboxOptions(appKey: "K", appSecret: "S", callbackURL: "http://127.0.0.1:\(listenerPort)/rongcloud"))
        try await sandbox.start()
        var settings = RongCloudSettings(appKey: "K", appSecret: "S", apiURLs: [sandbox.baseURL])
        settings.timeout = .seconds(5)
        settings.historyViewer = "alice"
        let backend = RongCloudBackend(id: "rc", settings: settings, registry: registry)
        box.withLock { $0 = backend }
        return Rig(sandbox: sandbox, listener: listener, backend: backend)
    }

    static func withRig(_ body: (Rig) async throws -> Void) async throws {
        let rig = try await rig()
        do {
            try await body(rig)
        } catch {
            await rig.stop()
            throw error
        }
        await rig.stop()
    }

    @Test func conformanceSuitePasses() async throws {
        let rigs = Mutex<[Rig]>([])
        let suite = ConformanceSuite {
            let registry = ContentRegistry()
            let rig = try await Self.rig(registry: registry)
            rigs.withLock { $0.append(rig) }
            let sandbox = rig.sandbox
            var subject = ConformanceSubject(backend: rig.backend, users: ["alice", "bob", "carol"], group: "g1",
                                             advanceClock: { ms in sandbox.clock.advance(byMs: ms) }, registry: registry)
            // The sandbox routes a recall with isDelete=1 as RC:RcCmd, which the backend reads as a deletion.
            subject.reportsDeletions = true
            return subject
        }
        let report = await suite.run()
        for rig in rigs.withLock({ $0 }) { await rig.stop() }
        #expect(report.failures.isEmpty, "\(report)")
        #expect(report.passed.count >= 15, "\(report)")
        print(report)
    }

    @Test func clientErrorsCarryVendorCodesAndRetryability() async throws {
        try await Self.withRig { rig in
            rig.sandbox.faults.add(FaultInjector.Rule(status: 429, vendorCode: 1008, count: 1, pathPrefix: "/message"))
            let limited = await #expect(throws: IMError.self) {
                _ = try await rig.backend.send(OutgoingMessage(conversation: .direct("alice", "bob"), sender: "alice", content: .text("x")))
            }
            #expect(limited?.code == .rateLimited && limited?.vendorCode == "1008" && limited?.isRetryable == true)
            #expect(limited?.retryAfterMs == 1000)
            let forged = RongCloudBackend(settings: .init(appKey: "K", appSecret: "wrong", apiURLs: [rig.sandbox.baseURL]))
            let denied = await #expect(throws: IMError.self) { try await forged.ensureUser(UserProfile(id: "alice")) }
            #expect(denied?.code == .authenticationFailed && denied?.vendorCode == "1004" && denied?.isRetryable == false)
            rig.sandbox.faults.add(FaultInjector.Rule(status: 500, count: 1))
            let down = await #expect(throws: IMError.self) { try await rig.backend.ensureUser(UserProfile(id: "alice", name: "Alice")) }
            #expect(down?.code == .unavailable && down?.isRetryable == true)
            try await rig.backend.ensureUser(UserProfile(id: "alice", name: "Alice"))
        }
    }

    @Test func backupHostIsUsedWhenThePrimaryIsDown() async throws {
        try await Self.withRig { rig in
            let deadPort = try await LoopbackPorts.unused(in: LoopbackPorts.dead)
            let backend = RongCloudBackend(settings: .init(appKey: "K", appSecret: "S", apiURLs: ["http://127.0.0.1:\(deadPort)", rig.sandbox.baseURL]))
            let sent = try await backend.send(OutgoingMessage(conversation: .group("g1"), sender: "alice", content: .text("via backup")))
            #expect(!sent.id.rawValue.isEmpty)
        }
    }

    @Test func forgedCallbacksAreRefusedAndRedeliveryIsYieldedOnce() async throws {
        try await Self.withRig { rig in
            let body = RCRoutedMessage(fromUserId: "bob", toUserId: "alice", objectName: "RC:TxtMsg", content: #"{"content":"hi"}"#,
                                         channelType: "PERSON", msgTimestamp: 1, msgUID: "AAAA-BBBB-CCCC-0001").form.encoded
            func request(secret: String) -> HTTPRequestData {
                let nonce = "n\(Int.random(in: 0..<1_000_000))", timestamp = String(SystemClock().nowMs())
                let signature = Hashing.sha1Hex(secret + nonce + timestamp)
                return HTTPRequestData(method: "POST", path: "/rongcloud", rawQuery: "nonce=\(nonce)&timestamp=\(timestamp)&signature=\(signature)",
                                       headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array(body.utf8))
            }
            let sink = CollectingSink()
            let stream = rig.backend.events()
            let forged = await rig.backend.handle(request(secret: "forged"), sink: sink)
            #expect(forged.status == 401 && forged.bodyString.hasPrefix("unauthorized: "))
            let accepted = await rig.backend.handle(request(secret: "S"), sink: sink)
            #expect(accepted.status == 200 && accepted.bodyString == "ok")
            var truncated = request(secret: "S")
            truncated.body = Array("fromUserId=bob&objectName=RC:TxtMsg".utf8)
            let malformed = await rig.backend.handle(truncated, sink: sink)
            #expect(malformed.status == 400 && malformed.bodyString.hasPrefix("bad request: "))
            #expect(sink.refusals.map(\.code) == [.authenticationFailed, .malformedPayload], "refusals are told to the sink")
            #expect(sink.events.map(\.eventID) == ["msg:AAAA-BBBB-CCCC-0001"])
            let again = await rig.backend.handle(request(secret: "S"), sink: sink)
            #expect(again.status == 200 && again.bodyString == "ok")
            #expect(sink.events.map(\.eventID) == ["msg:AAAA-BBBB-CCCC-0001", "msg:AAAA-BBBB-CCCC-0001"],
                    "redelivery gives the sink the same event id")
            let marker = RCRoutedMessage(fromUserId: "bob", toUserId: "alice", objectName: "RC:TxtMsg", content: #"{"content":"end"}"#,
                                         channelType: "PERSON", msgTimestamp: 2, msgUID: "AAAA-BBBB-CCCC-0002")
            let last = await rig.backend.handle(HTTPRequestData(method: "POST", path: "/", rawQuery: request(secret: "S").rawQuery,
                                                                body: Array(marker.form.encoded.utf8)), sink: sink)
            #expect(last.status == 200)
            var seen: [EventID] = []
            for await event in stream {
                seen.append(event.eventID)
                if event.eventID == "msg:AAAA-BBBB-CCCC-0002" { break }
            }
            #expect(seen == ["msg:AAAA-BBBB-CCCC-0001", "msg:AAAA-BBBB-CCCC-0002"])
        }
    }
}
