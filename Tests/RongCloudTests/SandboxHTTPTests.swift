import Foundation
import IMCore
import IMHTTP
import IMTesting
import IMSandbox
import Testing
@testable import RongCloud
@testable import RongCloudSandbox
import SandboxTestSupport

/// The sandbox over real HTTP with hand-built requests shaped like the examples in docs/adapters/rongcloud.md.
@Suite(.serialized) struct RongCloudSandboxHTTPTests {
    static func e(_ text: String) -> String { FormBody.escape(text) }

    @Test func signatureIsCheckedLikeTheVendor() async throws {
        try await RongCloudSandboxHelper.with { h in
            let body = "userId=u1&name=Alice"
            let unsigned = try await h.call("POST", RCPaths.getToken, .formText(body), headers: [])
            #expect(unsigned.status == 401 && unsigned.json["code"] == 1004)
            let forged = try await h.call("POST", RCPaths.getToken, .formText(body), headers: RongCloudSandboxHelper.signedHeaders(secret: "wrong"))
            #expect(forged.status == 401 && forged.json["code"] == 1004 && forged.json["errorMessage"]?.stringValue?.isEmpty == false)
            let otherApp = try await h.call("POST", RCPaths.getToken, .formText(body), headers: RongCloudSandboxHelper.signedHeaders(key: "other"))
            #expect(otherApp.status == 401)
            // The doc's own sample request (ms timestamp), RC- names in lower case with an SDK-style nonce and
            // a seconds timestamp, and a trailing slash are all accepted.
            #expect(try await h.call("POST", RCPaths.getToken, .formText(body)).status == 200)
            let lower = RongCloudSandboxHelper.signedHeaders(nonce: "0.7940742792184153", timestamp: "1795258879", prefix: "rc-")
            let accepted = try await h.call("POST", RCPaths.getToken + "/", .formText(body), headers: lower)
            #expect(accepted.status == 200 && accepted.json["userId"] == "u1" && accepted.json["token"]?.stringValue?.isEmpty == false)
            #expect(accepted.header("Content-Type")?.hasPrefix("application/json") == true)
        }
    }

