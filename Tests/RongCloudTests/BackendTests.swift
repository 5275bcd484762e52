import Foundation
import IMCore
import IMHTTP
import IMSandbox
import Testing
@testable import RongCloud
import RongCloudSandbox

/// `RongCloudBackend` against the sandbox, beyond the conformance suite: paging anchors across more
/// than one API page, expansions cleared in chunks, mentions/replies/commands through the routing
/// callback, and refusals that must happen before any call.
@Suite(.serialized) struct RongCloudBackendTests {
    typealias Rig = RongCloudConformanceTests.Rig

    func events(_ rig: Rig, _ stream: AsyncStream<IMEvent>, count: Int) async -> [IMEvent] {
        let waiter = Task {
            var collected: [IMEvent] = []
            for await event in stream {
                collected.append(event)
                if collected.count == count { break }
            }
            return collected
        }
        let timeout = Task {
            try? await Task.sleep(nanoseconds: 5_000_000_000)
            waiter.cancel()
        }
        let result = await waiter.value
        timeout.cancel()
        return result
    }

    @Test func historyAnchorsAcrossSeveralAPIPages() async throws {
        try await RongCloudConformanceTests.withRig { rig in
            let chat = ConversationRef.direct("alice", "bob")
            var ids: [MessageID] = []
            for n in 0..<230 {
                ids.append(try await rig.backend.send(OutgoingMessage(conversation: chat, sender: n % 2 == 0 ? "alice" : "bob",
                                                                      content: .text("m\(n)"))).id)
            }
            func page(_ anchor: HistoryAnchor, _ limit: Int) async throws -> HistoryPage {
                try await rig.backend.history(HistoryQuery(conversation: chat, anchor: anchor, limit: limit, viewer: "bob"))
            }
            let latest = try await page(.latest, 10)
            #expect(latest.messages.map(\.id) == Array(ids[220..<230]) && latest.hasOlder && !latest.hasNewer)
            let before = try await page(.before(try #require(latest.olderCursor)), 150)
            #expect(before.messages.map(\.id) == Array(ids[70..<220]) && before.hasOlder)
            let oldest = try await page(.oldest, 120)
            #expect(oldest.messages.map(\.id) == Array(ids[0..<120]) && oldest.hasNewer && !oldest.hasOlder)
            let after = try await page(.after(try #require(oldest.newerCursor)), 200)
            #expect(after.messages.map(\.id) == Array(ids[120..<230]) && !after.hasNewer)
            let around = try await page(.around(HistoryReader.cursor(after.messages[0])), 5)
            #expect(around.messages.map(\.id) == Array(ids[118..<123]))
            #expect(after.messages.first?.content == .text("m120") && after.messages.first?.sender == "alice")
            await #expect(throws: IMError.self) { _ = try await page(.before(HistoryCursor("nonsense")), 5) }
            await #expect(throws: IMError.self) {
                _ = try await rig.backend.history(HistoryQuery(conversation: .chatroom("r1"), limit: 5))
            }
        }
    }

    /// RongCloud's history API gives a window newest first (`startTime` the newer bound) and the sandbox
    /// refuses a window written the other way round, so every anchor must be read in that direction:
    /// bursts of more than a page with quiet hours between them, read through every anchor, come back whole
    /// and in order — and a read after the newest message costs one call.
    @Test func everyAnchorReadsTheVendorsNewestFirstWindows() async throws {
        try await RongCloudConformanceTests.withRig { rig in
            let chat = ConversationRef.group("g-windows")
            var ids: [MessageID] = []
            var sent: [Message] = []
            for (burst, gapMs) in [(150, 3_600_000), (5, 6 * 3_600_000), (120, 0)] {
                for n in 0..<burst {
                    sent.append(try await rig.backend.send(OutgoingMessage(conversation: chat, sender: "alice", content: .text("m\(ids.count)"))))
                    ids.append(sent.last!.id)
                    if n % 40 == 39 { rig.sandbox.clock.advance(byMs: 1) }
                }
                rig.sandbox.clock.advance(byMs: Int64(gapMs))
            }
            func page(_ anchor: HistoryAnchor, _ limit: Int) async throws -> HistoryPage {
                try await rig.backend.history(HistoryQuery(conversation: chat, anchor: anchor, limit: limit))
            }
            func historyCalls() -> Int { rig.sandbox.traceContexts.all.filter { $0.path == RCPaths.groupHistory }.count }

            // Forward through the whole conversation, 40 at a time.
            var read: [MessageID] = []
            var current = try await page(.oldest, 40)
            #expect(!current.hasOlder)
            read += current.messages.map(\.id)
            while current.hasNewer {
                current = try await page(.after(try #require(current.newerCursor)), 40)
                read += current.messages.map(\.id)
            }
            let firstDifference = zip(read, ids).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            #expect(read.count == ids.count && firstDifference == nil, "forward: \(read.count) of \(ids.count) read")
            // Across the quiet hours, from inside a burst.
            let across = try await page(.after(HistoryReader.cursor(try await Self.stored(rig, chat, ids[148]))), 10)
            #expect(across.messages.map(\.id) == Array(ids[149..<159]) && across.hasNewer)
            // Nothing after the newest: one call.
            let before = historyCalls()
            let none = try await page(.after(try #require(current.newerCursor)), 40)
            #expect(none.messages.isEmpty && !none.hasNewer && historyCalls() - before == 1, "\(historyCalls() - before) calls")

            let latest = try await page(.latest, 30)
            #expect(latest.messages.map(\.id) == Array(ids[245..<275]) && latest.hasOlder && !latest.hasNewer)
            let back = try await page(.before(try #require(latest.olderCursor)), 100)
            #expect(back.messages.map(\.id) == Array(ids[145..<245]) && back.hasOlder)
            // Before a cursor from history: read back from just above its time, one call here.
            let cursor100 = HistoryReader.cursor(try await Self.stored(rig, chat, ids[100]))
            let callsBefore = historyCalls()
            let behind100 = try await page(.before(cursor100), 10)
            #expect(behind100.messages.map(\.id) == Array(ids[90..<100]) && behind100.hasOlder && behind100.hasNewer)
            #expect(historyCalls() - callsBefore == 1, "\(historyCalls() - callsBefore) calls")
            // Before the cursors `send` returned (this process's clock): the first burst's match RongCloud's
            // time; the last burst's are 7 hours behind it (the sandbox's clock was moved on), found by msgUID.
            let behindSent = try await page(.before(try rig.backend.cursor(for: sent[140])), 5)
            #expect(behindSent.messages.map(\.id) == Array(ids[135..<140]))
            let behindLate = try await page(.before(try rig.backend.cursor(for: sent[200])), 5)
            #expect(behindLate.messages.map(\.id) == Array(ids[195..<200]))
            let first = try await page(.before(HistoryReader.cursor(try await Self.stored(rig, chat, ids[3]))), 10)
            #expect(first.messages.map(\.id) == Array(ids[0..<3]) && !first.hasOlder)
            let around = try await page(.around(HistoryReader.cursor(try await Self.stored(rig, chat, ids[155]))), 5)
            #expect(around.messages.map(\.id) == Array(ids[153..<158]) && around.hasOlder && around.hasNewer)
            let everything = try await page(.latest, 500)
            #expect(everything.messages.count == ids.count && everything.messages.map(\.id) == ids && !everything.hasOlder)
        }
    }

    /// A message as history shows it (its cursor carries RongCloud's `msgTime`).
    static func stored(_ rig: Rig, _ chat: ConversationRef, _ id: MessageID) async throws -> Message {
        let all = try await rig.backend.history(HistoryQuery(conversation: chat, anchor: .latest, limit: 1_000))
        return try #require(all.messages.first { $0.id == id })
    }

    @Test func expansionClearDeletesEveryKeyInChunksAndAnnouncesEachChunk() async throws {
        try await RongCloudConformanceTests.withRig { rig in
            let chat = ConversationRef.group("g1")
            let initial = Dictionary(uniqueKeysWithValues: (0..<100).map { ("k\($0)", "v") })
            let sent = try await rig.backend.send(OutgoingMessage(conversation: chat, sender: "alice", content: .text("poll"), expansion: initial))
            _ = try await rig.backend.updateExpansion(of: sent.id, in: chat, by: "bob",
                                                      .set(Dictionary(uniqueKeysWithValues: (100..<150).map { ("k\($0)", "v") })))
            #expect(try await rig.backend.expansion(of: sent.id, in: chat).count == 150)
            #expect(await (rig.sandbox.vendor as? RongCloudSandbox)?.waitForDeliveries() == true, "earlier signals are out of the way")
            let stream = rig.backend.events()
            let cleared = try await rig.backend.updateExpansion(of: sent.id, in: chat, by: "bob", .clear)
            #expect(cleared.cleared && cleared.removed.count == 150)
            #expect(try await rig.backend.expansion(of: sent.id, in: chat).count == 0)
            let signals = await events(rig, stream, count: 2)
            let removed = signals.flatMap { event -> [String] in
                if case .expansionChanged(let id, _, let by, let delta) = event.kind, id == sent.id, by == "bob" { return delta.removed }
                return []
            }
            #expect(Set(removed).count == 150, "two delete calls (100 + 50), each routed with its keys")
            let none = try await rig.backend.updateExpansion(of: sent.id, in: chat, by: "bob", .remove(["k1"]))
            #expect(none.isEmpty)
        }
    }

    @Test func mentionsRepliesAndCommandsArriveThroughTheCallback() async throws {
        try await RongCloudConformanceTests.withRig { rig in
            let chat = ConversationRef.group("g1")
            let stream = rig.backend.events()
            let question = try await rig.backend.send(OutgoingMessage(conversation: chat, sender: "alice", content: .text("@bob lunch?"),
                                                                      mentions: Mentions(users: ["bob"])))
            let answer = try await rig.backend.send(OutgoingMessage(
                conversation: chat, sender: "bob", content: .text("yes"),
                reply: ReplyRef(messageID: question.id, sender: "alice", digest: "@bob lunch?")))
            _ = try await rig.backend.send(OutgoingMessage(conversation: chat, sender: "bob",
                                                           content: .command(CommandContent(name: "typing", data: "1"))))
            let received = await events(rig, stream, count: 3)
            #expect(received.count == 3)
            guard received.count == 3, case .message(let first) = received[0].kind, case .message(let second) = received[1].kind,
                  case .command(_, let sender, let command, _) = received[2].kind else {
                Issue.record("unexpected events \(received)")
                return
            }
            #expect(first.id == question.id && first.mentions == Mentions(users: ["bob"]) && first.conversation == chat)
            #expect(second.id == answer.id && second.reply?.messageID == question.id && second.reply?.digest == "@bob lunch?")
            #expect(sender == "bob" && command == CommandContent(name: "typing", data: "1"))
            let stored = try await rig.backend.history(HistoryQuery(conversation: chat, limit: 10))
            #expect(stored.messages.map(\.id) == [question.id, answer.id], "the command is not stored")
        }
    }

    @Test func refusalsBeforeAnyCall() async throws {
        try await RongCloudConformanceTests.withRig { rig in
            let backend = rig.backend
            await #expect(throws: IMError.self) {
                _ = try await backend.send(OutgoingMessage(conversation: .direct("alice", "bob"), sender: "alice",
                                                           content: .text("x"), expansion: ["bad key": "v"]))
            }
            await #expect(throws: IMError.self) {
                _ = try await backend.send(OutgoingMessage(conversation: .chatroom("r1"), sender: "alice", content: .text("x")))
            }
            await #expect(throws: IMError.self) {
                _ = try await backend.send(OutgoingMessage(conversation: .direct("alice", "bob"), sender: "alice",
                                                           content: .image(ImageContent(.local("/tmp/x.png")))))
            }
            await #expect(throws: IMError.self) { try await backend.recall("M1", in: .direct("bob", "carol"), by: "alice") }
            let messages = await rig.sandbox.vendor.messages()
            #expect(messages.isEmpty, "nothing reached the sandbox")
            try await backend.ensureUser(UserProfile(id: "alice", name: "Alice", avatar: "https://x/a.png"))
            #expect(await rig.sandbox.vendor.users() == [["userId": "alice", "name": "Alice", "portraitUri": "https://x/a.png"]])
        }
    }

    @Test func callbacksStayFreshWhenTheSandboxClockMovesAhead() async throws {
        try await RongCloudConformanceTests.withRig { rig in
            rig.sandbox.clock.advance(byMs: 2 * 3_600_000)
            let stream = rig.backend.events()
            let sent = try await rig.backend.send(OutgoingMessage(conversation: .direct("alice", "bob"), sender: "alice", content: .text("later")))
            let received = await events(rig, stream, count: 1)
            #expect(received.first?.messageID == sent.id, "signed with wall-clock time, so not refused as stale")
            guard case .message(let message)? = received.first?.kind else { return }
            #expect(message.sentAt >= sent.sentAt + 2 * 3_600_000 - 60_000, "msgTimestamp is sandbox time")
        }
    }
}

/// Signing and the business-code table of `Backend/` (no sandbox needed).
extension RongCloudBackendTests {
    @Test func documentedTestVectors() {
        #expect(RongCloudSignature.sign(secret: "Y1W2MeFwwwRxa0", nonce: "14314", timestamp: "1408710653000")
                == "30be0bbca9c9b2e27578701e9fda2358a814c88f")
        #expect(RongCloudSignature.sign(secret: "secret", nonce: "95493253", timestamp: "1795258879")
                == "5c772994e494a96a6f14c4427dd7ae820f4ac41e")
    }

    @Test func verificationIgnoresHexCaseAndRejectsAnyOtherChange() {
        let good = "30BE0BBCA9C9B2E27578701E9FDA2358A814C88F"
        #expect(RongCloudSignature.isValid(good, secret: "Y1W2MeFwwwRxa0", nonce: "14314", timestamp: "1408710653000"))
        #expect(!RongCloudSignature.isValid(good, secret: "Y1W2MeFwwwRxa1", nonce: "14314", timestamp: "1408710653000"))
        #expect(!RongCloudSignature.isValid(good, secret: "Y1W2MeFwwwRxa0", nonce: "14315", timestamp: "1408710653000"))
        #expect(!RongCloudSignature.isValid(String(good.dropLast()), secret: "Y1W2MeFwwwRxa0", nonce: "14314", timestamp: "1408710653000"))
    }

    @Test func timestampsInSecondsOrMilliseconds() {
        #expect(RongCloudSignature.timestampMs("1795258879") == 1_795_258_879_000)
        #expect(RongCloudSignature.timestampMs("1408710653000") == 1_408_710_653_000)
        #expect(RongCloudSignature.timestampMs("abc") == nil)
    }

    @Test(arguments: [
        (1004, 401, IMError.Code.authenticationFailed, false),
        (1001, 403, .authenticationFailed, false),
        (1008, 429, .rateLimited, true),
        (1002, 400, .invalidArgument, false),
        (1501, 400, .invalidArgument, false),
        (1005, 400, .limitExceeded, false),
        (1502, 400, .limitExceeded, false),
        (1508, 413, .limitExceeded, false),
        (1009, 403, .permissionDenied, false),
        (1000, 500, .unavailable, true),
        (1050, 500, .unavailable, true),
        (4242, 400, .vendorError, false),
    ])
    func errorCodeTable(code: Int, status: Int, neutral: IMError.Code, retryable: Bool) {
        #expect(RongCloudErrors.table.status(for: code) == status)
        let error = RongCloudErrors.table.error(code: code, message: nil)
        #expect(error.code == neutral && error.isRetryable == retryable && error.vendorCode == String(code))
        #expect(error.vendorMessage?.isEmpty == false)
    }

    @Test func rateLimitCarriesRetryAfter() {
        #expect(RongCloudErrors.table.error(code: 1008, message: "too fast", retryAfterMs: 2500).retryAfterMs == 2500)
        #expect(RongCloudErrors.table.error(code: 1008, message: "too fast").retryAfterMs == 1000)
        #expect(RongCloudErrors.table.error(code: 1002, message: "bad").retryAfterMs == nil)
    }
}
