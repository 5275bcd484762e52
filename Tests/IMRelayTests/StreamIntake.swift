import IMAdapterKit
import IMCore
import IMHTTP
import Synchronization

/// Feeds a backend's `events()` stream into a sink: the intake the relay tests give the testing kit's
/// `MemoryBackend`, which has no callback of its own. A stream has no
/// redelivery, so an event the sink refuses to take is offered again, with a growing pause (up to
/// `maxPauseMs`), until the sink takes it or the intake stops; events stay in order.
final class StreamIntake: InboundHandling {
    let backend: any IMBackend
    let maxPauseMs: Int64
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(_ backend: any IMBackend, maxPauseMs: Int64 = 5_000) {
        self.backend = backend
        self.maxPauseMs = maxPauseMs
    }

    /// A stream-fed backend takes no HTTP callbacks.
    func handle(_ request: HTTPRequestData, sink: any EventSink) async -> HTTPResponseData {
        .text("backend '\(backend.id)' takes no callbacks", status: 404)
    }

    func startIntake(into sink: any EventSink) async throws {
        let stream = backend.events()
        let maxPauseMs = self.maxPauseMs
        let started = Task {
            for await event in stream {
                var pauseMs: Int64 = 10
                while !Task.isCancelled {
                    do {
                        try await sink.accept([event])
                        break
                    } catch {
                        try? await Task.sleep(nanoseconds: UInt64(pauseMs) * 1_000_000)
                        pauseMs = min(pauseMs * 2, maxPauseMs)
                    }
                }
                if Task.isCancelled { return }
            }
        }
        task.withLock { previous in
            previous?.cancel()
            previous = started
        }
    }

    func stopIntake() async {
        let running = task.withLock { current -> Task<Void, Never>? in
            defer { current = nil }
            return current
        }
        running?.cancel()
        await running?.value
    }
}
