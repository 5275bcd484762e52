import Foundation
import IMBridgeApp
import Testing

@Suite struct ProcessTuningTests {
    /// `imbridge` limits glibc's malloc arenas at start (`ProcessTuning`); an operator's
    /// `MALLOC_ARENA_MAX` is left to glibc.
    @Test func theArenaLimitIsSetUnlessTheOperatorSetOne() {
        let operatorSetOne = ProcessInfo.processInfo.environment["MALLOC_ARENA_MAX"] != nil
        #expect(ProcessTuning.limitMallocArenas() == !operatorSetOne, "mallopt was found in the process and accepted M_ARENA_MAX")
    }
}
