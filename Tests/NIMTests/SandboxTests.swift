import Foundation
import IMCore
import IMAdapterKit
import IMHTTP
import IMSandbox
import IMTesting
import NIM
import NIMSandbox
import SandboxTestSupport
import Testing

@Suite(.serialized) struct NIMSandboxTests {
    @Test func signaturesAreCheckedLikeNIM() async throws {
        try await NIMSandboxHelper.with(.init(callbacks: .none)) { sandbox in
            let good = try await sandbox.call("POST", "/user/create.action", .form([("accid", "alice")]))
            #expect(good.status == 200 && good.json["code"] == 200)
            #expect(good.json["info"]?["accid"] == "alice")
            let forged = try await sandbox.call("POST", "/user/create.action", .form([("accid", "bob")]), headers: NIMSandboxHelper.signedHeaders(secret: "wrong"))
            #expect(forged.status == 200 && forged.json == ["code": 414, "desc": "checksum"])
            let otherKey = try await sandbox.call("POST", "/user/create.action", .form([("accid", "bob")]), headers: NIMSandboxHelper.signedHeaders(appKey: "nope"))
            #expect(otherKey.json["code"] == 414 && otherKey.json["desc"] == "appkey")
            let stale = try await sandbox.call("POST", "/user/create.action", .form([("accid", "bob")]), headers: NIMSandboxHelper.signedHeaders(curTime: "1443592222"))
            #expect(stale.json == ["code": 414, "desc": "CurTime is expired"])
            let users = await sandbox.vendor.users()
            #expect(users.count == 1)
        }
    }

