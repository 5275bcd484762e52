import Foundation
import IMCore
import IMHTTP
import IMLab
import IMTesting
@_spi(Testing) import IMVendors
import Testing

/// Replies, chatroom and system conversations, deletion, and the user and group directory: the same
/// calls on `MemoryBackend(preset)` and on the adapter against its sandbox, compared call by call (each
/// outcome with its error class and vendor code, or what was read back). docs/testing-kit.md.
extension PresetAgreementTests {
    static func moreScript(_ backend: any IMBackend) async -> [(String, String)] {
        let alice: UserID = "alice", bob: UserID = "bobby"
        let chat = ConversationRef.direct(alice, bob)
        var results: [(String, String)] = []
        func record(_ name: String, _ body: () async throws -> String) async {
            do { results.append((name, try await body())) } catch let error as IMError {
                results.append((name, "failed(\(error.code.rawValue)\(error.vendorCode.map { " \($0)" } ?? ""))"))
            } catch { results.append((name, "failed(\(error))")) }
        }
        func send(_ text: String, into conversation: ConversationRef = chat, reply: ReplyRef? = nil) async throws -> Message {
            try await backend.send(OutgoingMessage(conversation: conversation, sender: alice, content: .text(text), reply: reply))
        }
        func texts() async throws -> String {
            try await backend.history(HistoryQuery(conversation: chat, anchor: .latest, limit: 20)).messages
                .map { $0.currentContent.digest }.joined(separator: ",")
        }
        await record("ensureUser") {
            guard let users = backend as? any UserProvisioning else { throw IMError(.unsupported, "no UserProvisioning") }
            try await users.ensureUser(UserProfile(id: alice, name: "Alice"))
            try await users.ensureUser(UserProfile(id: bob, name: "Bob"))
            return "ok"
        }
        var base: Message?
        await record("send text") { base = try await send("base"); return "ok" }
        await record("send a reply") {
            guard let base else { return "no message" }
            _ = try await send("re", reply: ReplyRef(messageID: base.id, sender: alice, digest: "base"))
            let back = try await backend.history(HistoryQuery(conversation: chat, anchor: .latest, limit: 5)).messages.last
            return back?.reply?.messageID == base.id ? "reply kept" : "reply lost: \(String(describing: back?.reply))"
        }
        await record("send into a chatroom") { _ = try await send("room", into: .chatroom("room1")); return "ok" }
        await record("send into a system conversation") { _ = try await send("notice", into: .system("alice")); return "ok" }
        let deleting = backend as? any Deleting
        await record("delete for everyone by another user") {
            guard let deleting else { throw IMError(.unsupported, "no Deleting") }
            guard let base else { return "no message" }
            try await deleting.delete(base.id, in: chat, by: bob, forUser: nil)
            return try await texts()
        }
        await record("delete for everyone by the sender") {
            guard let deleting else { throw IMError(.unsupported, "no Deleting") }
            guard let base else { return "no message" }
            try await deleting.delete(base.id, in: chat, by: alice, forUser: nil)
            return try await texts()
        }
        await record("delete for one user") {
            guard let deleting else { throw IMError(.unsupported, "no Deleting") }
            let mine = try await send("mine")
            try await deleting.delete(mine.id, in: chat, by: bob, forUser: bob)
            return "ok"
        }
        let users = backend as? any UserDirectory
        await record("saveUser, read back") {
            guard let users else { throw IMError(.unsupported, "no UserDirectory") }
            try await users.saveUser(UserProfile(id: alice, name: "Alice Liddell"))
            return try await users.users([alice, "nobody-here"]).map { "\($0.id):\($0.name ?? "-")" }.joined(separator: ",")
        }
        await record("allUsers") {
            guard let users else { throw IMError(.unsupported, "no UserDirectory") }
            let all = try await users.allUsers()
            return [alice, bob].allSatisfy(all.contains) ? "both listed" : "listed \(all)"
        }
        let groups = backend as? any GroupDirectory
        var group: GroupID?
        await record("createGroup, read back") {
            guard let groups else { throw IMError(.unsupported, "no GroupDirectory") }
            let id = try await groups.createGroup(GroupProfile(id: "team7", name: "Team", owner: alice, members: [alice, bob]))
            group = id
            guard let read = try await groups.group(id) else { return "not found" }
            return "\(read.name ?? "-") owner=\(read.owner?.rawValue ?? "-") members=\(read.members.sorted { $0 < $1 }.map(\.rawValue))"
        }
        await record("updateGroup name") {
            guard let groups, let group else { throw IMError(.unsupported, "no group") }
            try await groups.updateGroup(GroupProfile(id: group, name: "Team 2", owner: alice, members: [alice, bob]))
            return try await groups.group(group)?.name ?? "-"
        }
        await record("removeMembers") {
            guard let removing = backend as? any GroupMemberRemoving, let group else { throw IMError(.unsupported, "no GroupMemberRemoving") }
            try await removing.removeMembers([bob], from: group)
            return try await removing.group(group).map { $0.members.sorted { $0 < $1 }.map(\.rawValue).joined(separator: ",") } ?? "-"
        }
        await record("groups(of:)") {
            guard let groups, let group else { throw IMError(.unsupported, "no group") }
            let mine = try await groups.groups(of: alice), theirs = try await groups.groups(of: bob)
            return "alice \(mine.contains(group)), bobby \(theirs.contains(group))"
        }
        await record("an unknown group") {
            guard let groups else { throw IMError(.unsupported, "no GroupDirectory") }
            return try await groups.group("987654321") == nil ? "nil" : "found"
        }
        return results
    }

