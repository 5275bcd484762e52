import Dispatch
import Foundation
import Synchronization

/// Group commit: write transactions submitted concurrently run one after the other inside ONE
/// transaction of the driver, on a dedicated dispatch queue (not the cooperative thread pool, which a
/// waiting write would block, and not a NIO event loop, which the PostgreSQL driver waits on).
///
/// Contract:
/// - Each submitted body fails alone: a body that throws leaves no change and gets its error; the
///   others commit (`StoreDriver.writeBatch`).
/// - A submitter resumes only after the transaction holding its body has COMMITTED (or with the error
///   that made the commit fail, in which case none of that batch's bodies took effect).
/// - Bodies run in submission order; a batch is whatever was submitted while the previous one was
///   being written (at most `maxBatch` bodies), so under no contention a body is written alone, at once.
package final class GroupedWriter: Sendable {
    private struct Pending: Sendable {
        let job: GroupedJob
        let finish: @Sendable ((any Error)?) -> Void
    }

    private struct Queue {
        var jobs: [Pending] = []
        var draining = false
    }

    private let driver: any StoreDriver
    private let state = Mutex(Queue())
    private let dispatch = DispatchQueue(label: "imbridge.store.grouped-writer")
    package static let maxBatch = 512

    package init(driver: any StoreDriver) { self.driver = driver }

    package func write<T: Sendable>(_ body: @escaping @Sendable (any StoreOperations) throws -> T) async throws -> T {
        try await submit { outcome in GroupedJob { ops in outcome.value = try body(ops) } }
    }

    /// One lane's `finish`, marked as such so that the driver may run it with the batch's other finishes.
    package func finish(_ step: StoreTransaction.Finish) async throws -> OutboxEntry? {
        try await submit { (outcome: Outcome<OutboxEntry?>) in
            GroupedJob(run: { ops in outcome.value = try StoreTransaction(ops).finish(step) }, finish: step,
                       finished: { outcome.value = .some($0) })
        }
    }

    private func submit<T: Sendable>(_ makeJob: (Outcome<T>) -> GroupedJob) async throws -> T {
        // Resumed exactly once: `drain` calls each pending's `finish` once, after its batch committed or
        // failed. Unchecked, as the check (an object made and freed per write) was a cost of every store
        // write on the relay path (docs/performance.md, "Bytes, not text, on every request").
        try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<T, any Error>) in
            let outcome = Outcome<T>()
            let job = makeJob(outcome)
            let pending = Pending(job: job, finish: { commitError in
                if let error = commitError ?? job.error {
                    continuation.resume(throwing: error)
                } else if let value = outcome.value {
                    continuation.resume(returning: value)
                } else {
                    continuation.resume(throwing: CancellationError())
                }
            })
            let startDrain = state.withLock { queue -> Bool in
                queue.jobs.append(pending)
                guard !queue.draining else { return false }
                queue.draining = true
                return true
            }
            if startDrain { dispatch.async { self.drain() } }
        }
    }

    /// Bodies submitted and not yet taken into a batch (tests wait for a batch to fill with it).
    package var queued: Int { state.withLock { $0.jobs.count } }

    private func drain() {
        while true {
            let batch = state.withLock { queue -> [Pending] in
                let batch = Array(queue.jobs.prefix(Self.maxBatch))
                queue.jobs.removeFirst(batch.count)
                if batch.isEmpty { queue.draining = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            do {
                try driver.writeBatch(batch.map(\.job))
                for pending in batch { pending.finish(nil) }
            } catch {
                for pending in batch { pending.finish(error) }
            }
        }
    }
}

/// The value slot of one job: written by its body, read by `finish`, both on the writer's queue, one
/// after the other (never concurrently), hence unchecked.
private final class Outcome<T: Sendable>: @unchecked Sendable {
    var value: T?
}
