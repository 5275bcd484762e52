import Foundation
import IMCore
import IMRelay
import IMSandbox
import Testing
import IMMigration
import IMOutbox

/// Every ordered pair of the four vendors: a seeded conversation is migrated through the real adapters and
/// sandboxes, and the target's `/_sandbox/messages` is compared with the source's, record by record.
@Suite struct PairMigrationTests {
    static let sources: [BackendID] = ["wk", "rc", "nim", "jm"]

    @Test(arguments: sources)
    func migratesToEveryOtherVendor(source: BackendID) async throws {
        let lab = try await MigrationLab()
        defer { Task { await lab.stop() } }
        let seed = Seed(source: source)
        try await lab.provision([seed.a, seed.b])
        try await lab.write(seed, on: source)
        let sourceRecords = try await lab.records(source, between: (seed.a, seed.b))
        #expect(sourceRecords.count == 12, "the seeded conversation as the source stores it")

        for target in Self.sources where target != source {
            let store = try lab.newStore()
            let migrator = Migrator(store: store, source: try await lab.backend(source, store: store),
                                    target: try await lab.backend(target, store: store), retry: RetryPolicy(baseMs: 20, maxMs: 500))
            let plan = MigrationPlan(source: source, target: target, conversations: [(seed.conversation, seed.conversation)],
                                     users: .puppet(prefix: ""), pageSize: 5)
            let report = try await migrator.run(plan)
            let (targetRecords, carried) = MigrationLab.carriersApart(try await lab.records(target, between: (seed.a, seed.b)))
            let expected = Expectation.expected(from: sourceRecords, source: source)
            // On NIM a copy with expansion values is followed by their carrier, as a relayed copy is.
            let extended = zip(expected, targetRecords).filter { !$0.0.expansion.isEmpty && !$0.0.recalled }
            #expect(carried.count == (target == "nim" ? extended.count : 0), "\(source)→\(target): carriers \(carried)")
            if target == "nim" {
                for (want, copy) in extended {
                    #expect(carried.contains { $0.copy == copy.id && $0.set == want.expansion },
                            "\(source)→nim: a carrier names \(copy.id) with \(want.expansion): \(carried)")
                }
            }
            #expect(report.total.failedTotal == 0, "\(source)→\(target): \(report.conversations.first?.failures ?? [])")
            #expect(report.total.sentTotal == expected.count, "\(source)→\(target): \(report.summary)")
            #expect(targetRecords.count == expected.count, "\(source)→\(target): one target message per readable source message")
            for (want, got) in zip(expected, targetRecords) {
                for problem in Expectation.compare(want, got, source: source, target: target, foreignHost: lab.sinkHost) {
                    Issue.record("\(source)→\(target) '\(want.text)': \(problem)")
                }
            }
            FidelityLog.print(source: source, target: target, expected: expected, got: targetRecords, report: report)

            // A second run resumes at the checkpoint, which the first moved past the last page when it queued
            // it: it reads nothing again and writes nothing.
            let again = try await Migrator(store: store, source: try await lab.backend(source, store: store),
                                           target: try await lab.backend(target, store: store)).run(plan)
            #expect(again.total.sentTotal == 0 && again.total.failedTotal == 0, "\(again.summary)")
            #expect(again.total.skippedTotal == 0, "the rerun read no message again: \(again.summary)")
            #expect(try await lab.records(target, between: (seed.a, seed.b)).count == expected.count + carried.count)
        }
        await lab.stop()
    }
}

/// Groups between the two vendors whose group ids are the app's own (WuKong channels, RongCloud groups);
/// NIM teams and JMessage groups get server-assigned ids and are created before a migration, so a run
/// names them with `--conversation group:SRC=group:TID`.
@Suite struct GroupMigrationTests {
    @Test(arguments: [("wk", "rc"), ("rc", "wk")] as [(BackendID, BackendID)])
    func aGroupMigratesWithItsFinalState(source: BackendID, target: BackendID) async throws {
        let lab = try await MigrationLab()
        var seed = Seed(source: source)
        seed.group = GroupID("team-\(source)")
        try await lab.provision([seed.a, seed.b])
        try await lab.write(seed, on: source)
        let sourceRecords = try await lab.records(source, in: seed.conversation)
        #expect(sourceRecords.count == 12)
        let store = try lab.newStore()
        let report = try await Migrator(store: store, source: try await lab.backend(source, store: store),
                                        target: try await lab.backend(target, store: store))
            .run(MigrationPlan(source: source, target: target, conversations: [(seed.conversation, seed.conversation)],
                               users: .puppet(prefix: ""), pageSize: 5))
        #expect(report.total.failedTotal == 0, "\(report.conversations.first?.failures ?? [])")
        let copies = try await lab.records(target, in: seed.conversation)
        #expect(copies.count == sourceRecords.count)
        for (want, got) in zip(sourceRecords, copies) {
            for problem in Expectation.compare(want, got, source: source, target: target, foreignHost: lab.sinkHost) {
                Issue.record("\(source)→\(target) group '\(want.text)': \(problem)")
            }
        }
        await lab.stop()
    }
}

