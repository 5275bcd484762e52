import BridgeTestSupport
import Foundation
import IMCore
import IMRelay
import IMSandbox
@_spi(Testing) import IMStore
import Testing
import IMMigration
import IMOutbox

@Suite struct ThrottleAndDryRunTests {
    /// Each target's rate-limit answer: RongCloud 429 + 1008 (retry after 1 s), NIM 200 + 416 (the app is
    /// blocked 10 s: one answer), WuKong 429, JMessage 429 + 803010 (X-Rate-Limit-Reset).
    static let throttles: [(BackendID, BackendID, Int?, String, Int)] = [
        ("wk", "rc", 1008, "/message/private/publish", 3), ("rc", "nim", 416, "/msg/sendMsg", 1),
        ("nim", "wk", nil, "/message/send", 3), ("wk", "jm", 803010, "/v1/messages", 3),
    ]

    @Test(arguments: throttles)
    func aThrottlingTargetSlowsTheMigrationWithoutLossOrDoubles(_ sourceName: BackendID, _ targetName: BackendID, vendorCode: Int?,
                                                                 path: String, times: Int) async throws {
        let lab = try await MigrationLab()
        let seed = Seed(source: sourceName)
        try await lab.provision([seed.a, seed.b])
        try await lab.write(seed, on: sourceName)
        let sourceRecords = try await lab.records(sourceName, between: (seed.a, seed.b))
        let expected = Expectation.expected(from: sourceRecords, source: sourceName)

        var fault: [String: JSONValue] = ["status": 429, "count": .int(Int64(times)), "path_prefix": .string(path)]
        if let vendorCode { fault["vendor_code"] = .int(Int64(vendorCode)) }
        if targetName == "nim" { fault["status"] = 200 }   // NIM answers its codes with HTTP 200
        try await lab.fault(targetName, .object(fault))
        let store = try lab.newStore()
        let report = try await Migrator(store: store, source: try await lab.backend(sourceName, store: store),
                                        target: try await lab.backend(targetName, store: store), retry: RetryPolicy(baseMs: 20, maxMs: 200))
            .run(MigrationPlan(source: sourceName, target: targetName, conversations: [(seed.conversation, seed.conversation)],
                               users: .puppet(prefix: "")))
        let injected = lab.lab.sandboxes[targetName]?.faults.injectedCount ?? 0
        #expect(injected == times, "every throttled answer was met (the rule matched the send path)")
        #expect(report.total.failedTotal == 0, "\(report.conversations.first?.failures ?? [])")
        let (copies, _) = MigrationLab.carriersApart(try await lab.records(targetName, between: (seed.a, seed.b)))
        #expect(copies.count == expected.count, "nothing lost, nothing doubled: \(copies.map(\.text))")
        for (want, got) in zip(expected, copies) {
            for problem in Expectation.compare(want, got, source: sourceName, target: targetName, foreignHost: lab.sinkHost) { Issue.record("\(problem)") }
        }
        await lab.stop()
    }

    /// `--dry-run` through the executable: nothing on the target, nothing in the store, a report of what would happen.
    @Test func aDryRunWritesNothingAndReports() async throws {
        let lab = try await MigrationLab()
        let seed = Seed(source: "wk")
        try await lab.provision([seed.a, seed.b])
        try await lab.write(seed, on: "wk")
        let storePath = "\(lab.lab.directory)/dry.sqlite"
        let reportPath = "\(lab.lab.directory)/dry.json"
        let run = try BridgeProcess.migrate(["--config", try lab.configFile(store: storePath), "--from", "wk", "--to", "jm",
                                      "--conversation", "direct:\(seed.conversation.id)", "--dry-run",
                                      "--report", reportPath], directory: lab.lab.directory)
        let finished = await run.waitForExit(seconds: 60)
        #expect(finished == 0, "\(run.output)")
        #expect(try await lab.records("jm").isEmpty, "nothing written to the target")
        #expect(try BridgeStore(path: storePath).read { try $0.mappingCount() } == 0, "nothing written to the id map")
        let report = try JSONDecoder().decode(MigrationReport.self, from: Data(contentsOf: URL(fileURLWithPath: reportPath)))
        #expect(report.dryRun)
        #expect(report.total.sentTotal == 12, "\(report.summary)")
        #expect(report.total.fellBack >= 1 || report.total.converted >= 1, "JMessage has no card: the dry run says it converts")
        #expect(report.total.byKind["card"] == 1 && report.total.byKind["location"] == 1 && report.total.byKind["image"] == 1)
        #expect(run.output.contains("dry run"))
        let json = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: reportPath)))
        #expect(json["dry_run"] == true && json["total"]?["by_kind"]?["text"] != nil, "the JSON has the total: \(json.jsonString())")
        await lab.stop()
    }
}
