import Foundation
import IMCore
import IMHTTP
import IMSandbox
import NIM
import NIMSandbox
import SandboxTestSupport
import Testing

/// what other clients of the NIM server API send (request shapes the sandbox must accept) and
/// the endpoints they call that the sandbox did not serve. Requests are raw HTTP built by hand.
@Suite(.serialized) struct NIMSandboxClientShapeTests {
    /// The headers NetEase's `yunxin-mcp-server` sends (python-requests, `data=dict`, Nonce a UUID with dashes).
    static func pythonHeaders(path: String, nonce: String = "0f8fad5b-d9cb-469f-a165-70867728950e") -> [(name: String, value: String)] {
        let time = String(Int64(Date().timeIntervalSince1970))
        return [("User-Agent", "python-requests/2.32.3"), ("Accept-Encoding", "gzip, deflate"), ("Accept", "*/*"),
                ("Connection", "keep-alive"), ("AppKey", NIMSandboxHelper.appKey), ("Nonce", nonce), ("CurTime", time),
                ("CheckSum", Hashing.sha1Hex(NIMSandboxHelper.appSecret + nonce + time)), ("api", path),
                ("Content-Type", "application/x-www-form-urlencoded")]
    }

    /// `requests.post(url, data={"from":…, "ope":"0", "to":…, "type":"0", "body": str({"msg": content})})`:
    /// the body is a Python dict literal, single-quoted; NIM answers the msgid.
    @Test func pythonDictBodyIsAcceptedAndStoredAsJSON() async throws {
        try await NIMSandboxHelper.with(.init(callbacks: .none)) { sandbox in
            try await sandbox.createUsers("alice", "bob")
            // str({"msg": "hello 你好"}) → {'msg': 'hello 你好'}, form-encoded by requests (space as +).
            let bytes = Array("from=alice&ope=0&to=bob&type=0&body=%7B%27msg%27%3A+%27hello+%E4%BD%A0%E5%A5%BD%27%7D".utf8)
            let sent = try await sandbox.rig.send("POST", "/nimserver/msg/sendMsg.action", body: bytes,
                                                  headers: Self.pythonHeaders(path: "/msg/sendMsg.action"))
            #expect(sent.status == 200 && sent.json["code"] == 200)
            let msgid = try #require(sent.json["data"]?["msgid"]?.int64Value)
            // str({"msg": "it's"}) → {'msg': "it's"}; a nested dict with True/None as Python prints them.
            let quoted = Array("from=alice&ope=0&to=bob&type=100&body=%7B%27k%27%3A+%22it%27s%22%2C+%27ok%27%3A+True%2C+%27n%27%3A+None%7D".utf8)
            let custom = try await sandbox.rig.send("POST", "/nimserver/msg/sendMsg.action", body: quoted,
                                                    headers: Self.pythonHeaders(path: "/msg/sendMsg.action"))
            #expect(custom.json["code"] == 200)
            let records = try await sandbox.rig.messages()
            #expect(records.count == 2 && records[0].id == String(msgid) && records[0].kind == "text" && records[0].text == "hello 你好")
            let history = try await sandbox.call("POST", "/history/querySessionMsg.action", .form([
                ("from", "alice"), ("to", "bob"), ("begintime", "0"), ("endtime", String(Int64(Date().timeIntervalSince1970 * 1000) + 60_000)),
                ("limit", "10"), ("reverse", "1")])).json
            let bodies = history["msgs"]?.arrayValue?.compactMap { $0["body"]?.stringValue } ?? []
            #expect(bodies.count == 2)
            #expect(bodies.first.flatMap { try? JSONValue.parse($0) } == ["msg": "hello 你好"])
            #expect(bodies.last.flatMap { try? JSONValue.parse($0) } == ["k": "it's", "ok": true, "n": .null])
            // Still refused: not a dict at all, or a broken literal.
            for body in ["hello", "{'msg': 'x'", "['a']", "{'msg': undefined}"] {
                let answer = try await sandbox.call("POST", "/msg/sendMsg.action", .form([("from", "alice"), ("ope", "0"), ("to", "bob"), ("type", "0"), ("body", body)]))
                #expect(answer.json["code"] == 414, "\(body)")
            }
        }
    }

