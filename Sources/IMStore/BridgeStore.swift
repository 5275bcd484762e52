import Foundation
import GRDB
import IMCore

/// The bridge's durable state in one SQLite file (WAL): the inbound ledger, the outbox, the message-id
/// map, dead letters and checkpoints. Schema changes go through versioned migrations (`StoreSchema`).
///
/// Contract:
/// - `transaction` runs its body in one write transaction: a callback's ledger rows and outbox rows
///   commit together or not at all, and only after it returns may the callback be answered.
/// - The ledger key is (backend, eventID): recording an event twice reports a duplicate.
/// - Outbox entries of one lane are taken strictly in insertion order; a lane whose head is waiting
///   for a retry is skipped until its time comes, other lanes are not held up.
/// - The id map is written in both directions, so an event about either side finds the other.
public final class BridgeStore: Sendable {
    let pool: DatabasePool
    public let path: String
    let writer: GroupedWriter

    public init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            try StoreSchema.migrator.migrate(pool)
        } catch {
            throw IMError(.unavailable, "cannot open store \(path): \(error)", isRetryable: false)
        }
        self.path = path
        writer = GroupedWriter(pool: pool)
    }

    /// Runs `body` in one write transaction.
    public func transaction<T>(_ body: (StoreTransaction) throws -> T) throws -> T {
        try wrap { try pool.write { db in try body(StoreTransaction(db: db)) } }
    }

    /// Runs `body` in a write transaction shared with the other grouped writes submitted meanwhile
    /// (group commit, see `GroupedWriter`), on the store's own writer queue, not the caller's thread.
    /// `body` runs in a savepoint of its own: if it throws, only its changes are rolled back. Returns
    /// after the transaction committed.
    public func groupedTransaction<T: Sendable>(_ body: @escaping @Sendable (StoreTransaction) throws -> T) async throws -> T {
        do {
            return try await writer.write { db in try body(StoreTransaction(db: db)) }
        } catch let error as DatabaseError {
            throw IMError(.unavailable, "store: \(error)", isRetryable: true)
        }
    }

    /// Runs `body` with a read-only view.
    public func read<T>(_ body: (StoreTransaction) throws -> T) throws -> T {
        try wrap { try pool.read { db in try body(StoreTransaction(db: db)) } }
    }

    /// SQLite failures become a retryable `IMError(.unavailable)`; errors thrown by the body pass through.
    func wrap<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as DatabaseError {
            throw IMError(.unavailable, "store: \(error)", isRetryable: true)
        }
    }

    /// The schema version the file is at (the number of applied migrations).
    public func schemaVersion() throws -> Int {
        try wrap { try pool.read { db in try StoreSchema.migrator.appliedIdentifiers(db).count } }
    }
}
