import Foundation
import IMAdapterKit
import IMCore
import IMMigration
import IMOutbox
@_spi(Testing) import IMRelay
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

    /// The bridge relayed a NIM message and a carrier setting `pri`; while it was down a NIM app removed
    /// `pri` with another carrier, and a migration read that carrier from history before the bridge came
    /// back. The migration takes the change in as the intake would (converged with the state the bridge
    /// keeps), so the RongCloud copy loses `pri`; the carrier's callback, arriving after, is a duplicate and
    /// changes nothing. Before, the migration planned the removal against a state that had never heard of
    /// it, which still said `pri`, and wrote nothing: the key stayed on the copy for good.
    @Test func aCarrierReadByAMigrationWhileTheBridgeWasDownReachesTheCopy() async throws {
        let lab = try await MigrationLab()
        defer { Task { await lab.stop() } }
        let (shop, buyer): (UserID, UserID) = ("nimshop3", "nimbuyer3")
        try await lab.provision([shop, buyer])
        let conversation = ConversationRef.direct(shop, buyer)
        let store = try lab.newStore()
        let nim = try await lab.backend("nim", store: store)
        let routes = [Route(from: try RouteEndpoint(parsing: "nim:direct:*"), to: try RouteEndpoint(parsing: "rc:direct:*"), direction: .forward,
                            usersOnTarget: .puppet(prefix: ""))]
        let engine = RelayEngine(store: store, backends: [nim, try await lab.backend("rc", store: store)], routes: routes,
                                 retry: RetryPolicy(baseMs: 20, maxMs: 500))
        await engine.start()
        let order = try await nim.send(OutgoingMessage(conversation: conversation, sender: shop, content: .text("order #9")))
        let carrying = try #require(nim as? any ExpansionChangeSending)
        _ = try await carrying.sendExpansionChange(ExpansionDelta(version: 1, set: ["pri": "high"]), of: order.id, in: conversation, by: buyer)
        // The bridge takes both in as their callbacks would give them (the events catch-up reads).
        let source = try #require(nim as? any CatchUpSource)
        func events() async throws -> [IMEvent] {
            try await nim.history(HistoryQuery(conversation: conversation, anchor: .oldest, limit: 20)).messages.compactMap(source.catchUpEvent(for:))
        }
        try await engine.accept(try await events())
        #expect(await engine.waitUntilIdle())
        #expect(try await lab.records("rc", between: (shop, buyer)).first?.expansion == ["pri": "high"])
        await engine.stop()

        // Down: the removal, then a migration of the conversation reads it.
        _ = try await carrying.sendExpansionChange(ExpansionDelta(version: 2, removed: ["pri"]), of: order.id, in: conversation, by: buyer)
        let plan = MigrationPlan(source: "nim", target: "rc", conversations: [(conversation, conversation)], users: .puppet(prefix: ""))
        let report = try await Migrator(store: store, source: try await lab.backend("nim", store: store), target: try await lab.backend("rc", store: store),
                                        retry: RetryPolicy(baseMs: 20, maxMs: 500), routes: routes).run(plan)
        #expect(report.total.failedTotal == 0, "\(report.summary)")
        #expect(try await lab.records("rc", between: (shop, buyer)).first?.expansion == [:], "the removal reached the copy")

        // Back up: the removal's callback is a duplicate.
        let back = RelayEngine(store: store, backends: [nim, try await lab.backend("rc", store: store)], routes: routes,
                               retry: RetryPolicy(baseMs: 20, maxMs: 500))
        await back.start()
        let taken = try back.ingest(Array(try await events().suffix(1)))
        #expect(taken.duplicates == 1, "\(taken)")
        #expect(await back.waitUntilIdle())
        let copies = try await lab.records("rc", between: (shop, buyer))
        #expect(copies.map(\.text) == ["order #9"] && copies.first?.expansion == [:], "\(copies.map { "\($0.text) \($0.expansion ?? [:])" })")
        await back.stop()
    }
}