    /// The sandbox refuses what NIM refuses: `ext` over 1024 characters or not JSON, `pushcontent` over 500.
    @Test func theSandboxRefusesOverLongFields() async throws {
        try await NIMSandboxHelper.with(.init(callbacks: .none)) { sandbox in
            for accid in ["alice", "bob"] { _ = try await sandbox.call("POST", "/user/create.action", .form([("accid", accid)])) }
            func send(_ extra: [(String, String)]) async throws -> JSONValue {
                try await sandbox.call("POST", "/msg/sendMsg.action", .form([("from", "alice"), ("ope", "0"), ("to", "bob"), ("type", "0"),
                                                                              ("body", #"{"msg":"x"}"#)] + extra)).json
            }
            #expect(try await send([("ext", #"{"a":""# + String(repeating: "b", count: 1020) + #""}"#)])["code"] == 414)
            #expect(try await send([("ext", "not json")])["code"] == 414)
            #expect(try await send([("pushcontent", String(repeating: "p", count: 501))])["code"] == 414)
            #expect(try await send([("ext", #"{"a":1}"#), ("pushcontent", String(repeating: "p", count: 500))])["code"] == 200)
        }
    }

    @Test func accountsAndSendEnvelopes() async throws {
        try await NIMSandboxHelper.with(.init(callbacks: .none)) { sandbox in
            try await sandbox.createUsers("Alice", "bob")
            let again = try await sandbox.call("POST", "/user/create.action", .form([("accid", "alice")]))
            #expect(again.json == ["code": 414, "desc": "already register"])
            let sent = try await sandbox.sendText("你好", from: "alice", to: "bob")
            #expect(sent["code"] == 200 && sent["data"]?["msgid"]?.int64Value != nil && sent["data"]?["timetag"]?.int64Value != nil)
            #expect(sent["data"]?["antispam"] == false)
            // Parameter errors: 414 with a desc, HTTP 200.
            for fields in [[("from", "alice"), ("ope", "2"), ("to", "bob"), ("type", "0"), ("body", #"{"msg":"x"}"#)],
                           [("from", "alice"), ("ope", "0"), ("to", "bob"), ("type", "7"), ("body", #"{"msg":"x"}"#)],
                           [("from", "alice"), ("ope", "0"), ("to", "bob"), ("type", "0"), ("body", "not json")],
                           [("from", "alice"), ("ope", "0"), ("to", "bob"), ("type", "0"),
                            ("body", JSONValue.object(["msg": .string(String(repeating: "长", count: 4995))]).jsonString())],
                           [("from", "carol"), ("ope", "0"), ("to", "bob"), ("type", "0"), ("body", #"{"msg":"x"}"#)]] {
                let answer = try await sandbox.call("POST", "/msg/sendMsg.action", .form(fields))
                #expect(answer.status == 200 && answer.json["code"] == 414 && answer.json["desc"]?.stringValue?.isEmpty == false)
            }
            // Case-insensitive names (pushContent / pushcontent) and a team message (into a team alice is in).
            try await sandbox.seedGroup("1001", owner: "alice", members: ["bob"])
            let team = try await sandbox.call("POST", "/msg/sendMsg.action", .form([("FROM", "alice"), ("ope", "1"), ("to", "1001"), ("type", "100"),
                                                                      ("body", #"{"k":1}"#), ("pushContent", "p")]))
            #expect(team.json["code"] == 200)
            let batch = try await sandbox.call("POST", "/msg/sendBatchMsg.action", .form([("fromAccid", "alice"), ("toAccids", #"["bob","ghost"]"#),
                                                                           ("type", "0"), ("body", #"{"msg":"all"}"#), ("returnMsgid", "true")]))
            #expect(batch.json["code"] == 200 && batch.json["unregister"] == #"["ghost"]"#)
            #expect(batch.json["msgids"]?["bob"]?.int64Value != nil)
            let messages = try await sandbox.rig.messages()
            #expect(messages.map(\.kind) == ["text", "custom", "text"])
            #expect(messages[0].conversationID == "alice,bob" && messages[0].text == "你好")
            #expect(messages[1].conversationType == "group" && messages[1].conversationID == "1001")
        }
    }

    @Test func recallWindowOwnershipAndRepeats() async throws {
        try await NIMSandboxHelper.with(.init(callbacks: .none)) { sandbox in
            try await sandbox.createUsers("alice", "bob")
            func recall(_ sent: JSONValue, from: String = "alice", type: String = "7", extra: [(String, String)] = []) async throws -> JSONValue {
                try await sandbox.call("POST", "/msg/recall.action", .form([
                    ("deleteMsgid", sent["data"]!["msgid"]!.stringValue!), ("timetag", sent["data"]!["timetag"]!.stringValue!),
                    ("type", type), ("from", from), ("to", from == "alice" ? "bob" : "alice")] + extra)).json
            }
            let first = try await sandbox.sendText("one", from: "alice", to: "bob")
            #expect(try await recall(first, type: "8")["code"] == 414)
            #expect(try await recall(first, from: "bob")["code"] == 403)
            #expect(try await recall(first) == ["code": 200])
            #expect(try await recall(first)["code"] == 417)
            let late = try await sandbox.sendText("two", from: "alice", to: "bob")
            sandbox.advanceClock(byMs: 120_001)
            #expect(try await recall(late)["code"] == 508)
            #expect(try await recall(late, extra: [("ignoreTime", "2")])["code"] == 414)
            #expect(try await recall(late, extra: [("ignoreTime", "1")]) == ["code": 200])
            let recalled = try await sandbox.rig.messages().map(\.recalled)
            #expect(recalled == [true, true])
        }
    }

    /// Three messages in one millisecond: paging with `excludeMsgid` must neither skip nor repeat.
    @Test func historyPagingAtEqualTimestamps() async throws {
        try await NIMSandboxHelper.with(.init(callbacks: .none, frozenClock: true)) { sandbox in
            try await sandbox.createUsers("alice", "bob", "carol")
            // The sandbox clock is frozen: every message below has the same send time.
            var ids: [Int64] = []
            for n in 0..<6 { ids.append(try await sandbox.sendText("m\(n)", from: n % 2 == 0 ? "alice" : "bob", to: n % 2 == 0 ? "bob" : "alice")["data"]!["msgid"]!.int64Value!) }
            _ = try await sandbox.sendText("other conversation", from: "alice", to: "carol")
            func query(_ fields: [(String, String)]) async throws -> JSONValue {
                try await sandbox.call("POST", "/history/querySessionMsg.action", .form([("from", "bob"), ("to", "alice")] + fields)).json
            }
            let all = try await query([("begintime", "0"), ("endtime", "99999999999999"), ("limit", "100"), ("reverse", "1")])
            #expect(all["code"] == 200 && all["size"] == 6)
            let entries = all["msgs"]!.arrayValue!
            #expect(entries.compactMap { $0["msgid"]?.int64Value } == ids)
            #expect(Set(entries.compactMap { $0["sendtime"]?.int64Value }).count == 1)
            #expect(entries[0]["body"] == #"{"msg":"m0"}"# && entries[0]["from"] == "alice" && entries[0]["type"] == 0)
            // Walk descending two at a time with excludeMsgid from the last one seen.
            var seen: [Int64] = []
            var end = "99999999999999", exclude: String?
            for _ in 0..<10 {
                var fields = [("begintime", "0"), ("endtime", end), ("limit", "2")]
                if let exclude { fields.append(("excludeMsgid", exclude)) }
                let page = try await query(fields)["msgs"]!.arrayValue!
                let fresh = page.filter { !seen.contains($0["msgid"]!.int64Value!) }
                guard let last = fresh.last else { break }
                seen += fresh.map { $0["msgid"]!.int64Value! }
                end = last["sendtime"]!.stringValue!
                exclude = last["msgid"]!.stringValue!
            }
            #expect(seen == ids.reversed(), "descending walk at one timestamp: \(seen)")
            // Inclusive bounds: a window of exactly one message's time returns it.
            let t = entries[3]["sendtime"]!.int64Value!
            let exact = try await query([("begintime", String(t - 1)), ("endtime", String(t)), ("limit", "100"), ("reverse", "1")])
            #expect(exact["msgs"]!.arrayValue!.contains { $0["msgid"]?.int64Value == ids[3] })
            // Parameter errors.
            #expect(try await query([("begintime", "5"), ("endtime", "5"), ("limit", "1")])["code"] == 414)
            #expect(try await query([("begintime", "0"), ("endtime", "5"), ("limit", "101")])["code"] == 414)
            #expect(try await query([("begintime", "0"), ("endtime", "5"), ("limit", "1"), ("reverse", "3")])["code"] == 414)
            // Team history: the team must exist (803) and `accid` be in it (804); with checkTeamValid=false,
            // have been in it once.
            func teamQuery(_ tid: String, _ accid: String, _ extra: [(String, String)] = []) async throws -> JSONValue {
                try await sandbox.call("POST", "/history/queryTeamMsg.action", .form([("tid", tid), ("accid", accid), ("begintime", "0"),
                                                                                      ("endtime", "9"), ("limit", "10")] + extra)).json
            }
            #expect(try await teamQuery("1", "alice")["code"] == 803)
            try await sandbox.seedGroup("1002", owner: "carol", members: ["alice", "bob"])
            #expect(try await teamQuery("1002", "alice") == ["code": 200, "size": 0, "msgs": []])
            #expect(try await sandbox.call("POST", "/team/kick.action", .form([("tid", "1002"), ("owner", "carol"), ("member", "alice")])).json["code"] == 200)
            #expect(try await teamQuery("1002", "alice")["code"] == 804, "a member who left, by default")
            #expect(try await teamQuery("1002", "alice", [("checkTeamValid", "false")])["code"] == 200, "a member who left, checkTeamValid=false")
            #expect(try await teamQuery("1002", "zed", [("checkTeamValid", "false")])["code"] == 804, "never a member")
            #expect(try await teamQuery("1002", "carol")["code"] == 200, "the owner")
        }
    }

    @Test func copiesAreSignedWithMD5AndCheckSumAndRetried() async throws {
        try await NIMSandboxHelper.with { sandbox in
            try await sandbox.createUsers("alice", "bob")
            sandbox.callbacks!.failNext(1, status: 503)
            let sent = try await sandbox.sendText("copy me", from: "alice", to: "bob")
            _ = try await sandbox.sendText("not copied", from: "alice", to: "bob", option: #"{"route":false}"#)
            try await sandbox.call("POST", "/msg/recall.action", .form([("deleteMsgid", sent["data"]!["msgid"]!.stringValue!),
                                                          ("timetag", sent["data"]!["timetag"]!.stringValue!), ("type", "7"),
                                                          ("from", "alice"), ("to", "bob"), ("msg", "撤回")]))
            let requests = await sandbox.callbacks!.waitFor(3)
            #expect(requests.count == 3)
            for request in requests {
                let md5 = Hashing.md5Hex(request.body)
                #expect(request.header("MD5") == md5)
                #expect(request.header("CheckSum") == Hashing.sha1Hex(NIMSandboxHelper.appSecret + md5 + request.header("CurTime")!))
                #expect(request.header("AppKey") == NIMSandboxHelper.appKey && request.path == "/receiveMsg.action")
            }
            let first = try JSONValue.parse(Data(requests[0].body)), retried = try JSONValue.parse(Data(requests[1].body))
            #expect(first == retried)
            #expect(first["eventType"] == "1" && first["convType"] == "PERSON" && first["msgType"] == "TEXT")
            #expect(first["body"] == "copy me" && first["msgidServer"] == .string(sent["data"]!["msgid"]!.stringValue!))
            let recall = try JSONValue.parse(Data(requests[2].body))
            #expect(recall["eventType"] == "7" && recall["selfMsg"] == "撤回" && recall["msgId"] == first["msgidServer"])
            // The adapter's callback receiver accepts exactly these requests.
            let backend = NIMBackend(settings: NIMSettings(appKey: NIMSandboxHelper.appKey, appSecret: NIMSandboxHelper.appSecret))
            let sink = CollectingSink()
            for request in requests {
                let answer = await backend.handle(request, sink: sink)
                #expect(answer.status == 200 && answer.bodyString == #"{"code":200}"#)
            }
            #expect(sink.refusals.isEmpty)
            let events = sink.events
            #expect(events.map(\.kindName) == ["message", "message", "recalled"])
            #expect(events[0].eventID == events[1].eventID)
        }
    }

    @Test func uploadServesTheBytesAndFaultsUseTheEnvelope() async throws {
        try await NIMSandboxHelper.with(.init(callbacks: .none)) { sandbox in
            let upload = try await sandbox.call("POST", "/msg/upload.action", .form([("content", Data("hello".utf8).base64EncodedString()), ("type", "txt")]))
            let url = try #require(upload.json["url"]?.stringValue)
            let fetched = try await HTTPClientWrapper().send(OutboundRequest(method: "GET", url: url))
            #expect(fetched.status == 200 && fetched.bodyString == "hello")
            let fault = try await HTTPClientWrapper().send(.json(sandbox.baseURL + "/_sandbox/faults",
                                                                 Data(#"{"status":429,"count":1,"path_prefix":"/msg/"}"#.utf8)))
            #expect(fault.status == 200)
            let limited = try await sandbox.sendText("x", from: "a", to: "b")
            #expect(limited == ["code": 416, "desc": "frequency control"])
            #expect(try await sandbox.sendText("x", from: "a", to: "b")["code"] == 414)
        }
    }

    @Test func customSystemNotificationsAreCopiedNotStored() async throws {
        try await NIMSandboxHelper.with { sandbox in
            try await sandbox.createUsers("alice", "bob")
            let answer = try await sandbox.call("POST", "/msg/sendAttachMsg.action", .form([("from", "alice"), ("msgtype", "0"), ("to", "bob"),
                                                                              ("attach", #"{"name":"typing","data":{}}"#), ("save", "1")]))
            #expect(answer.json == ["code": 200])
            #expect(try await sandbox.call("POST", "/msg/sendAttachMsg.action", .form([("from", "alice"), ("msgtype", "3"), ("to", "bob"),
                                                                          ("attach", "{}")])).json["code"] == 414)
            let copies = await sandbox.callbacks!.waitFor(1)
            let copy = try JSONValue.parse(Data(copies[0].body))
            #expect(copy["convType"] == "CUSTOM_PERSON" && copy["msgType"] == "CUSTOM_P2P_MSG" && copy["customSafeFlag"] == "0")
            #expect(copy["attach"] == #"{"name":"typing","data":{}}"#)
            #expect(try await sandbox.rig.messages().isEmpty)
        }
    }

    /// The documented 100/s with a 10 s block, on a sandbox clock that only moves when told to.
    @Test func rateLimitsBlockForTenSeconds() async throws {
        let sandbox = try await NIMSandboxHelper.start(.init(callbacks: .none, appKey: "k", appSecret: "s", frozenClock: true,
                                                             rateLimits: Capabilities.nim.rateLimits))
        let clock = sandbox.clock
        func send() async throws -> JSONValue {
            try await sandbox.call("POST", "/msg/sendMsg.action", .form([("from", "a"), ("ope", "0"), ("to", "b"), ("type", "0"), ("body", #"{"msg":"x"}"#)])).json
        }
        for _ in 0..<100 { #expect(try await send()["code"] == 414) }
        #expect(try await send() == ["code": 416, "desc": "frequency control"])
        clock.advance(byMs: 9_000)
        #expect(try await send()["code"] == 416)
        clock.advance(byMs: 1_001)
        #expect(try await send()["code"] == 414)
        await sandbox.stop()
    }
}
