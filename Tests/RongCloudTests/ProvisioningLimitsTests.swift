import Foundation
import IMAdapterKit
import IMCore
import IMHTTP
import IMSandbox
import Testing
@testable import RongCloud
import RongCloudSandbox

/// The backend never sends what RongCloud refuses (docs/adapters/rongcloud.md, "Profiles in live relay" and
/// "Publish refusals"): a profile is fitted to the registration limits, and an id over 64 bytes is a clear
/// permanent refusal, against the sandbox over loopback.
@Suite(.serialized) struct RongCloudProvisioningLimitsTests {
    /// 100 characters (300 bytes) and a 2000-byte URL.
    static let longName = String(repeating: "名", count: 100)
    static let longAvatar = "https://example.com/" + String(repeating: "a", count: 1980)

    @Test func aLongNameIsCutTo64CharactersAndALongAvatarLeftOut() async throws {
        #expect(Self.longAvatar.utf8.count == 2000)
        try await RongCloudConformanceTests.withRig { rig in
            let backend = rig.backend
            // getToken (first provisioning of a puppet).
            try await backend.ensureUser(UserProfile(id: "rc_alice", name: Self.longName, avatar: Self.longAvatar))
            let provisioned = try await backend.users(["rc_alice"]).first
            #expect(provisioned?.name == String(repeating: "名", count: 64), "cut by characters, not bytes")
            #expect(provisioned?.avatar == nil)
            // saveUser of an unknown user (getToken) and of a known one (refresh), as profile sync writes them.
            try await backend.saveUser(UserProfile(id: "rc_bob", name: Self.longName, avatar: Self.longAvatar))
            #expect(try await backend.users(["rc_bob"]).first?.name == String(repeating: "名", count: 64))
            try await backend.saveUser(UserProfile(id: "rc_carol", name: "Carol", avatar: "https://example.com/c.png"))
            try await backend.saveUser(UserProfile(id: "rc_carol", name: Self.longName + "!", avatar: Self.longAvatar))
            let carol = try await backend.users(["rc_carol"]).first
            #expect(carol?.name == String(repeating: "名", count: 64))
            #expect(carol?.avatar == "https://example.com/c.png", "a portrait RongCloud would refuse is not sent: the stored one stays")
            // Written again with the same long profile: nothing to change, so no refresh call is made (it would fail).
            rig.sandbox.faults.add(FaultInjector.Rule(status: 500, count: 1, pathPrefix: RCPaths.userRefresh))
            try await backend.saveUser(UserProfile(id: "rc_carol", name: Self.longName, avatar: Self.longAvatar))
        }
    }

    @Test func anIdOver64BytesIsRefusedPermanentlyWithAClearMessage() async throws {
        let long = "wukong_" + String(repeating: "x", count: 58)
        #expect(long.utf8.count == 65)
        try await RongCloudConformanceTests.withRig { rig in
            let backend = rig.backend
            let refused = await #expect(throws: IMError.self) {
                _ = try await backend.send(OutgoingMessage(conversation: .direct("alice", UserID(long)), sender: "alice", content: .text("hi")))
            }
            #expect(refused?.code == .invalidArgument && refused?.isRetryable == false)
            #expect(refused?.message.contains("at most 64 bytes") == true && refused?.message.contains(long) == true, "\(String(describing: refused))")
            #expect(refused?.details["limit"] == "id_length")
            for attempt in [
                { try await backend.ensureUser(UserProfile(id: UserID(long), name: "Long")) },
                { _ = try await backend.send(OutgoingMessage(conversation: .group(GroupID(long)), sender: "alice", content: .text("hi"))) },
                { _ = try await backend.send(OutgoingMessage(conversation: .direct(UserID(long), "bob"), sender: UserID(long), content: .text("hi"))) },
            ] as [@Sendable () async throws -> Void] {
                let error = await #expect(throws: IMError.self) { try await attempt() }
                #expect(error?.code == .invalidArgument && error?.isRetryable == false && error?.details["limit"] == "id_length")
            }
            let stored = await rig.sandbox.vendor.messages(), registered = await rig.sandbox.vendor.users()
            #expect(stored.isEmpty && registered.isEmpty, "refused before any call")
            // Had it been sent, the sandbox refuses it as RongCloud's parameter error, which is permanent too.
            var form = FormBody()
            form.append("fromUserId", "alice")
            form.append("toUserId", long)
            form.append("objectName", RCObjectName.text)
            form.append("content", #"{"content":"hi"}"#)
            let answered = await #expect(throws: IMError.self) { try await backend.client.post(RCPaths.privatePublish, form: form) }
            #expect(answered?.code == .invalidArgument && answered?.vendorCode == "1002" && answered?.isRetryable == false)
            #expect(answered?.message.contains("at most 64 bytes") == true, "\(String(describing: answered))")
        }
    }
}
