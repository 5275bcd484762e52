import Foundation
import IMCore
import JMessage
import Testing

/// `DELETE /v1/groups/{gid}` through the adapter against the sandbox: the group is gone and a message into
/// it is refused with 899006, as the preset's `dissolvedGroup` says (docs/adapters/jmessage.md).
extension JMessageDirectoryTests {
    @Test func aDissolvedGroupIsGoneAndTakesNoMessage() async throws {
        try await Self.with { _, jm in
            for user in ["alice", "bobby"] { try await jm.saveUser(UserProfile(id: UserID(user))) }
            let gid = try await jm.createGroup(GroupProfile(id: "x", name: "Club", owner: "alice", members: ["alice", "bobby"]))
            _ = try await jm.send(OutgoingMessage(conversation: .group(gid), sender: "bobby", content: .text("before")))
            try await jm.dissolveGroup(gid)
            #expect(try await jm.group(gid) == nil)
            #expect(try await jm.groups(of: "bobby").isEmpty)
            try await jm.dissolveGroup(gid)   // gone already: left alone
            do {
                _ = try await jm.send(OutgoingMessage(conversation: .group(gid), sender: "bobby", content: .text("after")))
                Issue.record("a message into a dissolved group was taken")
            } catch let error as IMError {
                #expect(error.code == .notFound && error.vendorCode == "899006", "\(error)")
            }
        }
    }
}
