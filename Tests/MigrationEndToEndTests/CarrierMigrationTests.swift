import Foundation
import IMCore
import IMMigration
import IMOutbox
import IMRelay
import Testing

/// NIM keeps no expansions: a NIM app's change to one travels as an `imbridge.expansion` carrier message
/// in the conversation (docs/expansions.md, "NIM: the expansion carrier"). A migration from NIM applies
/// each carrier of the history to the copy of the message it names, as the relay does, and copies no
/// carrier as a message of its own.
@Suite struct CarrierMigrationTests {
    @Test func aNIMCarrierInHistoryBecomesTheCopysExpansion() async throws {
        let lab = try await MigrationLab()
        defer { Task { await lab.stop() } }
        let (shop, buyer): (UserID, UserID) = ("nimshop", "nimbuyer")
        try await lab.provision([shop, buyer])
        let conversation = ConversationRef.direct(shop, buyer)
        let nim = try await lab.backend("nim", store: try lab.newStore())
        let order = try await nim.send(OutgoingMessage(conversation: conversation, sender: shop, content: .text("order #7")))
        let carrying = try #require(nim as? any ExpansionChangeSending)
        _ = try await carrying.sendExpansionChange(ExpansionDelta(version: 1, set: ["status": "paid"]), of: order.id, in: conversation, by: buyer)
        _ = try await carrying.sendExpansionChange(ExpansionDelta(version: 2, set: ["status": "shipped", "by": "courier"]),
                                                   of: order.id, in: conversation, by: shop)
        _ = try await nim.send(OutgoingMessage(conversation: conversation, sender: buyer, content: .text("thanks")))

        let store = try lab.newStore()
        let plan = MigrationPlan(source: "nim", target: "rc", conversations: [(conversation, conversation)], users: .puppet(prefix: ""), pageSize: 2)
        let report = try await Migrator(store: store, source: try await lab.backend("nim", store: store), target: try await lab.backend("rc", store: store),
                                        retry: RetryPolicy(baseMs: 20, maxMs: 500)).run(plan)
        #expect(report.total.failedTotal == 0, "\(report.conversations.first?.failures ?? [])")
        #expect(report.total.copied == 2 && report.total.converted == 2, "two copies, two changes applied: \(report.summary)")
        let copies = try await lab.records("rc", between: (shop, buyer))
        #expect(copies.map(\.text) == ["order #7", "thanks"], "no carrier copied as a message: \(copies.map(\.text))")
        #expect(copies.first?.expansion == ["status": "shipped", "by": "courier"], "the carriers' values on the copy: \(copies.first?.expansion ?? [:])")

        let again = try await Migrator(store: store, source: try await lab.backend("nim", store: store), target: try await lab.backend("rc", store: store)).run(plan)
        #expect(again.total.sentTotal == 0 && again.total.failedTotal == 0, "\(again.summary)")
        #expect(try await lab.records("rc", between: (shop, buyer)).count == 2)
        await lab.stop()
    }
}
