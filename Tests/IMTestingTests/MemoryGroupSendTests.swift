import IMCore
import IMTesting
import Testing

/// `MemoryBackend` refuses group messages as the preset's vendor does (`Capabilities.groupSendRefusals`,
/// docs/testing-kit.md "Group sends"): the class and the vendor code of the adapter's error.
@Suite struct MemoryGroupSendTests {
    static func outcome(_ backend: MemoryBackend, _ sender: UserID, into group: GroupID) async -> String {
        do {
            _ = try await backend.send(OutgoingMessage(conversation: .group(group), sender: sender, content: .text("hi")))
            return "accepted"
        } catch let error as IMError {
            return "\(error.code.rawValue) \(error.vendorCode ?? "-")"
        } catch {
            return "\(error)"
        }
    }

    @Test func nimRefusesUnknownTeamsAndNonMembers() async throws {
        let backend = MemoryBackend(id: "yx", capabilities: .nim)
        #expect(await Self.outcome(backend, "ann", into: "42") == "not_found 803")
        backend.world.seedGroup(GroupProfile(id: "42", owner: "ann", members: ["bob"]))
        #expect(await Self.outcome(backend, "ann", into: "42") == "accepted", "the owner")
        #expect(await Self.outcome(backend, "bob", into: "42") == "accepted", "a member")
        #expect(await Self.outcome(backend, "zed", into: "42") == "permission_denied 804")
        backend.world.addMembers(["zed"], to: "42")
        #expect(await Self.outcome(backend, "zed", into: "42") == "accepted", "once added")
        let created = try await backend.createGroup(GroupProfile(id: "ignored", owner: "ann"))
        #expect(await Self.outcome(backend, "ann", into: created) == "accepted", "a group created through the directory exists")
    }

    @Test func jMessageRefusesUnknownGroupsOnly() async throws {
        let backend = MemoryBackend(id: "jm", capabilities: .jMessage)
        #expect(await Self.outcome(backend, "alice", into: "7") == "not_found 899006")
        backend.world.seedGroup(GroupProfile(id: "7", owner: "alice"))
        #expect(await Self.outcome(backend, "carol", into: "7") == "accepted", "the adapter sends as its admin, a member")
    }

    @Test(arguments: [Capabilities.wukong, .rongCloud])
    func wuKongAndRongCloudTakeBoth(_ preset: Capabilities) async {
        let backend = MemoryBackend(id: "x", capabilities: preset)
        #expect(await Self.outcome(backend, "zed", into: "nowhere") == "accepted")
    }
}
