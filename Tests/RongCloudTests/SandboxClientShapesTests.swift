import Foundation
import IMCore
import IMHTTP
import IMSandbox
import Testing
@testable import RongCloud
@testable import RongCloudSandbox
import SandboxTestSupport

/// Requests exactly as the vendor's client libraries send them (raw bytes and headers), and
/// the endpoints those libraries call that the sandbox did not serve. Sources: docs/adapters/rongcloud.md §6.
@Suite(.serialized) struct RongCloudSandboxClientShapesTests {
    /// The headers of RongCloud's own MCP server (Python `requests`): `Nonce` a millisecond epoch,
    /// `Timestamp` seconds, the form posted by `requests` (commas percent-encoded as `%2C`).
    static func mcpHeaders() -> [(name: String, value: String)] {
        let nonce = "1795258879123", timestamp = "1795258879"
        return [("User-Agent", "python-requests/2.32.3"), ("Accept-Encoding", "gzip, deflate"), ("Accept", "*/*"),
                ("Connection", "keep-alive"), ("App-Key", RongCloudSandboxHelper.appKey), ("Nonce", nonce), ("Timestamp", timestamp),
                ("Signature", Hashing.sha1Hex(RongCloudSandboxHelper.secret + nonce + timestamp)),
                ("Content-Type", "application/x-www-form-urlencoded")]
    }

    /// The Go SDK's headers: seconds timestamp, an `X-Request-Id`.
    static func goHeaders(contentType: String = "application/x-www-form-urlencoded") -> [(name: String, value: String)] {
        let nonce = "8462957", timestamp = "1795258879"
        return [("User-Agent", "Go-http-client/1.1"), ("App-Key", RongCloudSandboxHelper.appKey), ("Nonce", nonce),
                ("Timestamp", timestamp), ("Signature", Hashing.sha1Hex(RongCloudSandboxHelper.secret + nonce + timestamp)),
                ("X-Request-Id", "5f0c3ad1-6bc2-4c5e-9a0e-0e6b1c3d2f10"), ("Content-Type", contentType)]
    }

    static let text = "content=%7B%22content%22%3A+%22hi%22%7D&objectName=RC%3ATxtMsg"

    func raw(_ h: RongCloudSandboxHelper, _ path: String, _ body: String,
             headers: [(name: String, value: String)] = mcpHeaders()) async throws -> SandboxRig.Reply {
        try await h.rig.send("POST", path, body: Array(body.utf8), headers: headers)
    }

    // MARK: comma-joined recipients

    @Test func commaJoinedToUserIdIsSplitIntoOneMessagePerUser() async throws {
        try await RongCloudSandboxHelper.with { h in
            let reply = try await raw(h, RCPaths.privatePublish, "fromUserId=u1&toUserId=u2%2Cu3&\(Self.text)")
            #expect(reply.status == 200 && reply.json["code"] == 200)
            let entries = try #require(reply.json["messageUIDs"]?.arrayValue)
            #expect(entries.map { $0["userId"] } == ["u2", "u3"])
            let stored = try #require(try await h.rig.get("/_sandbox/messages").json["messages"]?.arrayValue)
            #expect(stored.map { $0["to"] } == ["u2", "u3"], "no message to a user named \"u2,u3\"")
            #expect(stored.map { $0["conversation_id"] } == ["u1,u2", "u1,u3"])
            let routed = await h.callbacks!.waitFor(2)
            #expect(routed.map { RongCloudSandboxHelper.fields($0)["toUserId"] } == ["u2", "u3"])
            // Repeated keys and comma lists mix; an empty piece is refused.
            let mixed = try await raw(h, RCPaths.privatePublish, "fromUserId=u1&toUserId=u4%2Cu5&toUserId=u6&\(Self.text)")
            #expect(mixed.json["messageUIDs"]?.arrayValue?.map { $0["userId"] } == ["u4", "u5", "u6"])
            let empty = try await raw(h, RCPaths.privatePublish, "fromUserId=u1&toUserId=u2%2C&\(Self.text)")
            #expect(empty.status == 400 && empty.json["code"] == 1002)
        }
    }

