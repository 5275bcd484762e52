import Foundation
import GRDB
import IMCore

/// The embedded implementation: one SQLite file (WAL), one bridge instance. Schema: `SQLiteSchema`.
final class SQLiteDriver: StoreDriver {
    let pool: DatabasePool
    let path: String

    init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            try SQLiteSchema.migrator.migrate(pool)
        } catch {
            throw IMError(.unavailable, "cannot open store \(path): \(error)", isRetryable: false)
        }
        self.path = path
    }

    func write<T>(_ body: (any StoreOperations) throws -> T) throws -> T {
        try pool.write { db in try body(SQLiteOperations(db: db)) }
    }

    func read<T>(_ body: (any StoreOperations) throws -> T) throws -> T {
        try pool.read { db in try body(SQLiteOperations(db: db)) }
    }

    /// Each job runs in a savepoint of its own: a job that throws rolls back only its own changes.
    func writeBatch(_ jobs: [GroupedJob]) throws {
        try pool.write { db in
            let ops = SQLiteOperations(db: db)
            for job in jobs {
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

    func schemaVersion() throws -> Int {
        try pool.read { db in try SQLiteSchema.migrator.appliedIdentifiers(db).count }
    }

    func isStoreFailure(_ error: any Error) -> Bool { error is DatabaseError }

    func close() { try? pool.close() }
}
