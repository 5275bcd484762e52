import Foundation
import IMCore
import IMHTTP
import IMSandbox
import Testing
@testable import RongCloud
@testable import RongCloudSandbox
import SandboxTestSupport

/// What the sandbox refuses because RongCloud refuses it (docs/adapters/rongcloud.md, "Publish refusals"),
/// with hand-built requests: ids over 64 bytes, a long name or portrait at registration, a directed group
/// message beyond one group or with the options it does not support, and a custom `RC:` type.
@Suite(.serialized) struct RongCloudSandboxRefusalTests {
    static func e(_ text: String) -> String { FormBody.escape(text) }
    static let text = e(#"{"content":"x"}"#)

    /// 65 bytes that are 22 characters: the limit counts bytes.
    static let longID = String(repeating: "用", count: 21) + "uu"
    static let id64 = String(repeating: "a", count: 64)

    @Test func idsOver64BytesAreRefusedOnEveryPublishEndpoint() async throws {
        #expect(Self.longID.utf8.count == 65 && Self.longID.count == 23)
        try await RongCloudSandboxHelper.with { h in
            func publish(_ path: String, _ fields: String) async throws -> JSONValue {
                try await h.call("POST", path, .formText("\(fields)&objectName=RC:TxtMsg&content=\(Self.text)")).json
            }
            let long = Self.e(Self.longID)
            for (path, fields) in [(RCPaths.privatePublish, "fromUserId=\(long)&toUserId=u2"),
                                   (RCPaths.privatePublish, "fromUserId=u1&toUserId=u2&toUserId=\(long)"),
                                   (RCPaths.privatePublish, "fromUserId=u1&toUserId=u2,\(long)"),
                                   (RCPaths.groupPublish, "fromUserId=u1&toGroupId=g1&toGroupId=\(long)"),
                                   (RCPaths.groupPublish, "fromUserId=\(long)&toGroupId=g1"),
                                   (RCPaths.groupPublish, "fromUserId=u1&toGroupId=g1&toUserId=\(long)"),
                                   (RCSandboxPaths.systemPublish, "fromUserId=u1&toUserId=\(long)")] {
                let answer = try await publish(path, fields)
                #expect(answer["code"] == 1002, "\(path) \(fields): \(answer)")
                #expect(answer["errorMessage"]?.stringValue?.contains("at most 64 bytes") == true, "\(answer)")
            }
            #expect(try await h.rig.messages().isEmpty, "nothing refused was stored")
            // 64 bytes pass everywhere.
            #expect(try await publish(RCPaths.privatePublish, "fromUserId=\(Self.id64)&toUserId=\(Self.id64)")["code"] == 200)
            #expect(try await publish(RCPaths.groupPublish, "fromUserId=\(Self.id64)&toGroupId=\(Self.id64)")["code"] == 200)
            #expect(try await publish(RCSandboxPaths.systemPublish, "fromUserId=\(Self.id64)&toUserId=\(Self.id64)")["code"] == 200)
        }
    }

    @Test func getTokenRefusesALongNameOrPortraitAsRefreshDoes() async throws {
        try await RongCloudSandboxHelper.with { h in
            let name65 = Self.e(String(repeating: "名", count: 65))
            let portrait1025 = Self.e("https://x/" + String(repeating: "p", count: 1015))
            let longName = try await h.call("POST", RCPaths.getToken, .formText("userId=u1&name=\(name65)"))
            #expect(longName.status == 400 && longName.json["code"] == 1002)
            let longPortrait = try await h.call("POST", RCPaths.getToken, .formText("userId=u1&name=A&portraitUri=\(portrait1025)"))
            #expect(longPortrait.status == 400 && longPortrait.json["code"] == 1002)
            #expect(try await h.rig.get("/_sandbox/users").json["users"]?.arrayValue?.isEmpty == true, "neither registered")
            // 64 characters (192 bytes) and 1024 bytes are taken; refresh answers the same refusals the same way.
            let name64 = String(repeating: "名", count: 64), portrait1024 = "https://x/" + String(repeating: "p", count: 1014)
            let ok = try await h.call("POST", RCPaths.getToken, .formText("userId=u1&name=\(Self.e(name64))&portraitUri=\(Self.e(portrait1024))"))
            #expect(ok.json["code"] == 200)
            #expect(try await h.rig.get("/_sandbox/users").json["users"] == [["userId": "u1", "name": .string(name64), "portraitUri": .string(portrait1024)]])
            let refreshName = try await h.call("POST", RCPaths.userRefresh, .formText("userId=u1&name=\(name65)"))
            let refreshPortrait = try await h.call("POST", RCPaths.userRefresh, .formText("userId=u1&portraitUri=\(portrait1025)"))
            #expect(refreshName.json == longName.json && refreshName.status == longName.status)
            #expect(refreshPortrait.json == longPortrait.json && refreshPortrait.status == longPortrait.status)
        }
    }

    @Test func aDirectedGroupMessageTakesOneGroupAndNoneOfTheOptionsItDoesNotSupport() async throws {
        try await RongCloudSandboxHelper.with { h in
            func publish(_ fields: String) async throws -> JSONValue {
                try await h.call("POST", RCPaths.groupPublish, .formText("fromUserId=u1&\(fields)&objectName=RC:TxtMsg&content=\(Self.text)")).json
            }
            #expect(try await publish("toGroupId=g1&toGroupId=g2&toUserId=u2")["code"] == 1002, "two groups")
            #expect(try await publish("toGroupId=g1,g2&toUserId=u2")["code"] == 1002, "two groups, comma-joined")
            for option in ["expansion=true", "expansion=true&extraContent=\(Self.e(#"{"k":"v"}"#))", "extraContent=\(Self.e(#"{"k":"v"}"#))",
                           "disablePush=true", "pushExt=\(Self.e(#"{"title":"t"}"#))"] {
                let answer = try await publish("toGroupId=g1&toUserId=u2&\(option)")
                #expect(answer["code"] == 1002 && answer["errorMessage"]?.stringValue?.contains("directed") == true, "\(option): \(answer)")
            }
            #expect(try await h.rig.messages().isEmpty)
            // One group, default values of the options: taken, and kept out of history as the vendor does.
            let directed = try await publish("toGroupId=g1&toUserId=u2&toUserId=u3&disablePush=false&expansion=false")
            #expect(directed["code"] == 200 && directed["messageUIDs"]?.arrayValue?.first?["groupId"] == "g1")
            // The same options without toUserId are an ordinary group message.
            #expect(try await publish("toGroupId=g1&toGroupId=g2&expansion=true&disablePush=true&pushExt=\(Self.e("{}"))")["code"] == 200)
            #expect(h.vendor.store.messages.map(\.persisted) == [false, true, true])
        }
    }

    @Test func aCustomObjectNameMustNotStartWithRC() async throws {
        try await RongCloudSandboxHelper.with { h in
            func publish(_ objectName: String, _ content: String = Self.text) async throws -> JSONValue {
                try await h.call("POST", RCPaths.privatePublish,
                                 .formText("fromUserId=u1&toUserId=u2&objectName=\(Self.e(objectName))&content=\(content)")).json
            }
            for name in ["RC:Fake", "RC:OrderMsg", "RC:txtmsg"] {
                let answer = try await publish(name)
                #expect(answer["code"] == 1002 && answer["errorMessage"]?.stringValue?.contains("must not start with RC:") == true, "\(name): \(answer)")
            }
            // RongCloud's own types (the content ones, notifications, signalling, the RC:VC… call family,
            // IMKit's card) and custom names outside RC: are taken.
            for name in ["RC:TxtMsg", "RC:CombineMsg", "RC:GrpNtf", "RC:CmdMsg", "RC:VCInvite", "RC:CardMsg", "App:OrderMsg", "rc:Lower"] {
                #expect(try await publish(name)["code"] == 200, "\(name)")
            }
        }
    }
}
