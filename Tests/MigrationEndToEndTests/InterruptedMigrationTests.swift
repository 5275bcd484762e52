import BridgeTestSupport
import Foundation
import IMCore
import IMRelay
import IMSandbox
import IMStore
import Testing

/// `imbridge migrate` as a child process, killed with SIGKILL part way and run again: exactly one copy
/// of every message, on targets that can look a client id up (WuKong history echoes client_msg_no) and on
/// one that cannot (RongCloud: the rerun recognises the unrecorded copy by sender, kind, digest and time),
/// and on JMessage (client id in extras, looked up through report v2).
@Suite struct InterruptedMigrationTests {
    @Test(arguments: [("wk", "rc"), ("rc", "wk"), ("nim", "jm")] as [(BackendID, BackendID)])
    func aKilledMigrationRerunLeavesExactlyOneCopy(source: BackendID, target: BackendID) async throws {
        let lab = try await MigrationLab()
        let seed = Seed(source: source)
        let puppets = [UserID("\(source)_\(seed.a)"), UserID("\(source)_\(seed.b)")]
        try await lab.provision([seed.a, seed.b] + puppets)
        try await lab.write(seed, on: source)
        let sourceRecords = Expectation.expected(from: try await lab.records(source, between: (seed.a, seed.b)), source: source)
        // With a puppet prefix, senders become `<source>_<user>` and the direct conversation is renamed to the
        // puppets' pair without being told.
        let store = "\(lab.lab.directory)/migrate.sqlite"
        let config = try lab.configFile(store: store)
        let arguments = ["--config", config, "--from", source.rawValue, "--to", target.rawValue,
                         "--conversation", "direct:\(seed.conversation.id)", "--user-prefix", "\(source)_", "--report", "\(lab.lab.directory)/report.json"]

        try await lab.fault(target, ["latency_ms": 120])
        let first = try BridgeProcess.migrate(arguments, directory: lab.lab.directory)
        var seen = 0
        for _ in 0..<1500 where seen < 4 {
            seen = try await lab.records(target, between: (puppets[0], puppets[1])).count
            if !first.isRunning { break }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        await first.kill()
        #expect(first.endedBySignal, "killed part way, not finished: \(first.output)")
        let atKill = try await lab.records(target, between: (puppets[0], puppets[1])).count
        #expect(atKill >= 4 && atKill < sourceRecords.count, "interrupted with \(atKill) of \(sourceRecords.count) copied")

        try await lab.fault(target, ["latency_ms": 0])
        let second = try BridgeProcess.migrate(arguments, directory: lab.lab.directory)
        let finished = await second.waitForExit(seconds: 60)
        #expect(finished == 0, "\(second.output)")

        let copies = try await lab.records(target, between: (puppets[0], puppets[1]))
        #expect(copies.count == sourceRecords.count, "exactly one copy of every message: \(copies.map(\.text))")
        for (want, got) in zip(sourceRecords, copies) {
            #expect(got.recalled == want.recalled, "'\(want.text)' recalled \(want.recalled)")
            if want.kind == "text" && !want.recalled { #expect(got.text == want.text) }
        }
        let report = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: "\(lab.lab.directory)/report.json")))
        // The rerun reads on after the checkpoint (the first run queued the history) and carries out what the
        // first run left pending in the lane: not what it had recorded (at most the copy in flight at the kill).
        let counts = report["conversations"]?.arrayValue?.first?["counts"]
        let rerunSent = ["copied", "converted", "fell_back"].compactMap { counts?[$0]?.int64Value }.reduce(0, +)
        #expect(rerunSent <= Int64(sourceRecords.count - atKill + 1), "the rerun did not redo what the first run recorded: \(report.jsonString())")
        #expect(counts?["failed"]?.objectValue?.isEmpty ?? true, "\(report.jsonString())")
        #expect(second.output.contains("total: copied"), "the human summary is printed")
        await lab.stop()
    }
}
