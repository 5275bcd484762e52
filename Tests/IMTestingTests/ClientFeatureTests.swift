import IMCore
import IMTesting
import Testing

/// docs/testing-kit.md, "Client-side features per preset": each preset simulates or refuses the client
/// SDKs' conversation features as the table says; capabilities made without a preset simulate them all.
@Suite struct ClientFeatureTests {
    let chat = ConversationRef.direct("alice", "bobby")

    func outcome(_ body: () async throws -> Void) async -> String {
        do { try await body(); return "ok" } catch let error as IMError { return error.code.rawValue } catch { return "\(error)" }
    }

    func row(_ backend: MemoryBackend) async throws -> [String] {
        _ = try await backend.send(OutgoingMessage(conversation: chat, sender: "alice", content: .text("hi @bobby"),
                                                   mentions: backend.capabilities.support(.mentions).isNative ? Mentions(users: ["bobby"]) : Mentions()))
        return [
            await outcome { _ = try await backend.conversations(for: "bobby") },
            await outcome { _ = try await backend.totalUnread(for: "bobby") },
            await outcome { try await backend.setMuted(true, conversation: chat, for: "bobby") },
            await outcome { try await backend.clearUnread(in: chat, for: "bobby") },
            await outcome { try await backend.setPinned(true, conversation: chat, for: "bobby") },
            await outcome { _ = try await backend.reminders(in: chat, for: "bobby") },
        ]
    }

    @Test func eachPresetFollowsTheTable() async throws {
        let unsupported = "unsupported"
        let expected: [String: [String]] = [
            "wukong": ["ok", "ok", unsupported, "ok", unsupported, unsupported],
            "rongcloud": Array(repeating: unsupported, count: 6),
            "nim": Array(repeating: unsupported, count: 6),
            "jmessage": Array(repeating: unsupported, count: 6),
        ]
        for preset in Capabilities.allPresets {
            #expect(try await row(MemoryBackend(capabilities: preset)) == expected[preset.vendor], "\(preset.vendor)")
        }
    }

    @Test func withoutAPresetEverythingIsSimulatedAndMutedConversationsLeaveTheTotal() async throws {
        let capabilities = Capabilities(vendor: "app", features: [.conversationList: .full, .mentions: .full, .history: .full],
                                        textMaxLength: 1000, recallWindowMs: nil, expansionLimits: nil)
        var all = capabilities
        all.conversationState = [.clearUnread, .pinning, .reminders]
        let backend = MemoryBackend(capabilities: all)
        _ = try await backend.send(OutgoingMessage(conversation: .group("g"), sender: "alice", content: .text("g")))
        backend.world.addMembers(["alice", "bobby"], to: "g")
        #expect(try await row(backend) == ["ok", "ok", "ok", "ok", "ok", "ok"])
        #expect(try await backend.totalUnread(for: "bobby") == 1, "the muted direct chat is left out, the group counts")
        #expect(try await backend.reminders(in: chat, for: "bobby").count == 1, "the mention is a reminder")
    }
}
