import Foundation
import IMCore
import IMHTTP
import IMSandbox
import IMTesting
import JMessage
import Synchronization
import Testing

/// Started sandboxes and backends, stopped together at the end of a test.
final class Running: Sendable {
    let items = Mutex<[(SandboxHarness, JMessageBackend)]>([])

    func make(registry: ContentRegistry = ContentRegistry(), pollIntervalMs: Int64? = 100) async throws -> (SandboxHarness, JMessageBackend, GroupID) {
        let sandbox = try await SandboxHarness.start()
        let backend = JMessageBackend(id: "jm", config: sandbox.config, registry: registry, clock: sandbox.clock,
                                      pollerSettings: .init(startLookbackMs: 60_000))
        items.withLock { $0.append((sandbox, backend)) }
        try await backend.start(pollIntervalMs: pollIntervalMs)
        for user in ["alice", "bobby", "carol"] { try await backend.ensureUser(UserProfile(id: UserID(user), name: user.capitalized)) }
        let group = try await backend.client.createGroup(WireGroupCreate(ownerUsername: "alice", name: "team", membersUsername: ["bobby", "carol"]))
        return (sandbox, backend, GroupID(String(group.gid)))
    }

    func stopAll() async {
        for (sandbox, backend) in items.withLock({ $0 }) {
            await backend.stop()
            await sandbox.stop()
        }
    }
}

@Suite struct JMessageConformanceTests {
    @Test func backendPassesTheConformanceSuiteAgainstTheSandbox() async throws {
        let running = Running()
        let suite = ConformanceSuite {
            let registry = ContentRegistry()
            let (sandbox, backend, group) = try await running.make(registry: registry)
            return ConformanceSubject(backend: backend, users: ["alice", "bobby", "carol"], group: group,
                                      advanceClock: { sandbox.clock.advance(byMs: $0) }, registry: registry)
        }
        let report = await suite.run()
        await running.stopAll()
        #expect(report.failures.isEmpty, "\(report)")
        #expect(report.passed.count >= 19, "\(report)")
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
        #expect(uploaded.size == Int64("媒体 bytes".utf8.count) && uploaded.checksum == String(CRC32.checksum(Array("媒体 bytes".utf8))))

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

    @Test func provisioningIsIdempotentAndErrorsMap() async throws {
        let running = Running()
        let (sandbox, backend, _) = try await running.make(pollIntervalMs: nil)
        try await backend.ensureUser(UserProfile(id: "alice"))
        await #expect { try await backend.ensureUser(UserProfile(id: "x")) } throws: { ($0 as? IMError)?.vendorCode == "899003" }
        await #expect { try await backend.ensureUser(UserProfile(id: "dave#OTHERAPP")) } throws: { ($0 as? IMError)?.code == .invalidArgument }
        await #expect {
            _ = try await backend.send(OutgoingMessage(conversation: .direct("alice", "nobody"), sender: "alice", content: .text("x")))
        } throws: { ($0 as? IMError)?.code == .notFound && ($0 as? IMError)?.vendorCode == "899002" }
        _ = try await sandbox.http.send(.json(sandbox.base + "/_sandbox/faults", Data(#"{"status":503,"count":1}"#.utf8)))
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
        try await backend.poller.pollOnce()
        let raw = try await sandbox.call("GET", "/_sandbox/messages")
        let wire = try #require(try sandbox.json(raw)["messages"]?.arrayValue?.first?["raw"])
        let push = HTTPRequestData(method: "POST", path: "/callbacks/jm", headers: [("Authorization", sandbox.auth)],
                                   body: Array(JSONValue.object(["total": 1, "messages": [wire]]).jsonData()))
        let outcome = try await backend.receiveCallback(push)
        #expect(outcome.events.map(\.eventID) == [JMessageCodec.messageEventID(Int64(sent.id.rawValue)!)])
        try await backend.recall(sent.id, in: sent.conversation, by: "alice")
        let events = await collector.value
        #expect(events.first?.messageID == sent.id)
        #expect(events.last?.kindName == "recalled", "the push's copy of the message was not published twice")
        await running.stopAll()
    }

    @Test func thePollerSavesItsPositionOnlyAfterTheSubscriberPulled() async throws {
        let running = Running()
        let (_, backend, _) = try await running.make(pollIntervalMs: nil)
        let stream = backend.events()
        _ = try await backend.send(OutgoingMessage(conversation: .direct("alice", "bobby"), sender: "alice", content: .text("one")))
        _ = try await backend.send(OutgoingMessage(conversation: .direct("alice", "bobby"), sender: "bobby", content: .text("two")))
        let (gate, open) = AsyncStream<Void>.makeStream()
        let sink = Sink()
        let consumer = Task {
            for await event in stream {
                sink.events.withLock { $0.append(event) }
                if sink.events.withLock({ $0.count }) == 2 { for await _ in gate { break } }
            }
        }
        let polling = Task { try await backend.poller.pollPage() }
        for _ in 0..<500 where sink.events.withLock({ $0.count }) < 2 { try await Task.sleep(nanoseconds: 10_000_000) }
        #expect(sink.texts == ["one", "two"])
        #expect(try await backend.poller.currentPosition().seen.isEmpty, "nothing is saved while the subscriber holds an unconsumed event")
        open.yield()
        _ = try await polling.value
        #expect(try await backend.poller.currentPosition().seen.count == 2, "saved once the subscriber pulled again")
        consumer.cancel()
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
