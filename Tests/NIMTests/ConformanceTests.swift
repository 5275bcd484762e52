import Foundation
import IMAdapterKit
import IMCore
import IMHTTP
import IMSandbox
import IMTesting
import NIM
import NIMSandbox
import SandboxTestSupport
import Synchronization
import Testing

/// A NIMBackend wired to a fresh sandbox: the sandbox's message copies are posted to an HTTP receiver
/// that feeds `NIMBackend.handle(_:sink:)` with a `CollectingSink`, so they reach the sink and
/// `events()` exactly as in production.
struct WiredBackend {
    let backend: NIMBackend
    let sandbox: SandboxServer
    let receiver: HTTPServer
    let registry: ContentRegistry
    let sink: CollectingSink
    var rig: SandboxRig { SandboxRig(server: sandbox) }

    static func start(registry: ContentRegistry = ContentRegistry(), frozenClock: Bool = false) async throws -> WiredBackend {
        let slot = BackendSlot()
        let sink = CollectingSink()
        let receiver = HTTPServer { request in
            guard let backend = slot.backend.withLock({ $0 }) else { return .text("not ready", status: 503) }
            return await backend.handle(request, sink: sink)
        }
        let receiverPort = try await receiver.start()
        let sandbox = try NIMSandboxHelper.makeServer(.init(appKey: "k", appSecret: "s", frozenClock: frozenClock),
                                                      callbackURL: "http://127.0.0.1:\(receiverPort)\(NIMSandboxHelper.callbackPath)")
        try await sandbox.start()
        var settings = NIMSettings(apiURL: sandbox.baseURL + "/nimserver", appKey: "k", appSecret: "s")
        settings.teamQueryAccid = "alice"
        let backend = NIMBackend(id: "nim", settings: settings, registry: registry, clock: sandbox.clock)
        slot.backend.withLock { $0 = backend }
        return WiredBackend(backend: backend, sandbox: sandbox, receiver: receiver, registry: registry, sink: sink)
    }

    /// Runs `body` against a freshly wired backend and always stops the servers afterwards.
    static func with(registry: ContentRegistry = ContentRegistry(), frozenClock: Bool = false,
                     _ body: (WiredBackend) async throws -> Void) async throws {
        let wired = try await start(registry: registry, frozenClock: frozenClock)
        do {
            try await body(wired)
        } catch {
            await wired.stop()
            throw error
        }
        await wired.stop()
    }

    /// Seeds team 1001 with alice (owner), bob and carol, for the tests that send into it: NIM refuses a
    /// team message into a team that does not exist or from a non-member (docs/adapters/nim.md,
    /// "Conversations").
    func seedTeam1001() async throws {
        try await rig.seedGroup("1001", owner: "alice", members: ["bob", "carol"], name: "Team 1001")
    }

    func stop() async {
        _ = await (sandbox.vendor as! NIMSandbox).waitForCallbacks(timeoutMs: 2000)
        await sandbox.stop()
        await receiver.stop()
    }
}

final class BackendSlot: Sendable {
    let backend = Mutex<NIMBackend?>(nil)
}

final class WiredList: Sendable {
    let all = Mutex<[WiredBackend]>([])
}

@Suite(.serialized) struct NIMConformanceTests {
    @Test func conformanceSuitePasses() async throws {
        let servers = WiredList()
        let suite = ConformanceSuite {
            let wired = try await WiredBackend.start()
            servers.all.withLock { $0.append(wired) }
            try await wired.seedTeam1001()
            let clock = wired.sandbox.clock
            return ConformanceSubject(backend: wired.backend, users: ["alice", "bob", "carol"], group: "1001",
                                      advanceClock: { clock.advance(byMs: $0) }, registry: wired.registry)
        }
        let report = await suite.run()
        for wired in servers.all.withLock({ $0 }) { await wired.stop() }
        print(report)
        #expect(report.failures.isEmpty, "\(report)")
        #expect(report.passed.count >= 15)
    }

    @Test func sendUploadsPendingCustomMediaAndHistoryReadsItBack() async throws {
        try await WiredBackend.with(registry: try ContentRegistry([PhotoCard.self])) { wired in
            let path = NSTemporaryDirectory() + "nim-photo-\(UUID().uuidString).jpg"
            #expect(FileManager.default.createFile(atPath: path, contents: Data("jpeg bytes".utf8)))
            let card = PhotoCard(title: "T", subTitle: "S", photo: .local(path, mimeType: "image/jpeg"))
            let sent = try await wired.backend.send(OutgoingMessage(conversation: .direct("alice", "bob"), sender: "alice",
                                                                    content: .custom(CustomContent(card))))
            guard case .custom(let custom) = sent.content, let photo = custom.as(PhotoCard.self)?.photo else {
                Issue.record("sent content is \(sent.content)")
                return
            }
            #expect(photo.transferState == .uploaded && photo.remoteURL?.contains("/_sandbox/media/") == true)
            #expect(photo.checksum == Hashing.md5Hex(Array("jpeg bytes".utf8)))
            let page = try await wired.backend.history(HistoryQuery(conversation: .direct("bob", "alice"), limit: 5))
            guard case .custom(let stored)? = page.messages.last?.content, let storedPhoto = stored.as(PhotoCard.self)?.photo else {
                Issue.record("history has \(page.messages)")
                return
            }
            #expect(storedPhoto.remoteURL == photo.remoteURL)
            let downloaded = try await wired.backend.download(storedPhoto.rehosted(at: photo.remoteURL!), into: NSTemporaryDirectory())
            #expect(downloaded.transferState == .downloaded)
            #expect(FileManager.default.contents(atPath: downloaded.localPath!) == Data("jpeg bytes".utf8))
        }
    }

