import Foundation
import IMAdapterKit
import IMCore
import IMHTTP
import IMSandbox
import IMTesting
import JMessage
import Synchronization
import Testing

/// Started sandboxes and backends, stopped together at the end of a test.
final class Running: Sendable {
    let items = Mutex<[(JMessageSandboxHelper, JMessageBackend)]>([])

    func make(registry: ContentRegistry = ContentRegistry(), pollIntervalMs: Int64? = 100) async throws -> (JMessageSandboxHelper, JMessageBackend, GroupID) {
        let sandbox = try await JMessageSandboxHelper.start()
        let backend = JMessageBackend(id: "jm", settings: sandbox.backendSettings, registry: registry, clock: sandbox.clock,
                                      pollerSettings: .init(startLookbackMs: 60_000))
        items.withLock { $0.append((sandbox, backend)) }
        try await backend.start(pollIntervalMs: nil)
        if let pollIntervalMs {
            // The bridge's way in: the poller pushes into a sink, and `events()` shows what it accepted.
            backend.setPollInterval(pollIntervalMs)
            try await backend.startIntake(into: CollectingSink())
        }
        for user in ["alice", "bobby", "carol"] { try await backend.ensureUser(UserProfile(id: UserID(user), name: user.capitalized)) }
        // Through the directory, which makes the admin (every send's sender) a member: JMessage refuses a
        // group message from outside the group (docs/adapters/jmessage.md, "Conversations").
        let group = try await backend.createGroup(GroupProfile(id: "team", name: "team", owner: "alice", members: ["bobby", "carol"]))
        return (sandbox, backend, group)
    }

    func stopAll() async {
        for (sandbox, backend) in items.withLock({ $0 }) {
            await backend.stop()
            await sandbox.stop()
        }
    }
}

