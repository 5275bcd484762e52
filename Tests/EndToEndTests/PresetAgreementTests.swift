import Foundation
import IMCore
import IMHTTP
import IMLab
import IMTesting
import IMVendors
import Testing

/// The README promises that `MemoryBackend` under a vendor's preset refuses what that vendor refuses.
/// Here the same calls run on the memory backend and on the vendor's adapter against its sandbox, and
/// each call's outcome class (accepted, refused as unsupported, or another error code) must agree.
@Suite(.serialized) struct PresetAgreementTests {
    enum Outcome: Equatable, CustomStringConvertible {
        case accepted
        case refused            // IMError.unsupported, or the backend does not offer the protocol at all
        case failed(String)     // any other IMError code

        var description: String {
            switch self {
            case .accepted: "accepted"
            case .refused: "refused"
            case .failed(let code): "failed(\(code))"
            }
        }
    }

    static func outcome(_ body: () async throws -> Void) async -> Outcome {
        do {
            try await body()
            return .accepted
        } catch let error as IMError where error.code == .unsupported {
            return .refused
        } catch let error as IMError {
            return .failed(error.code.rawValue)
        } catch {
            return .failed("\(error)")
        }
    }

    /// One script of calls, in order; each names its outcome. The user names are valid everywhere
    /// (JMessage usernames have at least 4 characters).
    static func script(_ backend: any IMBackend) async -> [(String, Outcome)] {
        let alice: UserID = "alice", bob: UserID = "bobby"
        let chat = ConversationRef.direct(alice, bob)
        var results: [(String, Outcome)] = []
        func record(_ name: String, _ body: () async throws -> Void) async {
            results.append((name, await outcome(body)))
        }
        if let users = backend as? any UserProvisioning {
            await record("ensureUser") {
                try await users.ensureUser(UserProfile(id: alice, name: "Alice"))
                try await users.ensureUser(UserProfile(id: bob, name: "Bob"))
            }
        } else {
            results.append(("ensureUser", .refused))
        }
        var plain: Message?
        await record("send text") { plain = try await backend.send(OutgoingMessage(conversation: chat, sender: alice, content: .text("hello"))) }
        var extended: Message?
        await record("send with expansion") {
            extended = try await backend.send(OutgoingMessage(conversation: chat, sender: alice, content: .text("order"), expansion: ["status": "new"]))
        }
        await record("send with mention") {
            _ = try await backend.send(OutgoingMessage(conversation: chat, sender: alice, content: .text("@bob hi"), mentions: Mentions(users: [bob])))
        }
        let target = plain ?? extended
        func onTarget(_ name: String, _ body: (Message) async throws -> Void) async {
            guard let target else { results.append((name, .failed("no message"))); return }
            await record(name) { try await body(target) }
        }
        await onTarget("edit") { message in
            guard let editing = backend as? any Editing else { throw IMError(.unsupported, "no Editing") }
            try await editing.edit(message.id, in: chat, by: alice, content: .text("hello!"))
        }
        await onTarget("toggleReaction") { message in
            guard let reacting = backend as? any Reacting else { throw IMError(.unsupported, "no Reacting") }
            _ = try await reacting.toggleReaction("👍", on: message.id, in: chat, by: bob)
        }
        await onTarget("markRead") { message in
            guard let reading = backend as? any ReadReceipting else { throw IMError(.unsupported, "no ReadReceipting") }
            try await reading.markRead(chat, by: bob, upTo: message.id)
        }
        await onTarget("updateExpansion (sent with one)") { message in
            guard let expanding = backend as? any ExpansionUpdating else { throw IMError(.unsupported, "no ExpansionUpdating") }
            // Where the send with an expansion was refused, the plain message stands in: the refusal is the same.
            _ = try await expanding.updateExpansion(of: (extended ?? message).id, in: chat, by: bob, .set(["status": "paid"]))
        }
        await onTarget("updateExpansion (sent without)") { message in
            guard let expanding = backend as? any ExpansionUpdating else { throw IMError(.unsupported, "no ExpansionUpdating") }
            _ = try await expanding.updateExpansion(of: message.id, in: chat, by: bob, .set(["status": "paid"]))
        }
        let listing = backend as? any ConversationListing
        await record("conversations") {
            guard let listing else { throw IMError(.unsupported, "no ConversationListing") }
            _ = try await listing.conversations(for: bob)
        }
        await record("unreadCount") {
            guard let listing else { throw IMError(.unsupported, "no ConversationListing") }
            _ = try await listing.unreadCount(in: chat, for: bob)
        }
        await record("totalUnread") {
            guard let listing else { throw IMError(.unsupported, "no ConversationListing") }
            _ = try await listing.totalUnread(for: bob)
        }
        await record("setMuted") {
            guard let listing else { throw IMError(.unsupported, "no ConversationListing") }
            try await listing.setMuted(true, conversation: chat, for: bob)
        }
        let state = backend as? any ConversationStateSetting
        await record("clearUnread") {
            guard let state else { throw IMError(.unsupported, "no ConversationStateSetting") }
            try await state.clearUnread(in: chat, for: bob)
        }
        await record("setPinned") {
            guard let state else { throw IMError(.unsupported, "no ConversationStateSetting") }
            try await state.setPinned(true, conversation: chat, for: bob)
        }
        await record("reminders") {
            guard let state else { throw IMError(.unsupported, "no ConversationStateSetting") }
            _ = try await state.reminders(in: chat, for: bob)
        }
        await onTarget("recall by sender") { message in
            guard let recalling = backend as? any Recalling else { throw IMError(.unsupported, "no Recalling") }
            try await recalling.recall(message.id, in: chat, by: alice)
        }
        return results
    }