    @Test(arguments: [false, true])
    func historyPagesAcrossManyMessagesWithoutGapsOrRepeats(frozenClock: Bool) async throws {
        try await WiredBackend.with(frozenClock: frozenClock) { wired in
            var ids: [MessageID] = []
            for n in 0..<23 {
                ids.append(try await wired.backend.send(OutgoingMessage(conversation: .direct("alice", "bob"), sender: n % 3 == 0 ? "bob" : "alice",
                                                                        content: .text("n\(n)"))).id)
            }
            var collected: [MessageID] = []
            var page = try await wired.backend.history(HistoryQuery(conversation: .direct("alice", "bob"), anchor: .latest, limit: 5))
            collected = page.messages.map(\.id)
            while page.hasOlder, let cursor = page.olderCursor {
                page = try await wired.backend.history(HistoryQuery(conversation: .direct("alice", "bob"), anchor: .before(cursor), limit: 5))
                collected = page.messages.map(\.id) + collected
            }
            #expect(collected == ids)
            let around = try await wired.backend.history(HistoryQuery(conversation: .direct("alice", "bob"),
                                                                      anchor: .around(NIMHistoryKey(time: 0, msgid: 0).cursor), limit: 4))
            #expect(around.messages.map(\.id) == Array(ids[0..<4]))
            var forward = try await wired.backend.history(HistoryQuery(conversation: .direct("alice", "bob"), anchor: .oldest, limit: 7))
            var ascending = forward.messages.map(\.id)
            while forward.hasNewer, let cursor = forward.newerCursor {
                forward = try await wired.backend.history(HistoryQuery(conversation: .direct("alice", "bob"), anchor: .after(cursor), limit: 7))
                ascending += forward.messages.map(\.id)
            }
            #expect(ascending == ids)
        }
    }

    @Test func expansionFallbackAndCommandsTravelAsEvents() async throws {
        try await WiredBackend.with { wired in
            let stream = wired.backend.events()
            let target = try await wired.backend.send(OutgoingMessage(conversation: .direct("alice", "bob"), sender: "alice", content: .text("order")))
            await #expect(throws: IMError.self) {
                _ = try await wired.backend.send(OutgoingMessage(conversation: .direct("alice", "bob"), sender: "alice",
                                                                 content: .text("x"), expansion: ["k": "v"]))
            }
            let delta = ExpansionDelta(version: 3, set: ["status": "paid"], removed: ["owner"])
            try await wired.backend.sendExpansionChange(delta, of: target.id, in: .direct("alice", "bob"), by: "bob")
            _ = try await wired.backend.send(OutgoingMessage(conversation: .direct("alice", "bob"), sender: "bob",
                                                             content: .command(CommandContent(name: "typing", data: ["on": true]))))
            var kinds: [IMEvent.Kind] = []
            for await event in stream {
                kinds.append(event.kind)
                if kinds.count == 3 { break }
            }
            // Versioned by the carrier's own NIM time, not by the version its JSON names (docs/expansions.md, "Versions").
            guard case .expansionChanged(let id, let conversation, let by, let carried) = kinds[1] else {
                Issue.record("the second event is \(kinds[1]), not expansionChanged"); return
            }
            #expect(id == target.id && conversation == .direct("alice", "bob") && by == "bob")
            #expect(carried.set == delta.set && carried.removed == delta.removed && carried.cleared == delta.cleared)
            #expect(carried.version >= target.sentAt && carried.version != delta.version, "version \(carried.version)")
            #expect(kinds[2] == .command(conversation: .direct("alice", "bob"), sender: "bob",
                                         content: CommandContent(name: "typing", data: ["on": true]), at: {
                                             if case .command(_, _, _, let at) = kinds[2] { return at } else { return 0 } }()))
        }
    }

    @Test func rateLimitsSurfaceAsRetryableErrors() async throws {
        try await WiredBackend.with { wired in
            try await wired.backend.ensureUser(UserProfile(id: "alice"))
            try await wired.backend.ensureUser(UserProfile(id: "alice"))
            wired.sandbox.faults.add(.init(status: 200, vendorCode: 416, count: 1, pathPrefix: "/nimserver/msg/sendMsg"))
            do {
                _ = try await wired.backend.send(OutgoingMessage(conversation: .direct("alice", "bob"), sender: "alice", content: .text("x")))
                Issue.record("not rate limited")
            } catch let error as IMError {
                #expect(error.code == .rateLimited && error.isRetryable && error.retryAfterMs == 10_000 && error.vendorCode == "416")
            }
            let retried = try await wired.backend.send(OutgoingMessage(conversation: .direct("alice", "bob"), sender: "alice", content: .text("x")))
            #expect(!retried.id.rawValue.isEmpty)
        }
    }
}
