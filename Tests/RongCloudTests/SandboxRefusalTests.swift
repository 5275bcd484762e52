import Foundation
import IMCore
import IMHTTP
import IMSandbox
import Testing
@testable import RongCloud
@testable import RongCloudSandbox
import SandboxTestSupport

/// What the sandbox refuses because RongCloud refuses it (docs/adapters/rongcloud.md, "Publish refusals"),
/// with hand-built requests: ids over 64 bytes.
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
}