    /// `option` and `toAccids` are JSON fields too: Python-style values are read the same way.
    @Test func pythonStyleOptionAndAccidListsAreRead() async throws {
        try await NIMSandboxHelper.with(.init(callbacks: .none)) { sandbox in
            try await sandbox.createUsers("alice", "bob", "carol")
            let hidden = try await sandbox.call("POST", "/msg/sendMsg.action", .form([("from", "alice"), ("ope", "0"), ("to", "bob"), ("type", "0"),
                                                                        ("body", "{'msg': 'off the record'}"), ("option", "{'history': False}")]))
            #expect(hidden.json["code"] == 200)
            let batch = try await sandbox.call("POST", "/msg/sendBatchMsg.action", .form([("fromAccid", "alice"), ("toAccids", "['bob', 'carol', 'ghost']"),
                                                                           ("type", "0"), ("body", "{'msg': 'all'}")]))
            #expect(batch.json["code"] == 200 && batch.json["unregister"] == #"["ghost"]"#)
            let history = try await sandbox.call("POST", "/history/querySessionMsg.action", .form([
                ("from", "alice"), ("to", "bob"), ("begintime", "0"), ("endtime", String(Int64(Date().timeIntervalSince1970 * 1000) + 60_000)),
                ("limit", "10")])).json
            #expect(history["size"] == 1 && history["msgs"]?.arrayValue?.first?["body"] == #"{"msg":"all"}"#)
        }
    }

    @Test func refreshTokenReplacesTheToken() async throws {
        try await NIMSandboxHelper.with(.init(callbacks: .none)) { sandbox in
            let created = try await sandbox.call("POST", "/user/create.action", .form([("accid", "alice")])).json
            let first = try #require(created["info"]?["token"]?.stringValue)
            let refreshed = try await sandbox.call("POST", "/user/refreshToken.action", .form([("accid", "Alice")])).json
            #expect(refreshed["code"] == 200 && refreshed["info"]?["accid"] == "alice")
            let second = try #require(refreshed["info"]?["token"]?.stringValue)
            #expect(second != first && !second.isEmpty)
            let users = try await sandbox.rig.get("/_sandbox/users").json
            #expect(users["users"]?.arrayValue?.first?["token"]?.stringValue == second)
            #expect(try await sandbox.call("POST", "/user/refreshToken.action", .form([("accid", "ghost")])).json == ["code": 414, "desc": "not register"])
            #expect(try await sandbox.call("POST", "/user/refreshToken.action", .form([])).json["code"] == 414)
            #expect(try await sandbox.call("POST", "/user/refreshToken.action", .form([("accid", "alice")]), headers: NIMSandboxHelper.signedHeaders(secret: "wrong")).json == ["code": 414, "desc": "checksum"])
        }
    }

