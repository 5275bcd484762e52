import Foundation
import IMAdapterKit
import IMCore
import IMHTTP
import SandboxTestSupport
import Synchronization
import Testing
@testable import WuKong

@Suite struct WuKongBackendTests {
    /// Collects events from a stream in the background.
    final class Collector: Sendable {
        let events = Mutex<[IMEvent]>([])
        init(_ stream: AsyncStream<IMEvent>) {
            Task { [weak self] in
                for await event in stream {
                    guard let self else { return }
                    self.events.withLock { $0.append(event) }
                }
            }
        }
        var all: [IMEvent] { events.withLock { $0 } }
        func wait(timeout: Double = 5, _ condition: ([IMEvent]) -> Bool) async -> [IMEvent] {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline, !condition(all) { try? await Task.sleep(nanoseconds: 10_000_000) }
            return all
        }
    }

    @Test func redeliveredWebhookReturnsSameEventsButEventsYieldsOnce() async throws {
        let backend = WuKongBackend(settings: .at("http://127.0.0.1:9", webhookSecret: "s"))
        let collector = Collector(backend.events())
        let wire = WKMessage(messageID: 77, messageSeq: 1, fromUID: "u1", channelID: "u2", channelType: 1, timestamp: 1_700_000_000,
                             payload: Data(#"{"type":1,"content":"hi"}"#.utf8))
        let request = HTTPRequestData(method: "POST", path: "/wukong", rawQuery: "secret=s?event=msg.notify",
                                      body: Array(try WuKongJSON.encode([wire, wire])))
        let first = CollectingSink(), second = CollectingSink()
        #expect(await backend.handle(request, sink: first).status == 200)
        #expect(await backend.handle(request, sink: second).status == 200)
        #expect(first.events.map(\.eventID) == ["msg:77", "msg:77"] && second.events.map(\.eventID) == first.events.map(\.eventID))
        let seen = await collector.wait { !$0.isEmpty }
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(seen.count == 1 && collector.all.count == 1)
        // Forged: refused with 401 and no event.
        let forged = await backend.handle(HTTPRequestData(method: "POST", path: "/wukong", rawQuery: "secret=x&event=msg.notify",
                                                          body: Array(try WuKongJSON.encode([wire]))), sink: first)
        #expect(forged.status == 401)
        let malformed = await backend.handle(HTTPRequestData(method: "POST", path: "/wukong", rawQuery: "secret=s&event=msg.notify",
                                                             body: Array("[{".utf8)), sink: first)
        #expect(malformed.status == 400)
        #expect(first.events.count == 2 && first.refusals.map(\.code) == [.authenticationFailed, .malformedPayload])
        #expect(collector.all.count == 1)
    }

    @Test func acceptsTheFlatSendReplyOfOtherVersions() async throws {
        final class Seen: Sendable { let tokens = Mutex<[String]>([]) }
        let seen = Seen()
        let stub = HTTPServer { request in
            seen.tokens.withLock { $0.append(request.header("token") ?? "") }
            return .json(Data(#"{"message_id":5,"message_seq":3,"client_msg_no":"c9"}"#.utf8))
        }
        try await stub.start()
        defer { Task { await stub.stop() } }
        let backend = WuKongBackend(settings: .at(stub.baseURL, managerToken: "mgr"))
        let sent = try await backend.send(OutgoingMessage(conversation: .direct("a", "b"), sender: "a", content: .text("x")))
        #expect(sent.id == "5" && sent.seq == 3 && sent.clientMessageID == "c9")
        #expect(seen.tokens.withLock { $0 } == ["mgr"], "the manager token header is sent")
    }

    @Test func wrongManagerTokenIsAnAuthenticationError() async throws {
        let rig = try await WuKongRig.start()
        defer { Task { await rig.stop() } }
        let wrong = WuKongBackend(settings: .at(rig.sandbox.baseURL, managerToken: "wrong"))
        do {
            _ = try await wrong.send(OutgoingMessage(conversation: .direct("a", "b"), sender: "a", content: .text("x")))
            Issue.record("accepted a wrong manager token")
        } catch let error as IMError {
            #expect(error.code == .authenticationFailed && !error.isRetryable)
        }
    }

    @Test func historyAnchorsAroundAndEdges() async throws {
        let rig = try await WuKongRig.start()
        defer { Task { await rig.stop() } }
        let dm = ConversationRef.direct("p", "q")
        var ids: [MessageID] = []
        for n in 1...9 { ids.append(try await rig.backend.send(OutgoingMessage(conversation: dm, sender: n % 2 == 0 ? "p" : "q", content: .text("\(n)"))).id) }
        func page(_ anchor: HistoryAnchor, _ limit: Int) async throws -> HistoryPage {
            try await rig.backend.history(HistoryQuery(conversation: dm, anchor: anchor, limit: limit))
        }
        let around = try await page(.around(HistoryCursor(seq: 5)), 5)
        #expect(around.messages.compactMap(\.seq) == [3, 4, 5, 6, 7])
        let aroundEnd = try await page(.around(HistoryCursor(seq: 9)), 5)
        #expect(aroundEnd.messages.compactMap(\.seq) == [5, 6, 7, 8, 9], "the short side is filled from the other")
        let beforeFirst = try await page(.before(HistoryCursor(seq: 1)), 5)
        #expect(beforeFirst.messages.isEmpty && !beforeFirst.hasOlder)
        let latest = try await page(.latest, 20)
        #expect(latest.messages.map(\.id) == ids && !latest.hasOlder && !latest.hasNewer)
        #expect(latest.messages.allSatisfy { $0.conversation == dm })
        let tail = try await page(.after(HistoryCursor(seq: 7)), 5)
        #expect(tail.messages.compactMap(\.seq) == [8, 9] && !tail.hasNewer)
    }

    @Test func conversationListsAndUnread() async throws {
        let rig = try await WuKongRig.start()
        defer { Task { await rig.stop() } }
        let dm = ConversationRef.direct("x1", "x2")
        let first = try await rig.backend.send(OutgoingMessage(conversation: dm, sender: "x1", content: .text("one")))
        _ = try await rig.backend.send(OutgoingMessage(conversation: dm, sender: "x1", content: .text("two"),
                                                       mentions: Mentions(users: ["x2"])))
        let list = try await rig.backend.conversations(for: "x2")
        #expect(list.map(\.conversation) == [dm])
        #expect(list.first?.unreadCount == 2 && list.first?.mentionsMe == true && list.first?.lastMessage?.content == .text("two"))
        #expect(try await rig.backend.totalUnread(for: "x2") == 2)
        #expect(try await rig.backend.unreadCount(in: dm, for: "x1") == 0)
        await #expect(throws: IMError.self) { try await rig.backend.setMuted(true, conversation: dm, for: "x2") }
        _ = first
    }

    @Test func commandsArriveAsCommandEventsAndAreNotStored() async throws {
        let rig = try await WuKongRig.start()
        defer { Task { await rig.stop() } }
        let collector = Collector(rig.backend.events())
        let dm = ConversationRef.direct("c1", "c2")
        _ = try await rig.backend.send(OutgoingMessage(conversation: dm, sender: "c1",
                                                       content: .command(CommandContent(name: "typing", data: ["on": true]))))
        let events = await collector.wait { $0.contains { $0.kindName == "command" } }
        guard case .command(let conversation, let sender, let content, _)? = events.first(where: { $0.kindName == "command" })?.kind else {
            Issue.record("no command event: \(events.map(\.kindName))"); return
        }
        #expect(conversation == dm && sender == "c1" && content == CommandContent(name: "typing", data: ["on": true]))
        #expect(try await rig.backend.history(HistoryQuery(conversation: dm)).messages.isEmpty)
    }

    @Test func groupMembershipDrivesConversationLists() async throws {
        let rig = try await WuKongRig.start()
        defer { Task { await rig.stop() } }
        try await rig.backend.ensureGroup("team", members: ["g1"])
        try await rig.backend.setMembers(["g2"], of: "team", present: true)
        _ = try await rig.backend.send(OutgoingMessage(conversation: .group("team"), sender: "g1", content: .text("hi team")))
        #expect(try await rig.backend.conversations(for: "g2").map(\.conversation) == [.group("team")])
        try await rig.backend.setMembers(["g2"], of: "team", present: false)
        #expect(try await rig.backend.conversations(for: "g2").isEmpty)
    }

    @Test func extrasChangesArriveAsEventsThroughTheWebhook() async throws {
        let rig = try await WuKongRig.start()
        defer { Task { await rig.stop() } }
        let collector = Collector(rig.backend.events())
        let dm = ConversationRef.direct("m1", "m2")
        let sent = try await rig.backend.send(OutgoingMessage(conversation: dm, sender: "m1", content: .text("hello"), expansion: ["a": "1"]))
        _ = try await rig.backend.updateExpansion(of: sent.id, in: dm, by: "m2", .remove(["a"]))
        try await rig.backend.edit(sent.id, in: dm, by: "m1", content: .text("hello!"))
        #expect(try await rig.backend.toggleReaction("❤️", on: sent.id, in: dm, by: "m2"))
        try await rig.backend.markRead(dm, by: "m2", upTo: sent.id)
        try await rig.backend.recall(sent.id, in: dm, by: "m1")
        let events = await collector.wait { Set($0.map(\.kindName)).isSuperset(of: ["message", "expansion", "edited", "reaction", "read", "recalled"]) }
        let kinds = Set(events.map(\.kindName))
        #expect(kinds.isSuperset(of: ["message", "expansion", "edited", "reaction", "read", "recalled"]), "got \(events.map(\.kindName))")
        let expansions = events.compactMap { event -> ExpansionDelta? in
            if case .expansionChanged(_, _, _, let delta) = event.kind { delta } else { nil }
        }
        #expect(expansions.map(\.removed) == [["a"]], "the initial keys are not reported as a change")
        #expect(Set(events.map(\.eventID)).count == events.count, "no event twice")
        await #expect(throws: IMError.self) { try await rig.backend.recall(sent.id, in: dm, by: "m1") }
        let stored = try await rig.backend.history(HistoryQuery(conversation: dm)).messages.first
        #expect(stored?.isRecalled == true && stored?.edit?.content == .text("hello!") && stored?.readCounts?.read == 1)
        #expect(stored?.reactions.map(\.emoji) == ["❤️"] && stored?.expansion?.values == [:])
    }
}

@Suite struct WuKongBackendRedeliveryTests {
    /// The receiver processes a batch but answers 500 (a bridge that crashed before its 200): the
    /// sandbox redelivers, the sink gets the same event ids again, `events()` yields once.
    @Test func redeliveryAfterNon200GivesTheSameEventIDs() async throws {
        final class Slot: Sendable {
            let backend = Mutex<WuKongBackend?>(nil)
            let answers = Mutex<[[EventID]]>([])
        }
        let slot = Slot()
        let receiver = HTTPServer { request in
            guard let backend = slot.backend.withLock({ $0 }) else { return .text("not ready", status: 503) }
            let sink = CollectingSink()
            let response = await backend.handle(request, sink: sink)
            let events = sink.events
            guard response.status == 200, !events.isEmpty else { return response }
            let first = slot.answers.withLock { answers in
                answers.append(events.map(\.eventID))
                return answers.count == 1
            }
            return first ? .text("crashed", status: 500) : .json(["status": 200])
        }
        try await receiver.start()
        let h = try await WuKongSandboxHelper.start(.init(callbacks: .url(receiver.baseURL + "/wukong"), intervalMs: 10))
        defer { Task { await h.stop(); await receiver.stop() } }
        let backend = WuKongBackend(settings: .at(h.baseURL))
        slot.backend.withLock { $0 = backend }
        let collector = WuKongBackendTests.Collector(backend.events())
        let id = try await h.sendText("once", from: "r1", to: "r2")
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, slot.answers.withLock({ $0.count }) < 2 { try await Task.sleep(nanoseconds: 10_000_000) }
        let answers = slot.answers.withLock { $0 }
        #expect(answers.count == 2)
        #expect(answers.first == [EventID("msg:\(id)")] && answers.last == answers.first)
        let events = await collector.wait { !$0.isEmpty }
        #expect(events.map(\.eventID) == [EventID("msg:\(id)")])
    }
}

@Suite struct WuKongBackendErrorTests {
    static let table: [(Int, String, IMError.Code?, Bool)] = [
        (200, #"{"status":200}"#, nil, false),
        (200, #"{"start_message_seq":0,"messages":[]}"#, nil, false),
        (200, #"{"status":404}"#, .notFound, false),
        (200, #"{"status":19}"#, .permissionDenied, false),
        (200, #"{"status":24}"#, .permissionDenied, false),
        (200, #"{"status":22}"#, .rateLimited, true),
        (200, #"{"status":15}"#, .unavailable, true),
        (200, #"{"status":2}"#, .authenticationFailed, false),
        (200, #"{"status":77}"#, .vendorError, false),
        (400, #"{"msg":"payload不能为空！","status":400}"#, .invalidArgument, false),
        (401, "", .authenticationFailed, false),
        (404, "404 page not found", .notFound, false),
        (429, "", .rateLimited, true),
        (500, "", .unavailable, true),
        (503, "", .unavailable, true),
    ]

    @Test(arguments: table.indices) func maps(index: Int) {
        let (status, body, code, retryable) = Self.table[index]
        let error = WuKongErrors.map(httpStatus: status, body: Data(body.utf8))
        #expect(error?.code == code)
        #expect((error?.isRetryable ?? false) == retryable)
        if status == 400 { #expect(error?.vendorMessage == "payload不能为空！") }
    }
}

@Suite struct WuKongBackendLookupTests {
    @Test func findsAMessageByItsClientIDAndNothingElse() async throws {
        let harness = try await WuKongRig.start()
        defer { Task { await harness.stop() } }
        let group = ConversationRef.group("lookup")
        let sent = try await harness.backend.send(OutgoingMessage(conversation: group, sender: "alice", content: .text("once"),
                                                                  clientMessageID: "imb-42"))
        let found = try await harness.backend.message(withClientID: "imb-42", in: group)
        #expect(found?.id == sent.id && found?.content == .text("once"))
        #expect(try await harness.backend.message(withClientID: "imb-43", in: group) == nil)
        let direct = ConversationRef.direct("alice", "bob")
        let dm = try await harness.backend.send(OutgoingMessage(conversation: direct, sender: "bob", content: .text("dm"), clientMessageID: "imb-44"))
        #expect(try await harness.backend.message(withClientID: "imb-44", in: direct)?.id == dm.id)
    }
}