/// What each source record should become on the target, with each pair's documented conversions.
enum Expectation {
    /// The source records a fresh process can read back through the source's history API:
    /// NIM drops recalled messages from history (vendor rule), so they cannot be migrated.
    static func expected(from records: [SandboxMessageRecord], source: BackendID) -> [SandboxMessageRecord] {
        records.filter { !(source == "nim" && $0.recalled) }
    }

    /// `foreignHost`: where images hosted outside the vendors live (the lab's sink); NIM and JMessage store
    /// files, so their copies must point at their own storage (media rehost), not there.
    static func compare(_ want: SandboxMessageRecord, _ got: SandboxMessageRecord, source: BackendID, target: BackendID,
                        foreignHost: String) -> [String] {
        var problems: [String] = []
        func check(_ ok: Bool, _ text: @autoclosure () -> String) { if !ok { problems.append(text()) } }
        // Senders: the same user ids (puppet prefix ""); JMessage sends as its admin, the user travels in extras.
        if target == "jm" {
            check(got.from == MigrationLab.jmAdmin.rawValue, "JMessage copies are sent by the admin, got \(got.from)")
            let sender = source == "jm" ? MigrationLab.jmSender(want) : want.from
            check(MigrationLab.jmSender(got) == sender, "extras.imbridge_sender names \(sender ?? "?"): \(got.raw.jsonString())")
            check(got.raw["msg_body"]?["extras"]?["imbridge_sent_at"] != nil, "the original time travels in extras.imbridge_sent_at")
        } else {
            let sender = source == "jm" ? MigrationLab.jmSender(want) ?? want.from : want.from
            check(got.from == sender, "sender \(sender), got \(got.from)")
        }
        // The original id, sender and time travel in the target's extension field.
        let origin = MigrationLab.origin(in: got.raw)
        check(origin?["backend"]?.stringValue == source.rawValue && origin?["id"]?.stringValue == want.id
              && origin?["sent_at"]?.int64Value != nil && origin?["sender"]?.stringValue != nil,
              "imbridge_origin names \(source):\(want.id): \(origin?.jsonString() ?? "none in \(got.raw.jsonString())")")
        // Expansion values a target cannot hold travel there too.
        if !["wk", "rc"].contains(target.rawValue) && !want.expansion.isEmpty {
            check(origin?["expansion"]?.objectValue == want.expansion.mapValues { .string($0) }, "expansion in the origin")
        }
        // A recall travels as the target's recall (all four can recall a message just sent). JMessage's report
        // v2 does not mark retracts: a fresh process reads a retracted message as a live one, and it is copied
        // as such (docs/migration.md, honest limits).
        let readAsRecalled = want.recalled && source != "jm"
        check(got.recalled == readAsRecalled, "recalled \(readAsRecalled), got \(got.recalled)")
        if readAsRecalled { return problems }
        switch want.kind {
        case "text":
            check(got.kind == "text", "kind text, got \(got.kind)")
            check(got.text == want.text, "text '\(want.text)', got '\(got.text)'")
            if want.edited { check(got.text == Seed.editedAfter, "an edit travels as the latest content") }
        case "image":
            check(got.kind == "image", "kind image, got \(got.kind) '\(got.text)'")
            if ["nim", "jm"].contains(target.rawValue) {
                check(!got.raw.jsonString().contains(foreignHost), "the image was re-hosted on \(target): \(got.raw.jsonString())")
            }
        case "location":
            check(got.kind == "location", "kind location, got \(got.kind)")
        case "card":
            // Every vendor carries a contact card through mappings/custom/contact_card.yaml (JMessage as a custom body).
            check(got.kind == "card", "kind card, got \(got.kind) '\(got.text)'")
        default:
            check(got.kind == want.kind, "kind \(want.kind), got \(got.kind)")
        }
        // Expansions travel as their current key/values where the target has them.
        let expands = ["wk", "rc"].contains(target.rawValue)
        if expands && !want.expansion.isEmpty {
            check(got.expansion == want.expansion, "expansion \(want.expansion), got \(got.expansion)")
        }
        return problems
    }
}

/// One line per pair on stdout: what the comparison saw (the per-pair fidelity table in docs/migration.md).
enum FidelityLog {
    static func print(source: BackendID, target: BackendID, expected: [SandboxMessageRecord], got: [SandboxMessageRecord],
                      report: MigrationReport) {
        let kinds = zip(expected, got).map { "\($0.kind)→\($1.kind)\($1.recalled ? "(recalled)" : "")\($1.expansion.isEmpty ? "" : "+exp")" }
        Swift.print("FIDELITY \(source)→\(target): \(report.summary.split(separator: "\n").last ?? "") | \(kinds.joined(separator: " "))")
    }
}