    @Test func getTokenErrors() async throws {
        try await RongCloudSandboxHelper.with { h in
            let missing = try await h.call("POST", RCPaths.getToken, .formText("userId=u1"))
            #expect(missing.status == 400 && missing.json["code"] == 1002)
            let empty = try await h.call("POST", RCPaths.getToken, .formText(""))
            #expect(empty.json["code"] == 1003)
            let badID = try await h.call("POST", RCPaths.getToken, .formText("userId=\(Self.e("a b"))&name=x"))
            #expect(badID.json["code"] == 1002)
            #expect(try await h.rig.get("/_sandbox/users").json["users"]?.arrayValue?.isEmpty == true)
            _ = try await h.call("POST", RCPaths.getToken, .formText("userId=u1&name=Alice&portraitUri=\(Self.e("http://x/a.png"))"))
            #expect(try await h.rig.get("/_sandbox/users").json["users"] == [["userId": "u1", "name": "Alice", "portraitUri": "http://x/a.png"]])
            let unknown = try await h.call("POST", "/message/nothing.json", .formText("a=1"))
            #expect(unknown.status == 404)
        }
    }

    @Test func privatePublishAnswersOneUIDPerRecipientAndRoutesEach() async throws {
        try await RongCloudSandboxHelper.with { h in
            let content = Self.e(#"{"content":"hello","extra":"helloExtra"}"#)
            let response = try await h.call("POST", RCPaths.privatePublish, .formText("fromUserId=u1&toUserId=u2&toUserId=u3&objectName=RC:TxtMsg&content=\(content)&isPersisted=1&isIncludeSender=True&disablePush=False"))
            #expect(response.status == 200 && response.json["code"] == 200)
            let entries = try #require(response.json["messageUIDs"]?.arrayValue)
            #expect(entries.map { $0["userId"] } == ["u2", "u3"])
            let uids = entries.compactMap { $0["messageUID"]?.stringValue }
            #expect(uids.count == 2 && Set(uids).count == 2)
            #expect(uids.allSatisfy { $0.wholeMatch(of: /[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}/) != nil })

            let callbacks = await h.callbacks!.waitFor(2)
            #expect(callbacks.count == 2)
            for (callback, uid) in zip(callbacks, uids) {
                #expect(callback.method == "POST" && callback.path == "/rc/route")
                let nonce = try #require(callback.queryValue("nonce")), timestamp = try #require(callback.queryValue("timestamp"))
                #expect(callback.queryValue("appKey") == RongCloudSandboxHelper.appKey)
                #expect(callback.queryValue("signature") == Hashing.sha1Hex(RongCloudSandboxHelper.secret + nonce + timestamp))
                let fields = RongCloudSandboxHelper.fields(callback)
                #expect(fields["msgUID"] == uid && fields["fromUserId"] == "u1" && fields["channelType"] == "PERSON")
                #expect(fields["objectName"] == "RC:TxtMsg" && fields["content"] == #"{"content":"hello","extra":"helloExtra"}"#)
                #expect(fields["msgTimestamp"].flatMap(Int64.init) != nil)
            #expect(fields["expansion"] == nil && fields["extraContent"] == nil, "not extensible")
            }
            #expect(callbacks.map { RongCloudSandboxHelper.fields($0)["toUserId"] } == ["u2", "u3"])

            let stored = try #require(try await h.rig.get("/_sandbox/messages").json["messages"]?.arrayValue)
            #expect(stored.count == 2)
            #expect(stored[0]["conversation_type"] == "direct" && stored[0]["conversation_id"] == "u1,u2")
            #expect(stored[0]["kind"] == "text" && stored[0]["text"] == "hello" && stored[0]["recalled"] == false)
            #expect(stored[0]["expansion"] == .object([:]) && stored[0]["raw"]?["objectName"] == "RC:TxtMsg")
            // The wall-clock receive time (µs) beside the millisecond msgTime stamp, for latency measurements.
            let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
            let received = try #require(stored[0]["received_at_us"]?.int64Value)
            #expect(received <= now && now - received < 60_000_000, "received \(received), now \(now)")
        }
    }

    @Test func publishRefusals() async throws {
        try await RongCloudSandboxHelper.with { h in
            let text = Self.e(#"{"content":"x"}"#)
            let noTarget = try await h.call("POST", RCPaths.privatePublish, .formText("fromUserId=u1&objectName=RC:TxtMsg&content=\(text)"))
            #expect(noTarget.status == 400 && noTarget.json["code"] == 1002)
            let fourGroups = try await h.call("POST", RCPaths.groupPublish, .formText("fromUserId=u1&toGroupId=g1&toGroupId=g2&toGroupId=g3&toGroupId=g4&objectName=RC:TxtMsg&content=\(text)"))
            #expect(fourGroups.json["code"] == 1502)
            let badJSON = try await h.call("POST", RCPaths.privatePublish, .formText("fromUserId=u1&toUserId=u2&objectName=RC:TxtMsg&content=hi"))
            #expect(badJSON.json["code"] == 1002)
            let longName = try await h.call("POST", RCPaths.privatePublish, .formText("fromUserId=u1&toUserId=u2&objectName=\(String(repeating: "A", count: 33))&content=x"))
            #expect(longName.json["code"] == 1002)
            let huge = try await h.call("POST", RCPaths.privatePublish, .formText("fromUserId=u1&toUserId=u2&objectName=App:Big&content=\(String(repeating: "x", count: 128 * 1024 + 1))"))
            #expect(huge.json["code"] == 1005)
            let group = try await h.call("POST", RCPaths.groupPublish, .formText("fromUserId=u1&toGroupId=g1&objectName=App:Order&content=\(Self.e("any text"))"))
            #expect(group.json["messageUIDs"]?.arrayValue?.first?["groupId"] == "g1")
            let stored = try await h.rig.get("/_sandbox/messages").json["messages"]?.arrayValue
            #expect(stored?.count == 1 && stored?.first?["kind"] == "custom" && stored?.first?["conversation_id"] == "g1")
        }
    }

    @Test func recallBySenderRoutesRcCmdAndHistoryShowsTheNotice() async throws {
        try await RongCloudSandboxHelper.with { h in
            let uid = try #require(try await h.sendText("oops"))
            let byOther = try await h.call("POST", RCPaths.recall, .formText("fromUserId=u2&conversationType=1&targetId=u1&messageUID=\(uid)"))
            #expect(byOther.status == 400 && byOther.json["code"] == 1002)
            #expect(byOther.json["errorMessage"]?.stringValue?.contains(RongCloudRefusal.notSender) == true)
            let unknown = try await h.call("POST", RCPaths.recall, .formText("fromUserId=u1&conversationType=1&targetId=u2&messageUID=NONE-NONE-NONE-NONE"))
            #expect(unknown.json["code"] == 1002)
            let wrongType = try await h.call("POST", RCPaths.recall, .formText("fromUserId=u1&conversationType=3&targetId=u2&messageUID=\(uid)"))
            #expect(wrongType.json["code"] == 1002)
            let recalled = try await h.call("POST", RCPaths.recall, .formText("fromUserId=u1&conversationType=1&targetId=u2&messageUID=\(uid)&isAdmin=0&isDelete=0"))
            #expect(recalled.status == 200 && recalled.json == ["code": 200])
            #expect(try await h.call("POST", RCPaths.recall, .formText("fromUserId=u1&conversationType=1&targetId=u2&messageUID=\(uid)")).json == ["code": 200])

            let callbacks = await h.callbacks!.waitFor(2)
            #expect(callbacks.count == 2, "a repeated recall routes no second RC:RcCmd")
            let command = RongCloudSandboxHelper.fields(callbacks[1])
            #expect(command["objectName"] == "RC:RcCmd" && command["fromUserId"] == "u1" && command["toUserId"] == "u2")
            let content = try JSONValue.parse(command["content"] ?? "")
            #expect(content["messageUId"]?.stringValue == uid && content["conversationType"] == 1 && content["isDelete"] == 0)

            let history = try await h.call("POST", RCPaths.privateHistory, .json(#"{"userId":"u2","targetId":"u1","startTime":"99999999999999","endTime":"0","pageSize":"10","includeStart":"true"}"#))
            let rows = try #require(history.json["data"]?.arrayValue)
            #expect(rows.count == 1 && rows[0]["messageUID"]?.stringValue == uid && rows[0]["objectName"] == "RC:RcNtf")
            #expect(try await h.rig.get("/_sandbox/messages").json["messages"]?.arrayValue?.first?["recalled"] == true)
        }
    }

    @Test func historyPagesByTimeWindow() async throws {
        try await RongCloudSandboxHelper.with { h in
            var uids: [String] = []
            for n in 1...3 {
                let sent = try await h.call("POST", RCPaths.groupPublish, .formText("fromUserId=u1&toGroupId=g1&objectName=RC:TxtMsg&content=\(Self.e(#"{"content":"n\#(n)"}"#))"))
                uids.append(try #require(sent.json["messageUIDs"]?.arrayValue?.first?["messageUID"]?.stringValue))
            }
            _ = try await h.call("POST", RCPaths.groupPublish, .formText("fromUserId=u1&toGroupId=g1&objectName=RC:CmdMsg&content=\(Self.e(#"{"name":"x"}"#))"))
            let first = try await h.call("POST", RCPaths.groupHistory, .json(#"{"userId":"u1","targetId":"g1","startTime":99999999999999,"endTime":0,"pageSize":2,"includeStart":true}"#))
            let rows = try #require(first.json["data"]?.arrayValue)
            #expect(rows.compactMap { $0["messageUID"]?.stringValue } == [uids[2], uids[1]], "newest first; the command is not stored")
            let lastTime = try #require(rows.last?["msgTime"]?.int64Value)
            let next = try await h.call("POST", RCPaths.groupHistory, .json(#"{"userId":"u1","targetId":"g1","startTime":\#(lastTime),"endTime":0,"pageSize":2,"includeStart":false}"#))
            #expect(next.json["data"]?.arrayValue?.compactMap { $0["messageUID"]?.stringValue } == [uids[0]])
            let bad = try await h.call("POST", RCPaths.groupHistory, .json(#"{"userId":"u1","targetId":"g1","startTime":1,"endTime":0,"pageSize":101}"#))
            #expect(bad.json["code"] == 1002)
        }
    }

    @Test func injectedFaultsUseTheVendorEnvelopeThenClear() async throws {
        try await RongCloudSandboxHelper.with { h in
            let fault = try await h.postJSON("/_sandbox/faults", #"{"status":429,"vendor_code":1008,"count":1,"path_prefix":"/message"}"#)
            #expect(fault.status == 200)
            let body = "fromUserId=u1&toUserId=u2&objectName=RC:TxtMsg&content=\(Self.e(#"{"content":"x"}"#))"
            let limited = try await h.call("POST", RCPaths.privatePublish, .formText(body))
            #expect(limited.status == 429 && limited.json["code"] == 1008 && limited.header("Retry-After") == "1")
            #expect(try await h.call("POST", RCPaths.privatePublish, .formText(body)).status == 200)
            _ = try await h.postJSON("/_sandbox/faults", #"{"status":503}"#)
            let down = try await h.call("POST", RCPaths.getToken, .formText("userId=u1&name=A"))
            #expect(down.status == 503 && down.json["code"] == 1000)
        }
    }

    @Test func callbacksAreRetriedUntilAcceptedAndSignedAfresh() async throws {
        try await RongCloudSandboxHelper.with { h in
            h.callbacks!.failNext(2)
            _ = try await h.call("POST", RCPaths.privatePublish, .formText("fromUserId=u1&toUserId=u2&objectName=RC:TxtMsg&content=\(Self.e(#"{"content":"x"}"#))"))
            let callbacks = await h.callbacks!.waitFor(3)
            #expect(callbacks.count == 3)
            #expect(Set(callbacks.map { RongCloudSandboxHelper.fields($0)["msgUID"] }).count == 1, "the same message each time")
            #expect(Set(callbacks.compactMap { $0.queryValue("nonce") }).count == 3, "each attempt is signed afresh")
            #expect(await h.vendor.waitForDeliveries())
        }
    }

    @Test func serverMessagesAreNotRoutedWhenSwitchedOff() async throws {
        try await RongCloudSandboxHelper.with(.init(extra: ["route_server_messages": "false"])) { h in
            let sent = try await h.call("POST", RCPaths.privatePublish, .formText("fromUserId=u1&toUserId=u2&objectName=RC:TxtMsg&content=\(Self.e(#"{"content":"x"}"#))"))
            #expect(sent.status == 200)
            #expect(await h.vendor.waitForDeliveries())
            #expect(h.callbacks!.requests.isEmpty)
        }
    }

    @Test func documentedRateLimitsWhenEnabled() async throws {
        let clock = TestClock()
        let h = try await RongCloudSandboxHelper.start(.init(callbacks: .none, extra: ["rate_limits": "true"], vendorClock: clock))
        func publish(_ groups: [String]) async throws -> SandboxRig.Reply {
            let targets = groups.map { "toGroupId=\($0)" }.joined(separator: "&")
            return try await h.call("POST", RCPaths.groupPublish, .formText("fromUserId=u1&\(targets)&objectName=RC:TxtMsg&content=\(Self.e(#"{"content":"x"}"#))"))
        }
        var statuses: [Int] = []
        for _ in 0..<7 { statuses.append(try await publish(["g1", "g2", "g3"]).status) }
        #expect(statuses == [200, 200, 200, 200, 200, 200, 429], "20 group messages per second; each group counts")
        #expect(try await publish(["g1", "g2"]).status == 200)
        let limited = try await publish(["g1"])
        #expect(limited.status == 429 && limited.json["code"] == 1008 && limited.header("Retry-After") == "1")
        clock.advance(byMs: 1000)
        #expect(try await publish(["g1"]).status == 200)
        await h.stop()
    }
}