    @Test func updateUinfoShowsInGetUinfos() async throws {
        try await NIMSandboxHelper.with(.init(callbacks: .none)) { sandbox in
            try await sandbox.call("POST", "/user/create.action", .form([("accid", "alice"), ("name", "Alice"), ("sign", "hi")]))
            try await sandbox.createUsers("bob")
            let updated = try await sandbox.call("POST", "/user/updateUinfo.action", .form([("accid", "alice"), ("name", "Alice L"), ("gender", "2"),
                                                                             ("ex", #"{"level":3}"#), ("sign", "")]))
            #expect(updated.json == ["code": 200])
            let infos = try await sandbox.call("POST", "/user/getUinfos.action", .form([("accids", #"["bob","alice","ghost"]"#)])).json
            #expect(infos["code"] == 200)
            let list = infos["uinfos"]?.arrayValue ?? []
            #expect(list.count == 2 && list[0]["accid"] == "bob" && list[0]["name"] == nil)
            #expect(list[1]["name"] == "Alice L" && list[1]["gender"] == 2 && list[1]["ex"] == #"{"level":3}"# && list[1]["sign"] == nil)
            // Refusals: 414 for a bad gender, an over-long field, an unknown accid, a list that is not JSON or too long.
            for fields in [[("accid", "alice"), ("gender", "3")], [("accid", "alice"), ("name", String(repeating: "n", count: 65))],
                           [("accid", "ghost"), ("name", "x")], [("name", "x")]] {
                #expect(try await sandbox.call("POST", "/user/updateUinfo.action", .form(fields)).json["code"] == 414)
            }
            #expect(try await sandbox.call("POST", "/user/getUinfos.action", .form([("accids", "alice")])).json["code"] == 414)
            let many = JSONValue.array((0...200).map { .string("u\($0)") }).jsonString()
            #expect(try await sandbox.call("POST", "/user/getUinfos.action", .form([("accids", many)])).json["code"] == 414)
        }
    }

    @Test func sendBatchAttachMsgCopiesToEachRegisteredAccid() async throws {
        try await NIMSandboxHelper.with { sandbox in
            try await sandbox.createUsers("alice", "bob", "carol")
            let answer = try await sandbox.call("POST", "/msg/sendBatchAttachMsg.action", .form([
                ("fromAccid", "alice"), ("toAccids", #"["bob","carol","ghost"]"#), ("attach", #"{"name":"typing"}"#), ("save", "1")]))
            #expect(answer.json == ["code": 200, "unregister": #"["ghost"]"#])
            let copies = await sandbox.callbacks!.waitFor(2)
            let parsed = try copies.map { try JSONValue.parse(Data($0.body)) }
            #expect(Set(parsed.compactMap { $0["to"]?.stringValue }) == ["bob", "carol"])
            #expect(parsed.allSatisfy { $0["msgType"] == "CUSTOM_P2P_MSG" && $0["attach"] == #"{"name":"typing"}"# && $0["customSafeFlag"] == "0" })
            #expect(try await sandbox.rig.messages().isEmpty, "system notifications are not stored")
            for fields in [[("fromAccid", "ghost"), ("toAccids", #"["bob"]"#), ("attach", "{}")],
                           [("fromAccid", "alice"), ("toAccids", "bob"), ("attach", "{}")],
                           [("fromAccid", "alice"), ("toAccids", #"["bob"]"#)],
                           [("fromAccid", "alice"), ("toAccids", #"["bob"]"#), ("attach", String(repeating: "a", count: 4097))]] {
                #expect(try await sandbox.call("POST", "/msg/sendBatchAttachMsg.action", .form(fields)).json["code"] == 414)
            }
        }
    }

    @Test func broadcastMsgAnswersTheBroadcastAndIsListed() async throws {
        try await NIMSandboxHelper.with(.init(callbacks: .none)) { sandbox in
            try await sandbox.createUsers("alice")
            let answer = try await sandbox.call("POST", "/msg/broadcastMsg.action", .form([("body", "maintenance at 22:00"), ("from", "alice"),
                                                                             ("isOffline", "true"), ("ttl", "24"), ("targetOs", #"["ios","aos"]"#)])).json
            #expect(answer["code"] == 200)
            let msg = try #require(answer["msg"])
            #expect(msg["body"] == "maintenance at 22:00" && msg["from"] == "alice" && msg["isOffline"] == true)
            #expect(msg["targetOs"] == ["ios", "aos"] && msg["broadcastId"]?.int64Value != nil)
            let created = try #require(msg["createTime"]?.int64Value)
            #expect(msg["expireTime"]?.int64Value == created + 24 * 3_600_000)
            let plain = try await sandbox.call("POST", "/msg/broadcastMsg.action", .form([("body", "hello all")])).json
            #expect(plain["msg"]?["isOffline"] == false && plain["msg"]?["from"] == nil)
            #expect(plain["msg"]?["expireTime"]?.int64Value == plain["msg"]!["createTime"]!.int64Value! + 7 * 86_400_000)
            let listed = try await sandbox.rig.get("/_sandbox/broadcasts").json
            #expect(listed["broadcasts"]?.arrayValue?.count == 2 && listed["broadcasts"]?.arrayValue?.first?["body"] == "maintenance at 22:00")
            #expect(try await sandbox.rig.messages().isEmpty, "a broadcast is not a chat message")
            for fields in [[("from", "alice")], [("body", String(repeating: "b", count: 4097))], [("body", "x"), ("targetOs", #"["tv"]"#)],
                           [("body", "x"), ("ttl", "0")], [("body", "x"), ("from", "ghost")], [("body", "x"), ("isOffline", "maybe")]] {
                #expect(try await sandbox.call("POST", "/msg/broadcastMsg.action", .form(fields)).json["code"] == 414)
            }
        }
    }

    /// docs/adapters/nim.md §4's endpoint table against what the sandbox serves: every "served" row is
    /// `servedPaths` and answers something other than "no such api"; every "not served" row answers 404.
    @Test func endpointTableMatchesTheSandbox() async throws {
        let rows = try EndpointTable.rows(vendor: "nim").filter { $0.endpoint.hasPrefix("/") && $0.endpoint.hasSuffix(".action") }
        let served = rows.filter(\.served).map(\.endpoint), notServed = rows.filter { !$0.served }.map(\.endpoint)
        #expect(Set(served) == Set(NIMSandbox.servedPaths) && served.count == NIMSandbox.servedPaths.count)
        #expect(!notServed.isEmpty)
        try await NIMSandboxHelper.with(.init(callbacks: .none)) { sandbox in
            for path in served {
                let answer = try await sandbox.call("POST", path, .form([])).json
                #expect(answer["code"] != 404 && answer["desc"]?.stringValue?.hasPrefix("no such api") != true, "\(path)")
            }
            for path in notServed {
                #expect(try await sandbox.call("POST", path, .form([])).json["code"] == 404, "\(path)")
            }
        }
    }
}