    /// WuKong's clear-unread, on the memory backend and through the adapter to the sandbox's
    /// `/conversations/clearUnread`: the unread count drops to zero on both.
    @Test func wukongClearUnreadClearsOnBoth() async throws {
        let sink = HTTPServer { _ in .json(Data("{}".utf8)) }
        let port = try await sink.start()
        let lab = try await BridgeLab(members: [BridgeLab.Member("wk", "wukong")], callbackBase: "http://127.0.0.1:\(port)")
        let adapter = try await lab.userBackend("wk", registry: ContentRegistry())
        for backend in [adapter, MemoryBackend(id: "wk", capabilities: .wukong)] as [any IMBackend] {
            let chat = ConversationRef.direct("alice", "bobby")
            for text in ["1", "2"] { _ = try await backend.send(OutgoingMessage(conversation: chat, sender: "alice", content: .text(text))) }
            let state = try #require(backend as? any ConversationStateSetting)
            #expect(try await state.unreadCount(in: chat, for: "bobby") == 2, "\(type(of: backend))")
            try await state.clearUnread(in: chat, for: "bobby")
            #expect(try await state.unreadCount(in: chat, for: "bobby") == 0, "\(type(of: backend))")
        }
        await lab.stop()
        await sink.stop()
    }

    static let presets: [String: Capabilities] = ["wukong": .wukong, "rongcloud": .rongCloud, "nim": .nim, "jmessage": .jMessage]

    @Test(arguments: Vendors.names)
    func memoryBackendRefusesWhatTheAdapterRefuses(_ vendor: String) async throws {
        let sink = HTTPServer { _ in .json(Data("{}".utf8)) }
        let port = try await sink.start()
        let lab = try await BridgeLab(members: [BridgeLab.Member("x", vendor)], callbackBase: "http://127.0.0.1:\(port)")
        do {
            let adapter = try await lab.userBackend("x", registry: ContentRegistry())
            let memory = MemoryBackend(id: "x", capabilities: try #require(Self.presets[vendor]))
            let onAdapter = await Self.script(adapter)
            let onMemory = await Self.script(memory)
            #expect(onAdapter.map(\.0) == onMemory.map(\.0))
            #expect(onAdapter.first { $0.0 == "send text" }?.1 == .accepted, "the script reaches the vendor: \(onAdapter)")
            for ((call, viaAdapter), (_, inMemory)) in zip(onAdapter, onMemory) {
                #expect(viaAdapter == inMemory, "\(vendor) \(call): adapter \(viaAdapter), MemoryBackend \(inMemory)")
            }
        }
        await lab.stop()
        await sink.stop()
    }
}