    @Test func commaJoinedToGroupIdCountsAgainstTheThreeGroupLimit() async throws {
        try await RongCloudSandboxHelper.with { h in
            let four = try await raw(h, RCPaths.groupPublish, "fromUserId=u1&toGroupId=g1%2Cg2%2Cg3%2Cg4&\(Self.text)")
            #expect(four.status == 400 && four.json["code"] == 1502)
            #expect(try await h.rig.get("/_sandbox/messages").json["messages"]?.arrayValue?.isEmpty == true)
            let three = try await raw(h, RCPaths.groupPublish, "fromUserId=u1&toGroupId=g1%2Cg2%2Cg3&\(Self.text)")
            #expect(three.status == 200)
            #expect(three.json["messageUIDs"]?.arrayValue?.map { $0["groupId"] } == ["g1", "g2", "g3"])
            let stored = try #require(try await h.rig.get("/_sandbox/messages").json["messages"]?.arrayValue)
            #expect(stored.map { $0["conversation_id"] } == ["g1", "g2", "g3"])
        }
    }

    // MARK: v3 history direction

    @Test func historyV3ReadsFromTheNewerStartTimeBackToTheOlderEndTime() async throws {
        try await RongCloudSandboxHelper.with { h in
            var uids: [String] = []
            var times: [Int64] = []
            for n in 1...3 {
                let sent = try await h.call("POST", RCPaths.privatePublish, .formText("fromUserId=u1&toUserId=u2&objectName=RC:TxtMsg&content=\(FormBody.escape(#"{"content":"n\#(n)"}"#))"))
                uids.append(try #require(sent.json["messageUIDs"]?.arrayValue?.first?["messageUID"]?.stringValue))
                times.append(h.vendor.store.messages.last!.msgTime)
                h.rig.advanceClock(byMs: 1000)
            }
            // The Java SDK's example: typed JSON, startTime later than endTime.
            let start = times[2] + 500, end = times[0] - 500
            let body = #"{"userId":"u1","targetId":"u2","startTime":\#(start),"endTime":\#(end),"pageSize":2,"includeStart":true}"#
            let first = try await h.rig.send("POST", RCPaths.privateHistory, body: Array(body.utf8),
                                             headers: Self.goHeaders(contentType: "application/json; charset=utf-8"))
            #expect(first.status == 200 && first.json["code"] == 200)
            let rows = try #require(first.json["data"]?.arrayValue)
            #expect(rows.compactMap { $0["messageUID"]?.stringValue } == [uids[2], uids[1]], "newest first, from startTime")
            // Next page: startTime = the oldest msgTime returned, includeStart false (the Go SDK's all-string JSON).
            let oldest = try #require(rows.last?["msgTime"]?.int64Value)
            let next = #"{"userId":"u1","targetId":"u2","startTime":"\#(oldest)","endTime":"\#(end)","pageSize":"2","includeStart":"false"}"#
            let second = try await h.rig.send("POST", RCPaths.privateHistory, body: Array(next.utf8),
                                              headers: Self.goHeaders(contentType: "application/json"))
            #expect(second.json["data"]?.arrayValue?.compactMap { $0["messageUID"]?.stringValue } == [uids[0]])
            // includeStart decides whether the message exactly at startTime is included.
            let at = #"{"userId":"u1","targetId":"u2","startTime":\#(times[1]),"endTime":\#(end),"pageSize":10,"includeStart":true}"#
            #expect(try await h.call("POST", RCPaths.privateHistory, .json(at)).json["data"]?.arrayValue?.compactMap { $0["messageUID"]?.stringValue }
                    == [uids[1], uids[0]])
            // A window written oldest → newest is refused (the strict reading: endTime must be earlier).
            let forward = #"{"userId":"u1","targetId":"u2","startTime":\#(end),"endTime":\#(start),"pageSize":10,"includeStart":true}"#
            let refused = try await h.call("POST", RCPaths.privateHistory, .json(forward))
            #expect(refused.json["code"] == 1002 && refused.json["data"] == nil, "\(refused.json)")
            #expect(refused.json["errorMessage"]?.stringValue?.contains("must be earlier than startTime") == true, "\(refused.json)")
        }
    }

    // MARK: msgTime

