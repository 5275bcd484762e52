import Foundation
import IMAdapterKit
import IMCore
import IMHTTP
import Testing
@testable import WuKong

@Suite struct WuKongInboundTests {
    static func body(_ messages: [WKMessage]) throws -> Data { try WuKongJSON.encode(messages) }
    static let text = WKMessage(messageID: 11, clientMsgNo: "c", messageSeq: 1, fromUID: "u1", channelID: "u2", channelType: 1,
                                timestamp: 1_700_000_000, payload: Data(#"{"type":1,"content":"hi"}"#.utf8))

    /// A webhook request as the bridge's HTTP server hands it over.
    static func request(_ query: String, method: String = "POST", headers: [(name: String, value: String)] = [],
                        body: Data) -> HTTPRequestData {
        HTTPRequestData(method: method, path: "/callbacks/wk", rawQuery: query, headers: headers, body: Array(body))
    }

    static func backend(secret: String? = "s3cret") -> WuKongBackend {
        WuKongBackend(id: "wk", settings: .at("http://127.0.0.1:9", webhookSecret: secret))
    }

    /// `admit`'s decision as (status of an early answer, or nil; the cap when the body is to be read).
    static func decision(_ admission: BodyAdmission) -> (answer: Int?, cap: Int?) {
        switch admission {
        case .answer(let response): (response.status, nil)
        case .read(let cap): (nil, cap)
        }
    }

    /// The secret is checked from the head, before the body is read (docs/adapters/wukong.md, "Callback limits").
    @Test func theHeadIsCheckedBeforeTheBody() async {
        let backend = Self.backend()
        let sink = CollectingSink()
        let good = Self.decision(await backend.admit(Self.request("secret=s3cret?event=msg.notify", body: Data()), sink: sink))
        #expect(good.answer == nil && good.cap == WuKongInbound.maxBodyBytes)
        let viaHeader = Self.decision(await backend.admit(Self.request("event=msg.notify", headers: [("X-IMBridge-Secret", "s3cret")], body: Data()), sink: sink))
        #expect(viaHeader.cap == WuKongInbound.maxBodyBytes)
        #expect(sink.refusals.isEmpty)
        for query in ["event=msg.notify", "secret=wrong?event=msg.notify"] {
            let refused = Self.decision(await backend.admit(Self.request(query, body: Data()), sink: sink))
            #expect(refused.answer == 401 && refused.cap == nil, "\(query)")
        }
        #expect(sink.refusals.count == 2 && sink.refusals.allSatisfy { $0.code == .authenticationFailed })
    }

    @Test func parsesNotifyArrayWithSecretInWuKongsConcatenatedQuery() throws {
        let inbound = WuKongInbound(secret: "s3cret")
        // WuKongIM appends `?event=` to an httpAddr that already has `?secret=`.
        let parsed = try inbound.parse(Self.request("secret=s3cret?event=msg.notify", body: Self.body([Self.text])))
        #expect(parsed == .messages([Self.text], event: "msg.notify"))
        let viaHeader = try inbound.parse(Self.request("event=msg.notify", headers: [("x-imbridge-secret", "s3cret")],
                                                       body: Self.body([Self.text])))
        #expect(viaHeader == parsed)
    }

    @Test func handleAnswers200AfterTheSinkTookTheEvents() async throws {
        let backend = Self.backend()
        let sink = CollectingSink()
        let request = Self.request("secret=s3cret?event=msg.notify", body: try Self.body([Self.text]))
        let response = await backend.handle(request, sink: sink)
        let body = try JSONValue.parse(Data(response.body))
        #expect(response.status == 200 && body == ["status": 200])
        #expect(sink.events.map(\.eventID) == ["msg:11"] && sink.refusals.isEmpty)
        #expect(sink.events.first?.conversation == .direct("u1", "u2"))
        let parsed = try await backend.batch(from: Self.request("secret=s3cret&event=msg.notify", body: try Self.body([Self.text])))
        #expect(parsed.events.map(\.eventID) == ["msg:11"] && parsed.setAside.isEmpty, "batch(from:) is the parse the exchange runs")
    }

    @Test func forgedOrMalformedRequestsAreRefused() async throws {
        let inbound = WuKongInbound(secret: "s3cret")
        let backend = Self.backend()
        let good = try Self.body([Self.text])
        let cases: [(HTTPRequestData, IMError.Code, Int)] = [
            (Self.request("event=msg.notify", body: good), .authenticationFailed, 401),
            (Self.request("secret=wrong&event=msg.notify", body: good), .authenticationFailed, 401),
            (Self.request("secret=s3cret&event=msg.notify", body: Data("{not json".utf8)), .malformedPayload, 400),
            (Self.request("secret=s3cret&event=msg.bogus", body: good), .malformedPayload, 400),
            (Self.request("secret=s3cret", body: good), .malformedPayload, 400),
            (Self.request("secret=s3cret&event=msg.notify", method: "GET", body: good), .malformedPayload, 400),
        ]
        for (request, code, status) in cases {
            do {
                _ = try inbound.parse(request)
                Issue.record("accepted \(request.rawQuery ?? "")")
            } catch let error as IMError {
                #expect(error.code == code)
                #expect(error.details["http_status"] == String(status))
            }
            // Through the exchange: WuKong's `{"msg","status"}` body with that status, no event, the sink told.
            let sink = CollectingSink()
            let response = await backend.handle(request, sink: sink)
            let body = try JSONValue.parse(Data(response.body))
            #expect(response.status == status && body["status"]?.int64Value == Int64(status) && body["msg"]?.stringValue != nil,
                    "\(request.rawQuery ?? "")")
            #expect(sink.events.isEmpty && sink.refusals.map(\.code) == [code])
        }
    }

    @Test func offlineAndOnlineStatusBodies() async throws {
        let inbound = WuKongInbound(secret: nil)
        var offline = Self.text
        offline.toUIDs = ["u2"]
        let parsed = try inbound.parse(Self.request("event=msg.offline", body: WuKongJSON.encode(offline)))
        #expect(parsed == .messages([offline], event: "msg.offline"))
        let statusRequest = Self.request("event=user.onlinestatus", body: Data(#"["u1-1-1-1001-1-2"]"#.utf8))
        let status = try inbound.parse(statusRequest)
        #expect(status == .onlineStatus(["u1-1-1-1001-1-2"]))
        // Through the exchange: an offline copy is the same message event; online status carries none.
        let backend = Self.backend(secret: nil)
        let sink = CollectingSink()
        let offlineRequest = Self.request("event=msg.offline", body: try WuKongJSON.encode(offline))
        #expect(await backend.handle(offlineRequest, sink: sink).status == 200)
        #expect(await backend.handle(statusRequest, sink: sink).status == 200)
        #expect(sink.events.map(\.eventID) == ["msg:11"])
    }

    /// The sink could not take the events (the store is down): 500 with WuKong's body, so WuKongIM
    /// redelivers; nothing reaches `events()` until a redelivery is taken.
    @Test func sinkFailureAnswers500AndTheRedeliveryIsTaken() async throws {
        let backend = Self.backend()
        let collector = WuKongBackendTests.Collector(backend.events())
        let sink = CollectingSink()
        sink.fail(with: IMError(.unavailable, "store is down"))
        let request = Self.request("secret=s3cret&event=msg.notify", body: try Self.body([Self.text]))
        let failed = await backend.handle(request, sink: sink)
        let failedBody = try JSONValue.parse(Data(failed.body))
        #expect(failed.status == 500 && failedBody["status"] == 500)
        #expect(sink.events.isEmpty && sink.refusals.isEmpty)
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(collector.all.isEmpty)
        sink.fail(with: nil)
        let taken = await backend.handle(request, sink: sink)
        #expect(taken.status == 200 && sink.events.map(\.eventID) == ["msg:11"])
        #expect(await collector.wait { !$0.isEmpty }.map(\.eventID) == ["msg:11"])
    }

    @Test func redeliveryGivesTheSameEventIDs() throws {
        let mapper = WuKongInboundMapper(backend: "wk", codec: WuKongMessageCodec())
        let first = try mapper.actions(for: Self.text), second = try mapper.actions(for: Self.text)
        #expect(first == second)
        guard case .event(let event)? = first.first else { Issue.record("no event"); return }
        #expect(event.eventID == "msg:11")
        #expect(event.conversation == .direct("u1", "u2"))
    }

    @Test func cmdMessagesBecomeRecallsSyncsAndCommands() throws {
        let mapper = WuKongInboundMapper(backend: "wk", codec: WuKongMessageCodec())
        func cmd(_ json: String, id: Int64) -> WKMessage {
            WKMessage(header: WKHeader(syncOnce: 1), messageID: id, fromUID: "u1", channelID: "u2____cmd", channelType: 1,
                      timestamp: 5, payload: Data(json.utf8))
        }
        let revoke = try mapper.actions(for: cmd(#"{"type":99,"cmd":"messageRevoke","param":{"message_id":"11"}}"#, id: 20))
        #expect(revoke == [.event(IMEvent(eventID: "recall:11", backend: "wk",
                                          kind: .recalled(messageID: "11", conversation: .direct("u1", "u2"), by: "u1", at: 5000)))])
        let sync = try mapper.actions(for: cmd(#"{"type":99,"cmd":"syncMessageExtra"}"#, id: 21))
        #expect(sync == [.syncExtras(conversation: .direct("u1", "u2"), actor: "u1", at: 5000)])
        let reaction = try mapper.actions(for: cmd(#"{"type":99,"cmd":"syncMessageReaction"}"#, id: 22))
        #expect(reaction == [.syncReactions(conversation: .direct("u1", "u2"), actor: "u1", at: 5000)])
        let typing = try mapper.actions(for: cmd(#"{"type":99,"cmd":"typing","param":{"from_uid":"u1"}}"#, id: 23))
        guard case .event(let event)? = typing.first, case .command(_, _, let content, _) = event.kind else {
            Issue.record("typing is not a command event"); return
        }
        #expect(event.eventID == "cmd:23" && content.name == "typing")
        #expect(throws: IMError.self) { try mapper.actions(for: cmd(#"{"type":99,"cmd":"messageRevoke"}"#, id: 24)) }
    }

    @Test func extrasRowsBecomeOnlyTheChangedEvents() throws {
        let codec = WuKongExtrasCodec(backend: "wk", content: WuKongContentCodec())
        let dm = ConversationRef.direct("u1", "u2")
        var before = WKMessageExtra(messageID: 11, messageSeq: 1, extraVersion: 3)
        before.extra = ["status": "pending", "owner": "u1"]
        var after = before
        after.extraVersion = 4
        after.extra = ["status": "paid", "owner": "u1", "paid_at": "1"]
        after.contentEdit = ["type": 1, "content": "fixed"]
        after.editedAt = 1_700_000_100
        after.readedCount = 1
        after.revoke = 1
        after.revoker = "u1"
        let events = codec.events(rows: [(before, after)], conversation: dm, actor: "u2", at: 9)
        #expect(events.map(\.kindName) == ["recalled", "edited", "expansion", "read"])
        if case .expansionChanged(_, _, _, let delta) = events[2].kind {
            #expect(delta == ExpansionDelta(version: 4, set: ["status": "paid", "paid_at": "1"]))
        }
        if case .read(_, let user, let upTo, _) = events[3].kind { #expect(user == "u2" && upTo == "11") }
        // Seen again (redelivery, second CMD): nothing new.
        #expect(codec.events(rows: [(after, after)], conversation: dm, actor: "u2", at: 9).isEmpty)
        // Unknown previous (restart): the same event ids come back, so a ledger dedupes them.
        let again = codec.events(rows: [(nil, after)], conversation: dm, actor: "u2", at: 9)
        #expect(Set(again.map(\.eventID)).isSuperset(of: Set(events.prefix(2).map(\.eventID))))
    }

    /// Near miss: a shared secret differing only in its last character is refused.
    @Test func aSecretWrongOnlyInItsLastCharacterIsRefused() async throws {
        let secret = "a-long-shared-webhook-secret-0001"
        let backend = Self.backend(secret: secret)
        let body = try Self.body([Self.text])
        for given in ["a-long-shared-webhook-secret-0002", "a-long-shared-webhook-secret-000", ""] {
            let sink = CollectingSink()
            let answer = await backend.handle(Self.request("event=msg.notify", headers: [("X-IMBridge-Secret", given)], body: body), sink: sink)
            #expect(answer.status == 401 && sink.events.isEmpty && sink.refusals.first?.code == .authenticationFailed)
        }
        let sink = CollectingSink()
        let answer = await backend.handle(Self.request("event=msg.notify", headers: [("X-IMBridge-Secret", secret)], body: body), sink: sink)
        #expect(answer.status == 200 && sink.events.count == 1)
    }

    /// Near miss: several rows whose read count rose, in no particular seq order: the read
    /// receipt goes up to the highest seq (not the lowest, not the last row).
    @Test func extrasReadReceiptsGoUpToTheHighestSeqOfSeveralRows() throws {
        let codec = WuKongExtrasCodec(backend: "wk", content: WuKongContentCodec())
        let group = ConversationRef.group("g1")
        let rows: [(previous: WKMessageExtra?, current: WKMessageExtra)] = [(5, 105), (9, 109), (7, 107)].map { seq, id in
            var before = WKMessageExtra(messageID: Int64(id), messageSeq: UInt64(seq), extraVersion: Int64(seq))
            before.readedCount = 0
            var after = before
            after.readedCount = 2
            return (before, after)
        }
        let reads = codec.events(rows: rows, conversation: group, actor: "u2", at: 9).filter { $0.kindName == "read" }
        #expect(reads.count == 1)
        guard case .read(_, let user, let upTo, _)? = reads.first?.kind else { Issue.record("no read"); return }
        #expect(user == "u2" && upTo == "109")
    }

    /// Near miss: removing some keys of a remote `extra` (not all of them) reports each
    /// removed key; removing all of them is a clear.
    @Test func extrasRemovalOfSomeKeysIsReported() throws {
        let some = try #require(WuKongExtrasCodec.delta(from: ["a": "1", "b": "2", "c": "3"], to: ["a": "1"], version: 7))
        #expect(Set(some.removed) == ["b", "c"] && some.set.isEmpty && !some.cleared)
        let one = try #require(WuKongExtrasCodec.delta(from: ["a": "1", "b": "2"], to: ["a": "9"], version: 8))
        #expect(one.removed == ["b"] && one.set == ["a": "9"])
        let all = try #require(WuKongExtrasCodec.delta(from: ["a": "1"], to: [:], version: 9))
        #expect(all.cleared && all.removed == ["a"])
        // No earlier row (the first read after a start): the row is the whole state, so a key removed
        // meanwhile is removed where the bridge knew it (convergence turns `cleared` into those keys).
        let whole = try #require(WuKongExtrasCodec.delta(from: nil, to: ["a": "1"], version: 10))
        #expect(whole.cleared && whole.set == ["a": "1"] && whole.removed.isEmpty)
        #expect(WuKongExtrasCodec.delta(from: nil, to: [:], version: 11) == nil, "nothing known, nothing to clear")
    }

    /// a remote `extra` with non-string values does not fail the row (and so the sync):
    /// numbers and booleans become their JSON text, objects their JSON, null drops the key.
    @Test func extraValuesOfAnyJSONTypeAreKeptAsText() throws {
        let json = #"[{"message_id":1,"message_id_str":"1","extra_version":2,"extra":{"s":"x","n":3,"b":true,"o":{"k":1},"z":null}},{"message_id":2,"message_id_str":"2","extra_version":3,"extra":"not an object"}]"#
        let rows = try WuKongJSON.decoder().decode([WKMessageExtra].self, from: Data(json.utf8))
        #expect(rows.count == 2)
        #expect(rows[0].extra == ["s": "x", "n": "3", "b": "true", "o": #"{"k":1}"#])
        #expect(rows[1].extra == nil)
    }

    @Test func reactionRowsBecomeToggles() {
        let codec = WuKongExtrasCodec(backend: "wk", content: WuKongContentCodec())
        let rows = [WKReaction(messageID: "11", channelID: "u2", channelType: 1, seq: 1, uid: "u2", emoji: "👍", isDeleted: 0,
                               createdAt: "2023-11-15 06:13:20"),
                    WKReaction(messageID: "11", channelID: "u2", channelType: 1, seq: 2, uid: "u2", emoji: "👍", isDeleted: 1,
                               createdAt: "1700000000")]
        let events = codec.events(reactions: rows, conversation: .direct("u1", "u2"))
        #expect(events.map(\.eventID.rawValue) == ["react:direct:u1,u2:1", "react:direct:u1,u2:2"])
        guard case .reaction(_, _, _, _, let added, let at) = events[0].kind,
              case .reaction(_, _, _, _, let removed, let at2) = events[1].kind else { Issue.record("not reactions"); return }
        #expect(added && !removed)
        #expect(at == 1_700_000_000_000 && at2 == 1_700_000_000_000)
    }
}
