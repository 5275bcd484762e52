import Foundation
import IMCore
import IMHTTP
import IMLab
import IMTesting
@_spi(Testing) import IMVendors
import Testing

/// Group messages into a group the vendor does not have, by a sender outside the group, and into a group
/// dissolved (`GroupDissolving`): refused (or taken) alike by `MemoryBackend` under the vendor's preset and by the adapter against its sandbox, with
/// the same error class and vendor code (docs/adapters/<vendor>.md, "Conversations"; docs/testing-kit.md).
extension PresetAgreementTests {
    /// An outcome with the vendor's code: `failed(not_found 803)`.
    static func groupOutcome(_ body: () async throws -> Void) async -> String {
        do {
            try await body()
            return "accepted"
        } catch let error as IMError {
            return "failed(\(error.code.rawValue)\(error.vendorCode.map { " \($0)" } ?? ""))"
        } catch {
            return "failed(\(error))"
        }
    }

    static func groupScript(_ backend: any IMBackend) async -> [(String, String)] {
        let alice: UserID = "alice", bob: UserID = "bobby", carol: UserID = "carol"
        var results: [(String, String)] = []
        func record(_ name: String, _ body: () async throws -> Void) async { results.append((name, await groupOutcome(body))) }
        await record("ensureUser") {
            guard let users = backend as? any UserProvisioning else { throw IMError(.unsupported, "no UserProvisioning") }
            for user in [alice, bob, carol] { try await users.ensureUser(UserProfile(id: user, name: user.rawValue)) }
        }
        var group: GroupID?
        await record("createGroup") {
            guard let directory = backend as? any GroupDirectory else { throw IMError(.unsupported, "no GroupDirectory") }
            group = try await directory.createGroup(GroupProfile(id: "team1", name: "Team", owner: alice, members: [alice, bob]))
        }
        func send(_ sender: UserID, into id: GroupID?) async throws {
            guard let id else { throw IMError(.invalidArgument, "no group was created") }
            _ = try await backend.send(OutgoingMessage(conversation: .group(id), sender: sender, content: .text("hi from \(sender)")))
        }
        await record("send by a member") { try await send(bob, into: group) }
        await record("send by a non-member") { try await send(carol, into: group) }
        await record("send into an unknown group") { try await send(alice, into: "987654321") }
        await record("dissolveGroup") {
            guard let dissolving = backend as? any GroupDissolving, let group else { throw IMError(.unsupported, "no GroupDissolving") }
            try await dissolving.dissolveGroup(group)
        }
        await record("send into a dissolved group") { try await send(alice, into: group) }
        return results
    }

    @Test(arguments: TestVendors.names)
    func groupSendsAgree(_ vendor: String) async throws {
        try await TestVendors.registered { try await groupSendsAgreeOnRegistered(vendor) }
    }

    func groupSendsAgreeOnRegistered(_ vendor: String) async throws {
        let sink = HTTPServer { _ in .json(Data("{}".utf8)) }
        let port = try await sink.start()
        let lab = try await BridgeLab(members: [BridgeLab.Member("x", vendor)], callbackBase: "http://127.0.0.1:\(port)")
        do {
            let adapter = try await lab.userBackend("x", registry: ContentRegistry())
            let capabilities = try #require(Vendors.named(vendor)).adapter.capabilities
            let memory = MemoryBackend(id: "x", capabilities: capabilities)
            let onAdapter = await Self.groupScript(adapter)
            let onMemory = await Self.groupScript(memory)
            #expect(onAdapter.map(\.0) == onMemory.map(\.0))
            #expect(onAdapter.first { $0.0 == "send by a member" }?.1 == "accepted", "the script reaches the vendor: \(onAdapter)")
            for ((call, viaAdapter), (_, inMemory)) in zip(onAdapter, onMemory) {
                #expect(viaAdapter == inMemory, "\(vendor) \(call): adapter \(viaAdapter), MemoryBackend \(inMemory)")
            }
            // What the preset says is what happened.
            let refusals = capabilities.groupSendRefusals
            func expected(_ refusal: GroupSendRefusals.Refusal?) -> String {
                refusal.map { "failed(\($0.code.rawValue)\($0.vendorCode.map { " \($0)" } ?? ""))" } ?? "accepted"
            }
            #expect(onAdapter.first { $0.0 == "send into an unknown group" }?.1 == expected(refusals.unknownGroup), "\(vendor): \(onAdapter)")
            #expect(onAdapter.first { $0.0 == "send by a non-member" }?.1 == expected(refusals.nonMember), "\(vendor): \(onAdapter)")
            #expect(onAdapter.first { $0.0 == "dissolveGroup" }?.1 == "accepted", "\(vendor): \(onAdapter)")
            #expect(onAdapter.first { $0.0 == "send into a dissolved group" }?.1 == expected(refusals.dissolvedGroup), "\(vendor): \(onAdapter)")
        }
        await lab.stop()
        await sink.stop()
    }
}