    @Test func msgTimeStaysAtTheWallClockMillisecondAndUIDsStayUnique() async throws {
        try await RongCloudSandboxHelper.with { h in
            // The Go SDK's shape: repeated keys, 1000 recipients per request.
            let recipients = (1...1000).map { "toUserId=r\($0)" }.joined(separator: "&")
            let before = SystemClock().nowMs()
            for _ in 1...3 {
                let reply = try await raw(h, RCPaths.privatePublish, "fromUserId=u1&\(recipients)&\(Self.text)", headers: Self.goHeaders())
                #expect(reply.status == 200)
            }
            let after = SystemClock().nowMs()
            let messages = h.vendor.store.messages
            #expect(messages.count == 3000)
            #expect(Set(messages.map(\.msgUID)).count == 3000)
            #expect(messages.allSatisfy { $0.msgUID.wholeMatch(of: /[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}/) != nil })
            #expect(messages.allSatisfy { $0.msgTime >= before && $0.msgTime <= after },
                    "3,000 messages in 3 requests: msgTime within the wall-clock interval, not seconds ahead")
            #expect(zip(messages, messages.dropFirst()).allSatisfy { $0.msgTime <= $1.msgTime })
        }
    }

    // MARK: /message/system/publish.json

    @Test func systemPublishStoresAndRoutesOneMessagePerUser() async throws {
        try await RongCloudSandboxHelper.with { h in
            let body = "fromUserId=admin&toUserId=u2&toUserId=u3&objectName=RC%3ATxtMsg&content=%7B%22content%22%3A%22notice%22%7D"
                + "&pushContent=notice&pushData=&isPersisted=1&isCounted=1&contentAvailable=0"
            let reply = try await raw(h, "/message/system/publish.json", body, headers: Self.goHeaders())
            #expect(reply.status == 200 && reply.json["code"] == 200)
            let uids = try #require(reply.json["messageUIDs"]?.arrayValue)
            #expect(uids.map { $0["userId"] } == ["u2", "u3"])
            let stored = try #require(try await h.rig.get("/_sandbox/messages").json["messages"]?.arrayValue)
            #expect(stored.map { $0["conversation_type"] } == ["system", "system"])
            #expect(stored.map { $0["to"] } == ["u2", "u3"] && stored.first?["text"] == "notice")
            #expect(stored.first?["raw"]?["conversationType"] == 6)
            let routed = await h.callbacks!.waitFor(2)
            #expect(routed.map { RongCloudSandboxHelper.fields($0)["channelType"] } == ["NOTIFY", "NOTIFY"])
            // Not a private conversation: private history does not show it.
            let history = try await h.call("POST", RCPaths.privateHistory, .json(#"{"userId":"admin","targetId":"u2","startTime":99999999999999,"endTime":0,"pageSize":10,"includeStart":true}"#))
            #expect(history.json["data"]?.arrayValue?.isEmpty == true)
            // Refusals: ≤ 100 recipients (1502), required fields (1002), signature (401/1004).
            let many = (1...101).map { "u\($0)" }.joined(separator: "%2C")
            #expect(try await raw(h, "/message/system/publish.json", "fromUserId=admin&toUserId=\(many)&\(Self.text)").json["code"] == 1502)
            #expect(try await raw(h, "/message/system/publish.json", "toUserId=u2&\(Self.text)").json["code"] == 1002)
            let unsigned = try await h.call("POST", "/message/system/publish.json", .formText("fromUserId=admin&toUserId=u2&\(Self.text)"), headers: [])
            #expect(unsigned.status == 401 && unsigned.json["code"] == 1004)
            // A system message is recalled like any other.
            let uid = try #require(uids.first?["messageUID"]?.stringValue)
            let recall = try await h.call("POST", RCPaths.recall, .formText("fromUserId=admin&conversationType=6&targetId=u2&messageUID=\(uid)"))
            #expect(recall.json["code"] == 200)
        }
    }

    // MARK: users

    @Test func userInfoRefreshAndCheckOnline() async throws {
        try await RongCloudSandboxHelper.with { h in
            #expect(try await raw(h, RCPaths.getToken, "userId=u1&name=Alice&portraitUri=http%3A%2F%2Fx%2Fa.png").status == 200)
            let info = try await raw(h, "/user/info.json", "userId=u1")
            #expect(info.status == 200 && info.json["code"] == 200 && info.json["userName"] == "Alice")
            #expect(info.json["userPortrait"] == "http://x/a.png")
            let created = try #require(info.json["createTime"]?.stringValue)
            #expect(created.wholeMatch(of: /\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}/) != nil)
            let unknown = try await raw(h, "/user/info.json", "userId=nobody")
            #expect(unknown.status == 400 && unknown.json["code"] == 1002)
            #expect(try await raw(h, "/user/info.json", "userId=").json["code"] == 1002)

            // The Go SDK sends both fields, an empty one included: the empty portrait is left as it was.
            let refreshed = try await raw(h, "/user/refresh.json", "name=Alicia&portraitUri=&userId=u1", headers: Self.goHeaders())
            #expect(refreshed.status == 200 && refreshed.json == ["code": 200])
            let after = try await raw(h, "/user/info.json", "userId=u1")
            #expect(after.json["userName"] == "Alicia" && after.json["userPortrait"] == "http://x/a.png")
            #expect(after.json["createTime"]?.stringValue == created, "refresh keeps the registration time")
            #expect(try await h.rig.get("/_sandbox/users").json["users"] == [["userId": "u1", "name": "Alicia", "portraitUri": "http://x/a.png"]])
            let long = String(repeating: "n", count: 65)
            #expect(try await raw(h, "/user/refresh.json", "userId=u1&name=\(long)").json["code"] == 1002)
            #expect(try await raw(h, "/user/refresh.json", "userId=nobody&name=x").json["code"] == 1002)
            #expect(try await raw(h, "/user/refresh.json", "").json["code"] == 1003)

            let online = try await raw(h, "/user/checkOnline.json", "userId=u1")
            #expect(online.status == 200 && online.json == ["code": 200, "status": "0"], "status is a string; nobody connects to the sandbox")
            #expect(try await raw(h, "/user/checkOnline.json", "foo=1").json["code"] == 1002)
        }
    }

    // MARK: /message/history.json

    @Test func hourlyHistoryLogAnswersTheHourWithNoFile() async throws {
        try await RongCloudSandboxHelper.with { h in
            let reply = try await raw(h, "/message/history.json", "date=2014010101")
            #expect(reply.status == 200 && reply.json == ["code": 200, "url": "", "date": "2014010101"])
            #expect(try await raw(h, "/message/history.json", "date=2014013124").json["code"] == 1002)
            #expect(try await raw(h, "/message/history.json", "date=20140101").json["code"] == 1002)
            #expect(try await raw(h, "/message/history.json", "").json["code"] == 1003)
            #expect(try await h.call("POST", "/message/history.json", .formText("date=2014010101"), headers: []).status == 401)
        }
    }

    // MARK: the endpoint table

    /// docs/adapters/rongcloud.md §6's table, parsed: rows `| `/path` | served |` or `| `/path` | not served |`.
    static func documentedEndpoints() throws -> [(path: String, served: Bool)] {
        try EndpointTable.rows(vendor: "rongcloud").filter { $0.endpoint.hasPrefix("/") }.map { ($0.endpoint, $0.served) }
    }

    /// The sandbox's rate table is the preset's (`Capabilities.rongCloud.rateLimits`, one source): each
    /// limit names an endpoint the sandbox serves, and each publish endpoint has its documented rate.
    @Test func rateLimitsOfThePresetNameServedEndpoints() {
        let paths = Capabilities.rongCloud.rateLimits.map { "/\($0.api).json" }
        #expect(Set(paths).isSubset(of: Set(RongCloudSandbox.servedPaths)), "\(Set(paths).subtracting(RongCloudSandbox.servedPaths))")
        #expect(Set(RongCloudRateLimiter.documented.keys) == Set(paths))
        #expect(RongCloudRateLimiter.documented[RCPaths.groupPublish]?.limit == 20)
        #expect(RongCloudRateLimiter.documented[RCPaths.privatePublish]?.windowMs == 60_000)
        #expect(RongCloudRateLimiter.documented[RCSandboxPaths.systemPublish]?.limit == 100)
        #expect(RongCloudRateLimiter.documented[RCPaths.getToken]?.limit == 200)
        #expect(RCPaths.groupPaths.allSatisfy { RongCloudRateLimiter.documented[$0]?.limit == 100 })
    }

    @Test func endpointTableMatchesWhatTheSandboxServes() async throws {
        let table = try Self.documentedEndpoints()
        let served = Set(table.filter(\.served).map(\.path))
        #expect(served == Set(RongCloudSandbox.servedPaths))
        #expect(table.contains { !$0.served }, "the table also names what is not served")
        try await RongCloudSandboxHelper.with { h in
            for row in table {
                let reply = try await h.call("POST", row.path, .formText("a=1"))
                #expect((reply.status == 404) == !row.served, "\(row.path): \(reply.status)")
            }
        }
    }
}
