import Foundation
import IMAdapterKit
import IMCore
import Testing
import WuKong

/// The business server's extras as a change feed (docs/adapters/wukong.md, "Changes while the bridge is
/// down"): with stored positions a fresh backend (a restarted bridge) reads on from them, never from 0
/// again; without, positions stay in memory and no batch carries any.
@Suite struct WuKongChangeFeedTests {
    static func edits(_ batch: InboundBatch) -> [MessageContent] {
        batch.events.compactMap { if case .edited(_, _, _, let content, _) = $0.kind { content } else { nil } }
    }

    @Test func aRestartedBackendReadsOnFromTheStoredPosition() async throws {
        let rig = try await WuKongRig.start()
        defer { Task { await rig.stop() } }
        func backend() -> WuKongBackend {
            WuKongBackend(id: "wk", settings: .at(rig.sandbox.baseURL, managerToken: "mgr", webhookSecret: "hook-secret"))
        }
        let dm = ConversationRef.direct("f1", "f2")
        let sent = try await rig.backend.send(OutgoingMessage(conversation: dm, sender: "f1", content: .text("hello")))
        try await rig.backend.edit(sent.id, in: dm, by: "f1", content: .text("v1"))

        let storage = InMemoryCheckpointStorage()
        let first = backend()
        await first.useStoredPositions(storage)
        let read = try await first.readChanges(of: dm)
        #expect(Self.edits(read) == [.text("v1")])
        let extras = try #require(read.positions.first { $0.feed == "extras" })
        #expect(extras.from == nil && extras.to > 0, "nothing was stored: read from the start, up to the newest version")
        try await storage.setCheckpoint(named: extras.checkpointName, to: String(extras.to))   // as the sink stores it

        let restarted = backend()
        await restarted.useStoredPositions(storage)
        let again = try await restarted.readChanges(of: dm)
        #expect(again.events.isEmpty && again.positions.isEmpty, "what was recorded is not read again: \(again.events.map(\.eventID))")
        try await rig.backend.edit(sent.id, in: dm, by: "f1", content: .text("v2"))
        let next = try await restarted.readChanges(of: dm)
        #expect(Self.edits(next) == [.text("v2")])
        #expect(next.positions.first { $0.feed == "extras" }?.from == extras.to)

        let inMemory = backend()
        let plain = try await inMemory.readChanges(of: dm)
        #expect(Self.edits(plain) == [.text("v2")] && plain.positions.isEmpty, "without stored positions nothing is positioned")
    }
}
