import IMCore
import IMTelemetry
import Testing

/// A backend's sign of life (`HealthBoard.heard`: a callback that verified, a poll it answered): a backend
/// that only sends into the bridge is `ok`, not `unknown`; a failing one stays failing until a call succeeds.
@Suite struct BackendHealthTests {
    @Test func aSignOfLifeMakesAnUnknownBackendOkButDoesNotClearAFailure() {
        let board = HealthBoard(backends: ["wk", "rc"])
        #expect(board.snapshot["wk"]?.state == "unknown")
        board.heard("wk", at: 1_000)
        board.heard("wk", at: 900)
        #expect(board.snapshot["wk"]?.state == "ok" && board.snapshot["wk"]?.lastHeardMs == 1_000 && board.snapshot["wk"]?.lastSuccessMs == nil)

        board.failed("rc", error: IMError(.unavailable, "down", isRetryable: true), at: 2_000)
        board.heard("rc", at: 2_500)
        #expect(board.snapshot["rc"]?.state == "degraded" && board.snapshot["rc"]?.failingSinceMs == 2_000)
        #expect(board.snapshot["rc"]?.lastHeardMs == 2_500)
        #expect(board.down(at: 100_000, thresholdMs: 60_000) == ["rc"], "hearing from it does not make its sends work")
    }
}
