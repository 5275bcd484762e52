import Foundation
import IMCore
import Testing
@testable import WuKong

@Suite struct WuKongInboundTests {
    static func body(_ messages: [WKMessage]) throws -> Data { try WuKongJSON.encode(messages) }
    static let text = WKMessage(messageID: 11, clientMsgNo: "c", messageSeq: 1, fromUID: "u1", channelID: "u2", channelType: 1,
                                timestamp: 1_700_000_000, payload: Data(#"{"type":1,"content":"hi"}"#.utf8))

    @Test func parsesNotifyArrayWithSecretInWuKongsConcatenatedQuery() throws {
        let inbound = WuKongInbound(secret: "s3cret")
        // WuKongIM appends `?event=` to an httpAddr that already has `?secret=`.
        let parsed = try inbound.parse(WuKongWebhookRequest(query: "secret=s3cret?event=msg.notify", body: Self.body([Self.text])))
        #expect(parsed == .messages([Self.text], event: "msg.notify"))
        let viaHeader = try inbound.parse(WuKongWebhookRequest(query: "event=msg.notify", headers: [("x-imbridge-secret", "s3cret")],
                                                               body: Self.body([Self.text])))
        #expect(viaHeader == parsed)
    }

    @Test func forgedOrMalformedRequestsAreRefused() throws {
        let inbound = WuKongInbound(secret: "s3cret")
        let good = try Self.body([Self.text])
        let cases: [(WuKongWebhookRequest, IMError.Code, String)] = [
            (WuKongWebhookRequest(query: "event=msg.notify", body: good), .authenticationFailed, "401"),
            (WuKongWebhookRequest(query: "secret=wrong&event=msg.notify", body: good), .authenticationFailed, "401"),
            (WuKongWebhookRequest(query: "secret=s3cret&event=msg.notify", body: Data("{not json".utf8)), .malformedPayload, "400"),
            (WuKongWebhookRequest(query: "secret=s3cret&event=msg.bogus", body: good), .malformedPayload, "400"),
            (WuKongWebhookRequest(query: "secret=s3cret", body: good), .malformedPayload, "400"),
            (WuKongWebhookRequest(method: "GET", query: "secret=s3cret&event=msg.notify", body: good), .malformedPayload, "400"),
        ]
        for (request, code, status) in cases {
            do {
                _ = try inbound.parse(request)
                Issue.record("accepted \(request.query)")
            } catch let error as IMError {
                #expect(error.code == code)
                #expect(error.details["http_status"] == status)
            }
        }
    }

    @Test func offlineAndOnlineStatusBodies() throws {
        let inbound = WuKongInbound(secret: nil)
        var offline = Self.text
        offline.toUIDs = ["u2"]
        let parsed = try inbound.parse(WuKongWebhookRequest(query: "event=msg.offline", body: WuKongJSON.encode(offline)))
        #expect(parsed == .messages([offline], event: "msg.offline"))
        let status = try inbound.parse(WuKongWebhookRequest(query: "event=user.onlinestatus", body: Data(#"["u1-1-1-1001-1-2"]"#.utf8)))
        #expect(status == .onlineStatus(["u1-1-1-1001-1-2"]))
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

@Suite struct WuKongErrorMapTests {
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

@Suite struct WuKongSettingsTests {
    @Test func parsesBridgeYAMLSettings() throws {
        let config = try WuKongBackend.Configuration(id: "wk", settings: [
            "adapter": "wukong", "im_url": "http://wk:5001", "business_url": "http://tsdd:8090", "manager_token": "m",
            "webhook_secret": "s", "custom_types": "101=order_card, 102=invoice", "session_tokens": "u1=t1", "timeout_seconds": "7",
        ])
        #expect(config.imURL == "http://wk:5001" && config.businessURL == "http://tsdd:8090" && config.managerToken == "m")
        #expect(config.customTypes == [101: "order_card", 102: "invoice"] && config.sessionTokens == ["u1": "t1"])
        #expect(config.timeoutSeconds == 7 && config.webhookSecret == "s")
        #expect(try WuKongBackend.Configuration(id: "wk", settings: ["im_url": "http://a"]).businessURL == "http://a")
    }

    @Test(arguments: [
        (["business_url": "http://b"], "im_url"),
        (["im_url": "http://a", "imurl": "x"], "imurl"),
        (["im_url": "http://a", "custom_types": "x=1"], "custom_types"),
        (["im_url": "http://a", "timeout_seconds": "-1"], "timeout_seconds"),
    ])
    func refusesBadSettingsNamingTheKey(settings: [String: String], key: String) {
        do {
            _ = try WuKongBackend.Configuration(id: "wk", settings: settings)
            Issue.record("accepted \(settings)")
        } catch let error as IMError {
            #expect(error.details["setting"] == key && error.code == .invalidArgument)
        } catch {
            Issue.record("\(error)")
        }
    }
}
