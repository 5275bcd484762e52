import Foundation
import IMCore
import IMHTTP
import IMSandbox
import NIM
import Testing

@Suite(.serialized) struct BackendTests {
    @Test func forgedCallbacksAreRefusedOverHTTPAndYieldNothing() async throws {
        try await WiredBackend.with { wired in
            let stream = wired.backend.events()
            let body = Array(#"{"eventType":"1","convType":"PERSON","to":"b","fromAccount":"a","msgType":"TEXT","body":"x","msgTimestamp":"1","msgidServer":"9"}"#.utf8)
            let md5 = Hashing.md5Hex(body)
            let forged = HTTPRequestData(method: "POST", path: "/receiveMsg.action",
                                         headers: [("AppKey", "k"), ("CurTime", "1"), ("MD5", md5), ("CheckSum", Hashing.sha1Hex("wrong" + md5 + "1"))],
                                         body: body)
            let refused = await wired.backend.callbackHandler(forged)
            #expect(refused.status == 401)
            let good = HTTPRequestData(method: "POST", path: "/receiveMsg.action",
                                       headers: [("AppKey", "k"), ("CurTime", "1"), ("MD5", md5), ("CheckSum", Hashing.sha1Hex("s" + md5 + "1"))],
                                       body: body)
            let events = try wired.backend.receive(good)
            #expect(events.map(\.eventID) == ["nim:msg:9"])
            var iterator = stream.makeAsyncIterator()
            let first = await iterator.next()
            #expect(first?.eventID == "nim:msg:9", "the forged request must not have produced an event before the good one")
            #expect(await wired.backend.callbackHandler(good).status == 200)
        }
    }

    @Test func repliesMentionsAndClientIDsTravelInExt() async throws {
        try await WiredBackend.with { wired in
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
            let raw = await wired.sandbox.vendor.messages().last?.raw
            #expect(raw?["ext"]?.stringValue?.contains("forcepush") == false)
        }
    }

    @Test func recallFindsTheSendTimeThroughHistoryAfterARestart() async throws {
        try await WiredBackend.with { wired in
            let sent = try await wired.backend.send(OutgoingMessage(conversation: .direct("alice", "bob"), sender: "alice", content: .text("x")))
            let fresh = NIMBackend(config: wired.backend.client.config, clock: wired.sandbox.clock)
            try await fresh.recall(sent.id, in: .direct("alice", "bob"), by: "alice")
            await #expect(throws: IMError.self) { try await fresh.recall(sent.id, in: .direct("alice", "bob"), by: "alice") }
            let records = await wired.sandbox.vendor.messages()
            #expect(records.first?.recalled == true)
            let page = try await fresh.history(HistoryQuery(conversation: .direct("alice", "bob")))
            #expect(page.messages.map(\.id) == [sent.id] && page.messages.first?.isRecalled == true)
            let other = try await NIMBackend(config: wired.backend.client.config, clock: wired.sandbox.clock)
                .history(HistoryQuery(conversation: .direct("alice", "bob")))
            #expect(other.messages.isEmpty, "NIM drops recalled messages from history; only the recalling process keeps a tombstone")
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
            #expect(await wired.sandbox.vendor.messages().isEmpty)
            #expect(await wired.sandbox.vendor.users().isEmpty)
        }
    }
}

@Suite(.serialized) struct ClientIDLookupTests {
    @Test func aRestartedBackendFindsAMessageByItsClientID() async throws {
        try await WiredBackend.with { wired in
            let sent = try await wired.backend.send(OutgoingMessage(conversation: .group("1001"), sender: "alice", content: .text("x"),
                                                                    clientMessageID: "bridge-77"))
            let fresh = NIMBackend(config: wired.backend.client.config, teamQueryAccid: "alice", clock: wired.sandbox.clock)
            let found = try await fresh.message(withClientID: "bridge-77", in: .group("1001"))
            #expect(found?.id == sent.id)
            #expect(try await fresh.message(withClientID: "bridge-78", in: .group("1001")) == nil)
        }
    }
}

@Suite struct SettingsTests {
    @Test func settingsBuildTheBackendAndNameBadKeys() throws {
        let backend = try NIMSettings.makeBackend(id: "yx", settings: ["app_key": "k", "app_secret": "s", "recall_window_ms": "600000",
                                                                       "custom_aliases": "1=order_card, 2=photo_card",
                                                                       "team_query_accid": "bot"], registry: ContentRegistry())
        #expect(backend.id == "yx" && backend.capabilities.recallWindowMs == 600_000 && backend.teamQueryAccid == "bot")
        #expect(backend.codec.content.customFormat.aliases == ["1": "order_card", "2": "photo_card"])
        #expect(backend.client.config.baseURL == "https://api-cn.yunxinapi.com/nimserver")
        for (settings, key) in [(["app_key": "k"], "app_secret"),
                                (["app_key": "k", "app_secret": "s", "recall_window_ms": "x"], "recall_window_ms"),
                                (["app_key": "k", "app_secret": "s", "create_users": "maybe"], "create_users"),
                                (["app_key": "k", "app_secret": "s", "custom_aliases": "1"], "custom_aliases")] {
            do {
                _ = try NIMSettings.makeBackend(id: "yx", settings: settings, registry: ContentRegistry())
                Issue.record("\(settings) accepted")
            } catch let error as IMError {
                #expect(error.details["setting"] == key)
            }
        }
    }
}
