import Foundation
import IMCore
import Testing

/// The fault campaign (docs/reliability.md): per seed, a topology of two vendors' sandboxes and one
/// `imbridge run` process, a stream of texts into 3–6 groups, and a random schedule of faults on the
/// bridge process and the target; then every source message must be on the target exactly once, in
/// source order, with nothing dead-lettered and no secret in the bridge's logs.
///
/// Seeds: `IMBRIDGE_CHAOS_SEED=N`, `IMBRIDGE_CHAOS_SEEDS=N` (1…N), or the fixed CI set
/// (`ChaosSeeds.ci`). Fault kinds: `IMBRIDGE_CHAOS_FAULTS` (`all`, or names), by default every kind not
/// known to fail today (`FaultKind.knownFailing`). `make chaos` sets these.
@Suite(.serialized) struct ChaosTests {
    @Test(arguments: ChaosSeeds.fromEnvironment())
    func everyMessageOnceInSourceOrder(seed: UInt64) async throws {
        let plan = ChaosPlan(seed: seed, kinds: try FaultKind.allowed())
        let outcome = try await ChaosCampaign.run(plan)
        print(outcome.report)
        #expect(outcome.violations.isEmpty, "\(outcome.report)")
    }
}

/// The checker and the plan on their own: a checker that cannot see a double, a loss or a reorder, or
/// a plan that is not the same for the same seed, would make every campaign pass.
@Suite struct ChaosCheckerTests {
    let sent = ["a-1", "a-2", "a-3", "a-4"]

    @Test func exactlyOnceInOrderPasses() {
        #expect(ChaosChecker.compare(conversation: "a", expected: sent, got: sent) == nil)
    }

    @Test func aDoubleIsNamedAtItsPosition() throws {
        let problem = try #require(ChaosChecker.compare(conversation: "a", expected: sent, got: ["a-1", "a-2", "a-2", "a-3", "a-4"]))
        #expect(problem.contains("position 3: expected \"a-3\", got \"a-2\"") && problem.contains("DOUBLED 1: a-2"), "\(problem)")
        #expect(!problem.contains("ORDER") && !problem.contains("LOST"), "\(problem)")
    }

    @Test func aLossAndAReorderAreNamed() throws {
        let lost = try #require(ChaosChecker.compare(conversation: "a", expected: sent, got: ["a-1", "a-2", "a-4"]))
        #expect(lost.contains("LOST 1: a-3") && !lost.contains("ORDER"), "\(lost)")
        let reordered = try #require(ChaosChecker.compare(conversation: "a", expected: sent, got: ["a-1", "a-3", "a-2", "a-4"]))
        #expect(reordered.contains("ORDER broken: \"a-3\" arrived where \"a-2\" was due") && !reordered.contains("DOUBLED"), "\(reordered)")
        let short = try #require(ChaosChecker.compare(conversation: "a", expected: sent, got: []))
        #expect(short.contains("position 1: expected \"a-1\", got nothing"), "\(short)")
    }

    @Test func secretsAreFoundInLogLines() {
        let log = "line one\nGET /x?appSecret=lab-app-secret\nfine"
        let found = ChaosChecker.secretsIn(log: log, file: "bridge-1.log", secrets: ["backends.rc.app_secret": "lab-app-secret"])
        #expect(found.count == 1 && found[0].hasPrefix("secret backends.rc.app_secret in bridge-1.log line 2"), "\(found)")
        #expect(ChaosChecker.secretsIn(log: "all clear", file: "f", secrets: ["k": "lab-app-secret"]).isEmpty)
    }

    @Test func theSameSeedGivesTheSamePlan() throws {
        let kinds = Set(FaultKind.allCases)
        for seed: UInt64 in [1, 7, 123] {
            #expect(ChaosPlan(seed: seed, kinds: kinds).description == ChaosPlan(seed: seed, kinds: kinds).description)
        }
        #expect(ChaosPlan(seed: 1, kinds: kinds).description != ChaosPlan(seed: 2, kinds: kinds).description)
        let plan = ChaosPlan(seed: 5, kinds: kinds)
        #expect((3...6).contains(plan.conversations.count) && !plan.faults.isEmpty)
        #expect(plan.faults.map(\.atMs) == plan.faults.map(\.atMs).sorted())
        #expect(plan.faults.allSatisfy { $0.atMs >= 1500 && $0.atMs + $0.durationMs <= plan.workloadMs })
    }

    @Test func environmentSelectsSeedsAndKinds() throws {
        #expect(ChaosSeeds.fromEnvironment([:]) == ChaosSeeds.ci)
        #expect(ChaosSeeds.fromEnvironment(["IMBRIDGE_CHAOS_SEED": "42"]) == [42])
        #expect(ChaosSeeds.fromEnvironment(["IMBRIDGE_CHAOS_SEEDS": "3"]) == [1, 2, 3])
        #expect(ChaosSeeds.fromEnvironment(["IMBRIDGE_CHAOS_SEEDS": "10-12"]) == [10, 11, 12])
        #expect(ChaosSeeds.fromEnvironment(["IMBRIDGE_CHAOS_SEEDS": "4,9"]) == [4, 9])
        #expect(try FaultKind.allowed([:]) == Set(FaultKind.allCases).subtracting(FaultKind.knownFailing).subtracting([.flood]))
        #expect(try FaultKind.allowed(["IMBRIDGE_CHAOS_FAULTS": "all"]) == Set(FaultKind.allCases))
        #expect(try FaultKind.allowed(["IMBRIDGE_CHAOS_FAULTS": "sigkill, 5xx"]) == [.sigkill, .serverErrors])
        #expect(throws: IMError.self) { try FaultKind.allowed(["IMBRIDGE_CHAOS_FAULTS": "meteor"]) }
        let plan = ChaosPlan(seed: 9, kinds: [.sigterm])
        #expect(plan.faults.allSatisfy { $0.kind == .sigterm } && plan.replay == "make chaos SEED=9 FAULTS=sigterm")
    }
}
