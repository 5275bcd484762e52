import Foundation
import IMAdapterKit
import IMCore
import IMHTTP
import IMSandbox
@testable import NIM
import NIMSandbox
import SandboxTestSupport
import Testing

@Suite(.serialized) struct NIMBackendTests {
    @Test func forgedCallbacksAreRefusedOverHTTPAndYieldNothing() async throws {
        try await WiredBackend.with { wired in
            let stream = wired.backend.events()
            let sink = CollectingSink()
            let body = Array(#"{"eventType":"1","convType":"PERSON","to":"b","fromAccount":"a","msgType":"TEXT","body":"x","msgTimestamp":"1","msgidServer":"9"}"#.utf8)
            let md5 = Hashing.md5Hex(body)
            let forged = HTTPRequestData(method: "POST", path: "/receiveMsg.action",
                                         headers: [("AppKey", "k"), ("CurTime", "1"), ("MD5", md5), ("CheckSum", Hashing.sha1Hex("wrong" + md5 + "1"))],
                                         body: body)
            let refused = await wired.backend.handle(forged, sink: sink)
            #expect(refused.status == 401)
            #expect(sink.events.isEmpty && sink.refusals.map(\.code) == [.authenticationFailed])
            let good = HTTPRequestData(method: "POST", path: "/receiveMsg.action",
                                       headers: [("AppKey", "k"), ("CurTime", "1"), ("MD5", md5), ("CheckSum", Hashing.sha1Hex("s" + md5 + "1"))],
                                       body: body)
            let accepted = await wired.backend.handle(good, sink: sink)
            #expect(accepted.status == 200 && accepted.bodyString == #"{"code":200}"#)
            #expect(sink.events.map(\.eventID) == ["nim:msg:9"])
            var iterator = stream.makeAsyncIterator()
            let first = await iterator.next()
            #expect(first?.eventID == "nim:msg:9", "the forged request must not have produced an event before the good one")
            #expect(await wired.backend.handle(good, sink: sink).status == 200)
            #expect(sink.events.map(\.eventID) == ["nim:msg:9", "nim:msg:9"], "a redelivery yields the same event id")
        }
    }

    @Test func repliesMentionsAndClientIDsTravelInExt() async throws {
        try await WiredBackend.with { wired in
            try await wired.seedTeam1001()
            let original = try await wired.backend.send(OutgoingMessage(conversation: .group("1001"), sender: "alice", content: .text("q")))
            let outgoing = OutgoingMessage(conversation: .group("1001"), sender: "bob", content: .text("a"), clientMessageID: "bridge-1",
                                           mentions: Mentions(users: ["alice"]),
                                           reply: ReplyRef(messageID: original.id, sender: "alice", digest: "q"),
                                           vendorExtras: ["ext": #"{"app":"kept"}"#])
            let sent = try await wired.backend.send(outgoing)
            #expect(try await wired.backend.send(outgoing) == sent, "a repeated clientMessageID returns the first message")
            let page = try await wired.backend.history(HistoryQuery(conversation: .group("1001"), limit: 10, viewer: "bob"))
            #expect(page.messages.count == 2)
            let stored = try #require(page.messages.last)
            #expect(stored.id == sent.id && stored.clientMessageID == "bridge-1")
            #expect(stored.reply == ReplyRef(messageID: original.id, sender: "alice", digest: "q"))
            #expect(stored.mentions == Mentions(users: ["alice"]))
            let ext = try JSONValue.parse(try #require(stored.vendorExtras["ext"]?.stringValue))
            #expect(ext["app"] == "kept")
            let raw = try await wired.rig.messages().last?.raw
            #expect(raw?["ext"]?.stringValue?.contains("forcepush") == false)
        }
    }

    @Test func recallFindsTheSendTimeThroughHistoryAfterARestart() async throws {
        try await WiredBackend.with { wired in
            let sent = try await wired.backend.send(OutgoingMessage(conversation: .direct("alice", "bob"), sender: "alice", content: .text("x")))
            let fresh = NIMBackend(settings: wired.backend.settings, clock: wired.sandbox.clock)
            try await fresh.recall(sent.id, in: .direct("alice", "bob"), by: "alice")
            await #expect(throws: IMError.self) { try await fresh.recall(sent.id, in: .direct("alice", "bob"), by: "alice") }
            let records = try await wired.rig.messages()
            #expect(records.first?.recalled == true)
            let page = try await fresh.history(HistoryQuery(conversation: .direct("alice", "bob")))
            #expect(page.messages.map(\.id) == [sent.id] && page.messages.first?.isRecalled == true)
            let other = try await NIMBackend(settings: wired.backend.settings, clock: wired.sandbox.clock)
                .history(HistoryQuery(conversation: .direct("alice", "bob")))
            #expect(other.messages.isEmpty, "NIM drops recalled messages from history; only the recalling process keeps a tombstone")
        }
    }

    /// A recall relayed later than the console's window (an outage, the target's frequency control holding
    /// the lane) still reaches its copy: the adapter recalls with `ignoreTime=1`, NIM's 30 days. With
    /// `recall_ignore_time: false` the console's window holds and NIM answers 508 (docs/adapters/nim.md,
    /// "Recall").
    @Test func aRecallLaterThanTheConsolesWindowReachesItsCopy() async throws {
        try await WiredBackend.with { wired in
            let conversation = ConversationRef.direct("alice", "bob")
            let late = try await wired.backend.send(OutgoingMessage(conversation: conversation, sender: "alice", content: .text("recall me late")))
            var console = wired.backend.settings
            console.recallIgnoreTime = false
            let strict = NIMBackend(settings: console, clock: wired.sandbox.clock)
            let kept = try await strict.send(OutgoingMessage(conversation: conversation, sender: "alice", content: .text("past the window")))
            wired.sandbox.clock.skew(byMs: 10 * 60_000)
            try await wired.backend.recall(late.id, in: conversation, by: "alice")
            do {
                try await strict.recall(kept.id, in: conversation, by: "alice")
                Issue.record("a recall past the console's window without ignoreTime was accepted")
            } catch let error as IMError {
                #expect(error.code == .recallWindowExpired && error.vendorCode == "508", "\(error)")
            }
            let records = try await wired.rig.messages()
            #expect(records.first { $0.id == late.id.rawValue }?.recalled == true)
            #expect(records.first { $0.id == kept.id.rawValue }?.recalled != true)
        }
    }

    /// NIM stamps messages with its own clock: with it minutes behind the bridge's, a copy older than the
    /// newest page is still within NIM's recall window, and the search for it must page back to it
    /// (docs/adapters/nim.md, "Recall").
    @Test func aRecallPagesBackToItsCopyWhenNIMsClockIsBehindTheBridges() async throws {
        try await WiredBackend.with { wired in
            wired.sandbox.clock.skew(byMs: -5 * 60_000)
            let conversation = ConversationRef.direct("alice", "bob")
            let first = try await wired.backend.send(OutgoingMessage(conversation: conversation, sender: "alice", content: .text("recall me")))
            for n in 0..<120 {
                _ = try await wired.backend.send(OutgoingMessage(conversation: conversation, sender: "bob", content: .text("after \(n)")))
            }
            // A restarted bridge (nothing in memory) on the bridge's own clock, five minutes ahead of NIM's.
            let bridge = NIMBackend(settings: wired.backend.settings, clock: SystemClock())
            try await bridge.recall(first.id, in: conversation, by: "alice")
            let records = try await wired.rig.messages()
            #expect(records.first { $0.id == first.id.rawValue }?.recalled == true)
            #expect(records.filter { $0.recalled == true }.count == 1)
        }
    }

    /// NIM drops a recalled message from history; the adapter shows the ones it saw recalled in place, and
    /// names them as its own tombstones, which catch-up reads as absent (docs/adapters/nim.md, "Recall").
    @Test func aRecalledMessageListedInHistoryIsTheAdaptersTombstone() async throws {
        try await WiredBackend.with { wired in
            let conversation = ConversationRef.direct("alice", "bob")
            let kept = try await wired.backend.send(OutgoingMessage(conversation: conversation, sender: "alice", content: .text("kept")))
            let taken = try await wired.backend.send(OutgoingMessage(conversation: conversation, sender: "alice", content: .text("taken")))
            try await wired.backend.recall(taken.id, in: conversation, by: "alice")
            let page = try await wired.backend.history(HistoryQuery(conversation: conversation))
            #expect(page.messages.map(\.id) == [kept.id, taken.id])
            #expect(page.messages.map { wired.backend.isLocalTombstone($0) } == [false, true])
            let vendor = try await NIMBackend(settings: wired.backend.settings, clock: wired.sandbox.clock).history(HistoryQuery(conversation: conversation))
            #expect(vendor.messages.map(\.id) == [kept.id], "NIM itself lists only the message not recalled")
        }
    }

    @Test func contentsAreCheckedBeforeAnyCall() async throws {
        try await WiredBackend.with { wired in
            let long = String(repeating: "\"", count: 2600)
            do {
                _ = try await wired.backend.send(OutgoingMessage(conversation: .direct("alice", "bob"), sender: "alice", content: .text(long)))
                Issue.record("a body over 5000 characters was sent")
            } catch let error as IMError {
                #expect(error.code == .limitExceeded && error.details["limit"] == "body_length")
            }
            await #expect(throws: IMError.self) {
                _ = try await wired.backend.send(OutgoingMessage(conversation: .chatroom("r1"), sender: "alice", content: .text("x")))
            }
            #expect(try await wired.rig.messages().isEmpty)
            #expect(await wired.sandbox.vendor.users().isEmpty)
        }
    }
}

extension NIMBackendTests {
    @Test func aRestartedBackendFindsAMessageByItsClientID() async throws {
        try await WiredBackend.with { wired in
            try await wired.seedTeam1001()
            let sent = try await wired.backend.send(OutgoingMessage(conversation: .group("1001"), sender: "alice", content: .text("x"),
                                                                    clientMessageID: "bridge-77"))
            // A busy team: more messages after it than one history call (100) returns.
            for n in 0..<150 {
                _ = try await wired.backend.send(OutgoingMessage(conversation: .group("1001"), sender: "alice", content: .text("later \(n)")))
            }
            let fresh = NIMBackend(settings: { var settings = wired.backend.settings; settings.teamQueryAccid = "alice"; return settings }(), clock: wired.sandbox.clock)
            let found = try await fresh.message(withClientID: "bridge-77", in: .group("1001"))
            #expect(found?.id == sent.id, "found behind 150 later messages")
            #expect(try await fresh.message(withClientID: "bridge-78", in: .group("1001")) == nil)
            // A team that does not exist holds no copy (NIM answers its history 803): nothing, not a failure.
            #expect(try await fresh.message(withClientID: "bridge-77", in: .group("1999")) == nil)
        }
    }
}

extension NIMBackendTests {
    /// Team history is read as a member: a `team_query_accid` that was never in the team is refused (804)
    /// and the read goes on as the team's owner; a member who has left still reads (`checkTeamValid=false`).
    @Test func teamHistoryReadsAsTheOwnerWhenTheConfiguredAccidWasNeverInTheTeam() async throws {
        try await WiredBackend.with { wired in
            try await wired.seedTeam1001()
            let sent = try await wired.backend.send(OutgoingMessage(conversation: .group("1001"), sender: "alice", content: .text("x")))
            let stranger = NIMBackend(settings: { var settings = wired.backend.settings; settings.teamQueryAccid = "nobody"; return settings }(),
                                      clock: wired.sandbox.clock)
            let page = try await stranger.history(HistoryQuery(conversation: .group("1001"), limit: 10))
            #expect(page.messages.map(\.id) == [sent.id])
            let team = try #require(try await wired.backend.group("1001"))
            #expect(stranger.state.withLock { $0.teamReaders["1001"] } == team.owner?.rawValue, "the owner, remembered")
            let former = try #require(team.members.first { $0 != team.owner })
            try await wired.backend.removeMembers([former], from: "1001")
            let fresh = NIMBackend(settings: wired.backend.settings, clock: wired.sandbox.clock)
            let asFormer = try await fresh.history(HistoryQuery(conversation: .group("1001"), limit: 10, viewer: former))
            #expect(asFormer.messages.map(\.id) == [sent.id], "read as \(former), who has left")
            #expect(fresh.state.withLock { $0.teamReaders["1001"] } == nil, "as \(former) itself, not as the owner")
        }
    }
}

extension NIMBackendTests {
    /// NIM's field limits (docs/adapters/nim.md, "Message field limits"), which the sandbox enforces: a reply
    /// quoting a long text goes with its digest shortened and the quoted id kept; a long push text is cut;
    /// an app `ext` that leaves no room is refused before any call.
    @Test func extAndPushTextStayWithinNIMsLimits() async throws {
        try await WiredBackend.with { wired in
            let chat = ConversationRef.direct("alice", "bob")
            let long = String(repeating: "长文", count: 1500)
            let quoted = try await wired.backend.send(OutgoingMessage(conversation: chat, sender: "bob", content: .text("q")))
            let reply = try await wired.backend.send(OutgoingMessage(
                conversation: chat, sender: "alice", content: .text("answer"), clientMessageID: "c-1",
                reply: ReplyRef(messageID: quoted.id, sender: "bob", digest: long), options: MessageOptions(pushText: String(repeating: "推", count: 800))))
            let ext = try #require(reply.vendorExtras[NIMMessageCodec.extKey]?.stringValue)
            #expect(ext.utf16.count <= 1024 && ext.utf16.count > 900, "\(ext.utf16.count)")
            let read = try #require(try await wired.backend.history(HistoryQuery(conversation: chat, limit: 10)).messages.first { $0.id == reply.id })
            #expect(read.reply?.messageID == quoted.id && read.reply?.sender == "bob" && read.clientMessageID == "c-1")
            #expect(read.reply.map { long.hasPrefix($0.digest.dropLast()) && $0.digest.hasSuffix("…") } == true)

            var tooMuch = OutgoingMessage(conversation: chat, sender: "alice", content: .text("x"))
            tooMuch.vendorExtras[NIMMessageCodec.extKey] = .string(JSONValue.object(["app": .string(String(repeating: "a", count: 1100))]).jsonString())
            do {
                _ = try await wired.backend.send(tooMuch)
                Issue.record("an ext over 1024 characters was sent")
            } catch let error as IMError {
                #expect(error.code == .limitExceeded && error.details["limit"] == "ext_length", "\(error)")
            }
            #expect(try await wired.rig.messages().count == 2, "nothing sent for the refused one")
        }
    }
}

/// NIM envelope codes → IMError.
extension NIMBackendTests {
    @Test(arguments: [
        (414, "checksum", IMError.Code.authenticationFailed, false),
        (414, "CurTime is expired", .authenticationFailed, false),
        (414, "already register", .conflict, false),
        (414, "body is too long", .invalidArgument, false),
        (403, "not allow!", .permissionDenied, false),
        (404, "msg not found", .notFound, false),
        (416, "frequency control", .rateLimited, true),
        (431, "duplicate request", .unavailable, true),
        (500, "server error", .unavailable, true),
        (508, "msg recall timeout", .recallWindowExpired, false),
        (999, "?", .vendorError, false),
    ])
    func codesMap(code: Int, desc: String, expected: IMError.Code, retryable: Bool) {
        let error = NIMErrors.table.error(code: code, message: desc)
        #expect(error.code == expected)
        #expect(error.isRetryable == retryable)
        #expect(error.vendorCode == String(code) && error.vendorMessage == desc)
        if code == 416 { #expect(error.retryAfterMs == 10_000) }
    }

    @Test func duplicateRecallIsAlreadyRecalled() {
        #expect(NIMErrors.table.error(code: 417, message: "x", operation: .recall).code == .alreadyRecalled)
        #expect(NIMErrors.table.error(code: 417, message: "x").code == .conflict)
    }
}

/// The pager against an in-memory NIM whose `excludeMsgid` drops only that one message (the stricter
/// reading of the history API): paging must still neither skip nor repeat, at equal timestamps too.
extension NIMBackendTests {
    static func pagerEntries(times: [Int64]) -> [NIMHistoryMessage] {
        times.enumerated().map { NIMHistoryMessage(from: "a", msgid: Int64(100 + $0.offset), sendtime: $0.element, type: 0, body: #"{"msg":"x"}"#) }
    }

    static func pager(_ all: [NIMHistoryMessage]) -> NIMHistoryPager {
        NIMHistoryPager(fetch: { begin, end, limit, ascending, exclude in
            let inWindow = all.filter { $0.sendtime >= begin && $0.sendtime <= end && $0.msgid != exclude }
                .sorted { ($0.sendtime, $0.msgid) < ($1.sendtime, $1.msgid) }
            return Array((ascending ? inWindow : inWindow.reversed()).prefix(limit))
        }, horizon: 10_000)
    }

    static let sameMillisecond: [Int64] = Array(repeating: 7, count: 23)
    static let runsOfFour: [Int64] = (0..<23).map { (n: Int) -> Int64 in Int64(1 + n / 4) }
    static let distinct: [Int64] = (0..<23).map { (n: Int) -> Int64 in Int64(n + 1) }

    @Test(arguments: [sameMillisecond, runsOfFour, distinct])
    func walksBothWaysWithoutGapsOrRepeats(times: [Int64]) async throws {
        let all = Self.pagerEntries(times: times)
        let pager = Self.pager(all)
        var page = try await pager.page(.latest, limit: 5)
        var backward = page.entries.map(\.msgid)
        while page.hasOlder, let first = page.entries.first {
            page = try await pager.page(.before(NIMHistoryKey(time: first.sendtime, msgid: first.msgid).cursor), limit: 5)
            backward = page.entries.map(\.msgid) + backward
        }
        #expect(backward == all.map(\.msgid))
        page = try await pager.page(.oldest, limit: 5)
        var forward = page.entries.map(\.msgid)
        while page.hasNewer, let last = page.entries.last {
            page = try await pager.page(.after(NIMHistoryKey(time: last.sendtime, msgid: last.msgid).cursor), limit: 5)
            forward += page.entries.map(\.msgid)
        }
        #expect(forward == all.map(\.msgid))
        let middle = all[11]
        let around = try await pager.page(.around(NIMHistoryKey(time: middle.sendtime, msgid: middle.msgid).cursor), limit: 5)
        #expect(around.entries.map(\.msgid) == Array(all[9...13]).map(\.msgid))
        #expect(around.hasOlder && around.hasNewer)
    }

    @Test func cursorsParseAndRefuseGarbage() async {
        #expect(NIMHistoryKey(HistoryCursor("1700000000000:42")) == NIMHistoryKey(time: 1_700_000_000_000, msgid: 42))
        #expect(NIMHistoryKey(HistoryCursor("42")) == nil)
        await #expect(throws: IMError.self) { _ = try await Self.pager([]).page(.before(HistoryCursor("x")), limit: 5) }
    }
}

/// Signing (requests and message copies).
extension NIMBackendTests {
    /// The API test vector NIM documents (docs/adapters/nim.md).
    @Test func requestCheckSumMatchesTheDocVector() {
        #expect(NIMSignature.requestCheckSum(appSecret: "0123456789ab", nonce: "4tgggergigwow323t23t", curTime: "1443592222")
            == "2b3c3ba113c760606d5830e4d807ad8490040efd")
    }

    /// The message-copy test vector NIM documents (docs/adapters/nim.md).
    @Test func callbackSignatureMatchesTheDocVector() {
        let body = #"{"eventType":"1","convType":"PERSON","to":"222","fromAccount":"111","msgType":"TEXT","body":"hello","msgTimestamp":"1441977355557","msgidClient":"1234567","msgidServer":"3456789"}"#
        let md5 = NIMSignature.md5Hex(Array(body.utf8))
        #expect(md5 == "98e89cb5e7688a2f419583195c3f6c4a")
        #expect(NIMSignature.callbackCheckSum(appSecret: "0123456789ab", md5: md5, curTime: "1440570500855")
            == "ca35845e3c6fe4fb7aa85c358ffa91bc75f70043")
    }
}
