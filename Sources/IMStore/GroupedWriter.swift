import Dispatch
import Foundation
import GRDB
import Synchronization

/// Group commit: write transactions submitted concurrently run one after the other inside ONE SQLite
/// transaction, on a dedicated dispatch queue (not the cooperative thread pool, which a waiting
/// `DatabasePool.write` would block).
///
/// Contract:
/// - Each submitted body runs in its own savepoint: a body that throws rolls back only its own changes
///   and gets its error; the others commit.
/// - A submitter resumes only after the transaction holding its body has COMMITTED (or with the error
///   that made the commit fail, in which case none of that batch's bodies took effect).
/// - Bodies run in submission order; a batch is whatever was submitted while the previous one was
///   being written (at most `maxBatch` bodies), so under no contention a body is written alone, at once.
final class GroupedWriter: Sendable {
    private struct Job: Sendable {
        let run: @Sendable (Database) -> Void
        let finish: @Sendable ((any Error)?) -> Void
    }

    private struct Queue {
        var jobs: [Job] = []
        var draining = false
    }

    private let pool: DatabasePool
    private let state = Mutex(Queue())
    private let dispatch = DispatchQueue(label: "imbridge.store.grouped-writer")
    static let maxBatch = 512

    init(pool: DatabasePool) { self.pool = pool }

    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let outcome = Outcome<T>()
            let job = Job(run: { db in
                do {
                    var value: T?
                    try db.inSavepoint {
                        value = try body(db)
                        return .commit
                    }
                    outcome.result = value.map { .success($0) }
                } catch {
                    outcome.result = .failure(error)
                }
            }, finish: { commitError in
                if let commitError {
                    continuation.resume(throwing: commitError)
                } else if let result = outcome.result {
                    continuation.resume(with: result)
                } else {
                    continuation.resume(throwing: DatabaseError(message: "grouped write did not run"))
                }
            })
            let startDrain = state.withLock { queue -> Bool in
                queue.jobs.append(job)
                guard !queue.draining else { return false }
                queue.draining = true
                return true
            }
            if startDrain { dispatch.async { self.drain() } }
        }
    }

    private func drain() {
        while true {
            let batch = state.withLock { queue -> [Job] in
                let batch = Array(queue.jobs.prefix(Self.maxBatch))
                queue.jobs.removeFirst(batch.count)
                if batch.isEmpty { queue.draining = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            do {
                try pool.write { db in
                    for job in batch { job.run(db) }
                }
                for job in batch { job.finish(nil) }
            } catch {
                for job in batch { job.finish(error) }
            }
        }
    }
}

/// The result slot of one job: written by `run`, read by `finish`, both on the writer's queue, one
/// after the other (never concurrently), hence unchecked.
private final class Outcome<T: Sendable>: @unchecked Sendable {
    var result: Result<T, any Error>?
}