@Suite struct JMessageBackendTests {
    @Test func uploadsAndDownloadsMedia() async throws {
        let running = Running()
        let (_, backend, _) = try await running.make(pollIntervalMs: nil)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("jm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let source = directory.appendingPathComponent("note.txt")
        try Data("媒体 bytes".utf8).write(to: source)
        let uploaded = try await backend.upload(.local(source.path, mimeType: "text/plain"))
        #expect(uploaded.transferState == .uploaded && uploaded.remoteURL?.hasPrefix("qiniu/file/j/") == true)
        #expect(uploaded.size == Int64("媒体 bytes".utf8.count) && uploaded.checksum == String(Hashing.crc32(Array("媒体 bytes".utf8))))

        let sent = try await backend.send(OutgoingMessage(conversation: .direct("alice", "bobby"), sender: "alice",
                                                          content: .file(FileContent(uploaded, name: "note.txt"))))
        let page = try await backend.history(HistoryQuery(conversation: .direct("alice", "bobby")))
        let stored = try #require(page.messages.first { $0.id == sent.id })
        let received = try #require(stored.content.attachments.first)
        #expect(received.remoteURL == uploaded.remoteURL && received.needsDownload)
        let out = directory.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let downloaded = try await backend.download(received, into: out.path)
        #expect(downloaded.transferState == .downloaded)
        #expect(try Data(contentsOf: URL(fileURLWithPath: downloaded.localPath!)) == Data("媒体 bytes".utf8))
        await running.stopAll()
    }

    /// JMessage takes media only as its own uploads: a URL (a route's `media: link`) is fetched and
    /// uploaded before the send, once per URL; a host answering 404 fails the send for good, one that
    /// is down fails it retryable (docs/adapters/jmessage.md, "Media ids").
    @Test func mediaGivenAsURLsAreUploadedOnceBeforeTheSend() async throws {
        let running = Running()
        let media = try await MediaHost.start()
        let (sandbox, backend, _) = try await running.make(pollIntervalMs: nil)
        let url = media.url("/photos/tea.png")
        for _ in 0..<2 {
            let sent = try await backend.send(OutgoingMessage(conversation: .direct("alice", "bobby"), sender: "alice",
                                                              content: .image(ImageContent(.remote(url, mimeType: "image/png")))))
            let stored = try #require(try await backend.history(HistoryQuery(conversation: .direct("alice", "bobby"))).messages.first { $0.id == sent.id })
            let attachment = try #require(stored.content.attachments.first)
            #expect(attachment.remoteURL?.hasPrefix("qiniu/image/j/") == true, "\(attachment)")
            #expect(attachment.checksum == String(Hashing.crc32(MediaHost.bytes("/photos/tea.png"))))
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("jm-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let downloaded = try await backend.download(attachment, into: directory)
            #expect(try Data(contentsOf: URL(fileURLWithPath: try #require(downloaded.localPath))) == Data(MediaHost.bytes("/photos/tea.png")))
        }
        #expect(media.requests == ["/photos/tea.png"], "fetched once for two sends: \(media.requests)")

        let before = await sandbox.rig.server.vendor.messages().count
        do {
            _ = try await backend.send(OutgoingMessage(conversation: .direct("alice", "bobby"), sender: "alice",
                                                       content: .file(FileContent(.remote(media.url("/missing/a.pdf")), name: "a.pdf"))))
            Issue.record("a file the host does not have was sent")
        } catch let error as IMError {
            #expect(error.code == .notFound && !error.isRetryable, "\(error)")
        }
        let downURL = media.url("/down.png")
        await media.stop()
        do {
            _ = try await backend.send(OutgoingMessage(conversation: .direct("alice", "bobby"), sender: "alice",
                                                       content: .image(ImageContent(.remote(downURL)))))
            Issue.record("an image whose host is down was sent")
        } catch let error as IMError {
            #expect(error.isRetryable, "a media host that is down is tried again: \(error)")
        }
        #expect(await sandbox.rig.server.vendor.messages().count == before, "nothing was sent without its media")
        await running.stopAll()
    }

    @Test func provisioningIsIdempotentAndErrorsMap() async throws {
        let running = Running()
        let (sandbox, backend, _) = try await running.make(pollIntervalMs: nil)
        try await backend.ensureUser(UserProfile(id: "alice"))
        await #expect { try await backend.ensureUser(UserProfile(id: "x")) } throws: { ($0 as? IMError)?.vendorCode == "899003" }
        await #expect { try await backend.ensureUser(UserProfile(id: "dave#OTHERAPP")) } throws: { ($0 as? IMError)?.code == .invalidArgument }
        await #expect {
            _ = try await backend.send(OutgoingMessage(conversation: .direct("alice", "nobody"), sender: "alice", content: .text("x")))
        } throws: { ($0 as? IMError)?.code == .notFound && ($0 as? IMError)?.vendorCode == "899002" }
        _ = try await sandbox.http.send(.json(sandbox.baseURL + "/_sandbox/faults", Data(#"{"status":503,"count":1}"#.utf8)))
        await #expect {
            _ = try await backend.send(OutgoingMessage(conversation: .direct("alice", "bobby"), sender: "alice", content: .text("x")))
        } throws: { ($0 as? IMError)?.isRetryable == true && ($0 as? IMError)?.vendorCode == "899030" }
        await running.stopAll()
    }

    @Test func thePollerAndTheRoutingPushShareEventIDs() async throws {
        let running = Running()
        let (sandbox, backend, _) = try await running.make(pollIntervalMs: nil)
        let stream = backend.events()
        let collector = Task { () -> [IMEvent] in
            var iterator = stream.makeAsyncIterator()
            var seen: [IMEvent] = []
            while seen.count < 2, let event = await iterator.next() { seen.append(event) }
            return seen
        }
        let sent = try await backend.send(OutgoingMessage(conversation: .direct("alice", "bobby"), sender: "alice", content: .text("once")))
        let polled = CollectingSink()
        try await backend.pollOnce(into: polled)
        #expect(polled.events.map(\.eventID) == [JMessageCodec.messageEventID(Int64(sent.id.rawValue)!)])
        let raw = try await sandbox.call("GET", "/_sandbox/messages")
        let wire = try #require(try sandbox.json(raw)["messages"]?.arrayValue?.first?["raw"])
        let push = HTTPRequestData(method: "POST", path: "/callbacks/jm", headers: [("Authorization", sandbox.auth)],
                                   body: Array(JSONValue.object(["total": 1, "messages": [wire]]).jsonData()))
        let pushed = CollectingSink()
        let response = await backend.handle(push, sink: pushed)
        #expect(response.status == 200 && response.body.isEmpty)
        #expect(pushed.events.map(\.eventID) == [JMessageCodec.messageEventID(Int64(sent.id.rawValue)!)])
        // The name `imbridge verify --repair` records in the ledger with a copy it sends (`MessageEventNaming`).
        #expect(pushed.events.map(\.eventID) == [backend.messageEventID(for: sent)])
        try await backend.recall(sent.id, in: sent.conversation, by: "alice")
        let events = await collector.value
        #expect(events.first?.messageID == sent.id)
        #expect(events.last?.kindName == "recalled", "the push's copy of the message was not published twice")
        await running.stopAll()
    }

    @Test func thePollerSavesItsPositionOnlyAfterAcceptReturned() async throws {
        let running = Running()
        let (_, backend, _) = try await running.make(pollIntervalMs: nil)
        _ = try await backend.send(OutgoingMessage(conversation: .direct("alice", "bobby"), sender: "alice", content: .text("one")))
        _ = try await backend.send(OutgoingMessage(conversation: .direct("alice", "bobby"), sender: "bobby", content: .text("two")))
        let (gate, open) = AsyncStream<Void>.makeStream()
        let sink = GatedSink(gate: gate)
        let polling = Task { try await backend.poller.pollPage(into: sink) }
        for _ in 0..<500 where sink.texts.count < 2 { try await Task.sleep(nanoseconds: 10_000_000) }
        #expect(sink.texts == ["one", "two"])
        #expect(try await backend.poller.currentPosition().seen.isEmpty, "nothing is saved while accept has not returned")
        open.yield()
        _ = try await polling.value
        #expect(try await backend.poller.currentPosition().seen.count == 2, "saved once accept returned")
        await running.stopAll()
    }

    @Test func aFailedAcceptLeavesThePositionAndThePageIsFetchedAgain() async throws {
        let running = Running()
        let (_, backend, _) = try await running.make(pollIntervalMs: nil)
        _ = try await backend.send(OutgoingMessage(conversation: .direct("alice", "bobby"), sender: "alice", content: .text("one")))
        _ = try await backend.send(OutgoingMessage(conversation: .direct("alice", "bobby"), sender: "bobby", content: .text("two")))
        let sink = CollectingSink()
        sink.fail(with: IMError(.unavailable, "store down"))
        let before = try await backend.poller.currentPosition()
        await #expect { try await backend.poller.pollOnce(into: sink) } throws: { ($0 as? IMError)?.code == .unavailable }
        #expect(try await backend.poller.currentPosition() == before, "the position did not move")
        sink.fail(with: nil)
        try await backend.poller.pollOnce(into: sink)
        #expect(sink.events.compactMap(\.messageID).count == 2, "the page was fetched and pushed again")
        #expect(try await backend.poller.currentPosition().seen.count == 2)
        let again = CollectingSink()
        try await backend.poller.pollOnce(into: again)
        #expect(again.events.isEmpty, "nothing accepted is pushed twice")
        await running.stopAll()
    }

    @Test func theIntakeFeedsTheSinkAndEventsAndStops() async throws {
        let running = Running()
        let (_, backend, _) = try await running.make(pollIntervalMs: nil)
        let stream = backend.events()
        let sink = CollectingSink()
        backend.setPollInterval(50)
        try await backend.startIntake(into: sink)
        let sent = try await backend.send(OutgoingMessage(conversation: .direct("alice", "bobby"), sender: "alice", content: .text("in")))
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next()?.messageID == sent.id, "events() shows what the sink accepted")
        #expect(sink.events.map(\.messageID) == [sent.id])
        try await backend.recall(sent.id, in: sent.conversation, by: "alice")
        #expect(await iterator.next()?.kindName == "recalled")
        for _ in 0..<500 where sink.events.count < 2 { try await Task.sleep(nanoseconds: 10_000_000) }
        #expect(sink.events.last?.kindName == "recalled", "a retract made here reaches the intake's sink")
        await backend.stopIntake()
        _ = try await backend.send(OutgoingMessage(conversation: .direct("alice", "bobby"), sender: "alice", content: .text("after")))
        try await Task.sleep(nanoseconds: 300_000_000)
        #expect(sink.events.count == 2, "nothing is polled after stopIntake")
        await running.stopAll()
    }

    @Test func findsMessagesByClientIDAndListsConversations() async throws {
        let running = Running()
        let (_, backend, group) = try await running.make(pollIntervalMs: nil)
        let direct = ConversationRef.direct("alice", "bobby")
        let sent = try await backend.send(OutgoingMessage(conversation: direct, sender: "bobby", content: .text("once"), clientMessageID: "imb-7"))
        _ = try await backend.send(OutgoingMessage(conversation: .group(group), sender: "carol", content: .text("g"), clientMessageID: "imb-8"))
        let found = try await backend.message(withClientID: "imb-7", in: direct)
        #expect(found?.id == sent.id && found?.sender == "bobby" && found?.clientMessageID == "imb-7")
        #expect(try await backend.message(withClientID: "imb-8", in: direct) == nil, "another conversation's client id is not found here")
        #expect(try await backend.message(withClientID: "imb-9", in: .group(group)) == nil)
        #expect(try await backend.allConversations() == [direct, .group(group)])
        await running.stopAll()
    }
}

/// Vendor error codes as the client maps them.
extension JMessageBackendTests {
    @Test(arguments: [
        (899003, 400, IMError.Code.invalidArgument, false), (899002, 403, .notFound, false), (899008, 401, .authenticationFailed, false),
        (899016, 403, .permissionDenied, false), (855001, 403, .recallWindowExpired, false), (855002, 403, .permissionDenied, false),
        (855003, 403, .notFound, false), (855004, 403, .alreadyRecalled, false), (899000, 500, .unavailable, true),
        (899030, 503, .unavailable, true), (803010, 429, .rateLimited, true),
    ] as [(Int, Int, IMError.Code, Bool)])
    func vendorCodesMap(code: Int, status: Int, neutral: IMError.Code, retryable: Bool) {
        #expect(JMessageErrors.table.status(for: code) == status)
        let error = JMessageErrors.error(status: status, code: code, message: "m", retryAfterMs: 2000)
        #expect(error.code == neutral && error.vendorCode == String(code) && error.isRetryable == retryable)
        #expect(error.retryAfterMs == (retryable ? 2000 : nil))
    }

    @Test func statusAloneStillMaps() {
        #expect(JMessageErrors.error(status: 429, code: 899999, message: nil, retryAfterMs: nil).code == .rateLimited)
        #expect(JMessageErrors.error(status: 502, code: nil, message: "bad gateway", retryAfterMs: nil).isRetryable)
    }
}

/// A sink whose `accept` takes the events, then waits for `gate` before it returns.
final class GatedSink: EventSink {
    let gate: AsyncStream<Void>
    let taken = Mutex<[IMEvent]>([])
    init(gate: AsyncStream<Void>) { self.gate = gate }
    func accept(_ events: [IMEvent]) async throws {
        taken.withLock { $0 += events }
        for await _ in gate { break }
    }
    var texts: [String] {
        taken.withLock { $0 }.compactMap { event in
            if case .message(let message) = event.kind, case .text(let text) = message.content { text.text } else { nil }
        }
    }
}
