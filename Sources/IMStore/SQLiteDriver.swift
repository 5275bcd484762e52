import Foundation
import GRDB
import IMCore
import Synchronization
import IMStoreCore

/// The embedded implementation: one SQLite file (WAL), one bridge instance. Schema: `SQLiteSchema`.
package final class SQLiteDriver: StoreDriver {
    package let pool: DatabasePool
    package let path: String
    package let counters: StoreCounters
    /// Set while a side write (`sideWrite`) holds the writer connection, whose statements it alone runs
    /// meanwhile: they are counted as side statements. Readers' statements never are.
    private let sideWriting: SideWriting

    package final class SideWriting: Sendable {
        package let active = Atomic<Bool>(false)
    }

    package init(path: String, counters: StoreCounters) throws {
        self.counters = counters
        let sideWriting = SideWriting()
        self.sideWriting = sideWriting
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            let writer = !db.configuration.readonly
            db.trace(options: .statement) { _ in counters.statement(side: writer && sideWriting.active.load(ordering: .relaxed)) }
        }
        Self.restrictPermissions(path)
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            try SQLiteSchema.migrator.migrate(pool)
        } catch {
            throw IMError(.unavailable, "cannot open store \(path): \(error)", isRetryable: false)
        }
        self.path = path
    }

    /// The store holds message contents and the id map: it is created readable by its owner only
    /// (0600). SQLite gives its `-wal` and `-shm` files the mode of the database file, so they follow.
    /// An existing store (or sidecar) readable or writable by group or others is tightened to its
    /// owner's bits, not refused: the bridge's own file should never be shared (docs/configuration.md, `store:`).
    package static func restrictPermissions(_ path: String) {
        guard !path.isEmpty, path != ":memory:", !path.hasPrefix("file:") else { return }
        if !FileManager.default.fileExists(atPath: path) {
            let descriptor = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0o600)
            if descriptor >= 0 { _ = Foundation.close(descriptor) }
        }
        for file in [path, path + "-wal", path + "-shm"] {
            var info = stat()
            guard stat(file, &info) == 0, info.st_mode & 0o077 != 0 else { continue }
            chmod(file, info.st_mode & 0o700)
        }
    }

    package func write<T>(_ body: (any StoreOperations) throws -> T) throws -> T {
        counters.transaction()
        return try pool.writeWithoutTransaction { db in try Self.inTransaction(db) { try body(SQLiteOperations(db: db)) } }
    }

    /// GRDB's `write` transaction (`BEGIN IMMEDIATE`, then `COMMIT`, or `ROLLBACK` when `body` or the
    /// commit throws) with its two statements prepared once per connection: GRDB prepares and finalizes
    /// both on every transaction (parsing them, running its statement authorizer), a fixed cost of every
    /// write transaction (docs/performance.md, "Fixed costs per transaction and per request").
    /// A transaction SQLite rolled back on its own after an error (a full disk, an I/O error) is not
    /// committed as if it held: no body here goes on after a failed statement (none catches a store
    /// error), and the check before `COMMIT` refuses the rest, as GRDB's own transaction block does.
    static func inTransaction<T>(_ db: Database, _ body: () throws -> T) throws -> T {
        try db.cachedStatement(sql: "BEGIN IMMEDIATE TRANSACTION").execute()
        do {
            let result = try body()
            guard db.isInsideTransaction else {
                throw DatabaseError(resultCode: .SQLITE_ABORT, message: "the transaction was rolled back by SQLite before its commit")
            }
            try db.cachedStatement(sql: "COMMIT TRANSACTION").execute()
            return result
        } catch {
            // A failed COMMIT may leave the transaction open (SQLITE_BUSY); some errors roll it back on
            // their own: `rollback` rolls back only what is still open, and the first error is thrown.
            try? db.rollback()
            throw error
        }
    }

    package func sideWrite<T>(_ side: StoreSideSession, _ body: (any StoreOperations) throws -> T) throws -> T {
        counters.transaction(side: true)
        // `write`'s transaction, with the mark set around its BEGIN and COMMIT too.
        return try pool.writeWithoutTransaction { db in
            sideWriting.active.store(true, ordering: .relaxed)
            defer { sideWriting.active.store(false, ordering: .relaxed) }
            return try Self.inTransaction(db) { try body(SQLiteOperations(db: db)) }
        }
    }

    package func read<T>(_ body: (any StoreOperations) throws -> T) throws -> T {
        try pool.read { db in try body(SQLiteOperations(db: db)) }
    }

    /// The jobs run straight in one transaction (a savepoint per job would cost two statements each, on
    /// every message). When one throws, the transaction is rolled back and the batch runs again with a
    /// savepoint per job, so that a job that throws rolls back only its own changes — a job's body may
    /// run twice (`BridgeStore.groupedTransaction`).
    package func writeBatch(_ jobs: [GroupedJob]) throws {
        counters.transaction()
        do {
            try pool.writeWithoutTransaction { db in
                try Self.inTransaction(db) {
                    let ops = SQLiteOperations(db: db)
                    for job in jobs { try job.run(ops) }
                }
            }
            return
        } catch {
            // Rolled back: run again job by job below, where each keeps its own error (a failed commit
            // fails there too and is thrown from there).
        }
        counters.transaction()
        try pool.write { db in
            let ops = SQLiteOperations(db: db)
            for job in jobs {
                job.error = nil
                do {
                    try db.inSavepoint {
                        try job.run(ops)
                        return .commit
                    }
                } catch {
                    job.error = error
                }
            }
        }
    }

    package func schemaVersion() throws -> Int {
        try pool.read { db in try SQLiteSchema.migrator.appliedIdentifiers(db).count }
    }

    package func isStoreFailure(_ error: any Error) -> Bool { error is DatabaseError }

    package func close() { try? pool.close() }
}