    @Test(arguments: TestVendors.names)
    func repliesConversationsDeletionAndDirectoryAgree(_ vendor: String) async throws {
        try await TestVendors.registered { try await moreAgreesOnRegistered(vendor) }
    }

    func moreAgreesOnRegistered(_ vendor: String) async throws {
        let sink = HTTPServer { _ in .json(Data("{}".utf8)) }
        let port = try await sink.start()
        let lab = try await BridgeLab(members: [BridgeLab.Member("x", vendor)], callbackBase: "http://127.0.0.1:\(port)")
        do {
            let adapter = try await lab.userBackend("x", registry: ContentRegistry())
            let capabilities = try #require(Vendors.named(vendor)).adapter.capabilities
            let onAdapter = await Self.moreScript(adapter)
            let onMemory = await Self.moreScript(MemoryBackend(id: "x", capabilities: capabilities))
            #expect(onAdapter.map(\.0) == onMemory.map(\.0))
            #expect(onAdapter.first { $0.0 == "send text" }?.1 == "ok", "the script reaches the vendor: \(onAdapter)")
            // The directory calls the adapter does not serve (`Capabilities.directory`): the adapter refuses
            // them as the preset says, and so does `MemoryBackend`, so those rows compare like the others.
            let directory = capabilities.directory
            var unserved: Set<String> = []
            if !directory.listsAllUsers { unserved.insert("allUsers") }
            if !directory.removesMembers { unserved.insert("removeMembers") }
            if !directory.listsGroupsOfUser { unserved.insert("groups(of:)") }
            for (call, viaAdapter) in onAdapter where unserved.contains(call) {
                #expect(viaAdapter == "failed(unsupported)", "\(vendor) \(call): the preset says the adapter refuses it; it answered «\(viaAdapter)»")
            }
            for ((call, viaAdapter), (_, inMemory)) in zip(onAdapter, onMemory) {
                // A group read back without an owner where the vendor keeps none (RongCloud).
                let expected = directory.keepsGroupOwner ? inMemory : inMemory.replacingOccurrences(of: "owner=alice", with: "owner=-")
                #expect(viaAdapter == expected, "\(vendor) \(call): adapter «\(viaAdapter)», MemoryBackend «\(inMemory)»")
            }
            // What the preset says is what happened.
            let chatroom = onAdapter.first { $0.0 == "send into a chatroom" }?.1
            #expect((chatroom == "ok") == capabilities.sendConversationKinds.allows(.chatroom), "\(vendor): \(String(describing: chatroom))")
            let system = onAdapter.first { $0.0 == "send into a system conversation" }?.1
            #expect((system == "ok") == capabilities.sendConversationKinds.allows(.system), "\(vendor): \(String(describing: system))")
        }
        await lab.stop()
        await sink.stop()
    }
}
