import Foundation

/// One implementation of the store contract (`BridgeStore` is the facade every caller uses):
/// `SQLiteDriver` (an embedded file, one bridge instance) or `PostgresDriver` (a shared server, one or
/// more bridge instances). Both run transaction bodies synchronously on the calling thread (`write`,
/// `read`) or on the grouped writer's own dispatch queue (`writeBatch`), never on a NIO event loop;
/// see docs/high-availability.md.
package protocol StoreDriver: Sendable {
    /// Runs `body` in one write transaction on the calling thread; commits when it returns.
    func write<T>(_ body: (any StoreOperations) throws -> T) throws -> T
    /// Runs `body` with a view of committed data on the calling thread.
    func read<T>(_ body: (any StoreOperations) throws -> T) throws -> T
    /// Runs the jobs, in order, in ONE write transaction. A job whose body throws gets its error in
    /// `GroupedJob.error` and leaves no change; the others commit. Throws when the transaction as a
    /// whole fails (nothing of it took effect). Called from the grouped writer's queue only.
    func writeBatch(_ jobs: [GroupedJob]) throws
    /// Runs `body` in one write transaction on a session kept for `side` alone (PostgreSQL), so it never
    /// queues behind the grouped writer; SQLite: like `write`. Called from `BridgeStore`'s queue for
    /// `side` only (one caller at a time per side).
    func sideWrite<T>(_ side: StoreSideSession, _ body: (any StoreOperations) throws -> T) throws -> T
    /// The number of applied schema migrations.
    func schemaVersion() throws -> Int
    /// Whether `error` is the store's own failure (database unreachable, SQL error) rather than an error
    /// thrown by a transaction body.
    func isStoreFailure(_ error: any Error) -> Bool
    /// Releases connections (the store is unusable afterwards).
    func close()
}

/// One body submitted to `BridgeStore.groupedTransaction`. Written and read on the grouped writer's
/// queue only (see `GroupedWriter`), hence unchecked.
package final class GroupedJob: @unchecked Sendable {
    /// Runs the submitted body and keeps its value; may run more than once when a batch is retried
    /// (`PostgresDriver.writeBatch`), the last run's value is the one that committed.
    package let run: (any StoreOperations) throws -> Void
    /// Set when the body is one lane's `finish` and nothing else (`BridgeStore.finish`): a driver may
    /// then carry it out together with the batch's other finishes instead of calling `run`, handing its
    /// result to `finished` (PostgreSQL: one statement for all of them, `PostgresDriver.writeBatch`).
    package let finish: StoreTransaction.Finish?
    package let finished: ((OutboxEntry?) -> Void)?
    /// The body's own error (its changes were not committed).
    package var error: (any Error)?

    package init(run: @escaping (any StoreOperations) throws -> Void, finish: StoreTransaction.Finish? = nil,
         finished: ((OutboxEntry?) -> Void)? = nil) {
        self.run = run
        self.finish = finish
        self.finished = finished
    }
}

/// The writes that must not wait behind the relay's own (`BridgeStore.sideTransaction`).
public enum StoreSideSession: String, Sendable, CaseIterable {
    /// Lease renewal: late, it would let a lease lapse under a busy or blocked writer.
    case leases
    /// The readiness probe: it must answer within a second.
    case probe
}
