import Foundation
import IMCore
@_exported import IMStoreCore
import IMStorePostgres

/// The bridge's durable state: the inbound ledger, the outbox, the message-id map, dead letters,
/// checkpoints and leases. Where it lives is the `store:` setting (`StoreLocation`): a file path keeps
/// the embedded SQLite store (`SQLiteDriver`), `postgres://user@host:port/db` selects PostgreSQL
/// (`PostgresDriver`), which several bridge instances can share (docs/high-availability.md). Schema
/// changes go through versioned migrations on both (`SQLiteSchema`, `PostgresSchema`).
///
/// Contract (the same on both implementations; Tests/IMStoreTests runs one suite against each):
/// - `transaction` runs its body in one write transaction: a callback's ledger rows and outbox rows
///   commit together or not at all, and only after it returns may the callback be answered.
/// - The ledger key is (backend, eventID): recording an event twice reports a duplicate.
/// - Outbox entries of one lane are taken strictly in insertion order; a lane whose head is waiting
///   for a retry is skipped until its time comes, other lanes are not held up.
/// - The id map is written in both directions, so an event about either side finds the other.
/// - A lease (`takeLease`) is held by one owner at a time until it expires.
/// - A failure of the store itself (file, server, connection) is a retryable `IMError(.unavailable)`;
///   errors thrown by a body pass through unchanged.
public final class BridgeStore: Sendable {
    let driver: any StoreDriver
    let writer: GroupedWriter
    let sideQueues = Dictionary(uniqueKeysWithValues: StoreSideSession.allCases.map { ($0, DispatchQueue(label: "imbridge.store.\($0.rawValue)")) })
    /// Where the store is, with any password removed (safe to print).
    public let location: String
    /// The SQLite file path, or the redacted PostgreSQL URL (`location`).
    public var path: String { location }
    public let kind: StoreLocation.Kind
    /// Statements and transactions run so far (`StoreCounters`).
    public let counters = StoreCounters()

    /// Opens (creating or migrating when needed) the store at `location`: a file path or a
    /// `postgres://` URL (see `StoreLocation`). The password may also come from the environment variable
    /// `IMBRIDGE_STORE_PASSWORD`.
    public convenience init(path location: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        try self.init(location: try StoreLocation(parsing: location, environment: environment))
    }

    public init(location: StoreLocation) throws {
        switch location.kind {
        case .sqlite: driver = try SQLiteDriver(path: location.path, counters: counters)
        case .postgres: driver = try PostgresDriver(location, counters: counters)
        }
        self.kind = location.kind
        self.location = location.redacted
        writer = GroupedWriter(driver: driver)
    }

    /// Runs `body` in one write transaction. On PostgreSQL `body` may run twice: a transaction the
    /// server ended before its COMMIT (rolled back whole) runs again once on a new connection
    /// (docs/high-availability.md, "A transaction the server ended"); effects outside the transaction
    /// must be idempotent.
    public func transaction<T>(_ body: (StoreTransaction) throws -> T) throws -> T {
        try wrap { try driver.write { try body(StoreTransaction($0)) } }
    }

    /// Runs `body` in a write transaction shared with the other grouped writes submitted meanwhile
    /// (group commit, see `GroupedWriter`), on the store's own writer queue, not the caller's thread.
    /// If `body` throws, only its changes are rolled back. Returns after the transaction committed.
    /// `body` may run more than once (a PostgreSQL batch in which another body failed is run again
    /// without it, and one the server ended before its COMMIT is run again whole): it must have no
    /// effects outside the transaction but idempotent ones.
    public func groupedTransaction<T: Sendable>(_ body: @escaping @Sendable (StoreTransaction) throws -> T) async throws -> T {
        do {
            return try await writer.write { try body(StoreTransaction($0)) }
        } catch {
            throw mapped(error)
        }
    }

    /// `StoreTransaction.finish` through the group commit, alone in its body: on PostgreSQL the finishes
    /// of one batch (the lanes completing at the same time) run in one statement — one round trip for
    /// all of them instead of one each — with the same outcome for each as when run alone
    /// (`LeaseLost` included).
    public func finish(_ step: StoreTransaction.Finish) async throws -> OutboxEntry? {
        do {
            return try await writer.finish(step)
        } catch {
            throw mapped(error)
        }
    }

    /// Grouped writes submitted and not yet taken into a batch.
    @_spi(Testing) public var queuedGroupedWrites: Int { writer.queued }

    /// Runs `body` in a write transaction of its own on the session kept for `side` (PostgreSQL: a
    /// connection of its own; SQLite: the one writer), on a dispatch queue of its own — not behind the
    /// grouped writer, so a relay stuck on a lock does not hold lease renewal or the readiness probe up.
    public func sideTransaction<T: Sendable>(_ side: StoreSideSession, _ body: @escaping @Sendable (StoreTransaction) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            sideQueues[side]!.async { [self] in
                continuation.resume(with: Result { try wrap { try driver.sideWrite(side) { try body(StoreTransaction($0)) } } })
            }
        }
    }

    /// Runs `body` with a read-only view, on the calling thread (for synchronous callers: the CLI's
    /// commands, tests). Async code uses `reading`.
    public func read<T>(_ body: (StoreTransaction) throws -> T) throws -> T {
        try wrap { try driver.read { try body(StoreTransaction($0)) } }
    }

    /// `read` for async code. On PostgreSQL the body runs on the store's reader queue, not on the
    /// caller's thread: its statements wait for the server (up to the answer timeout when the server
    /// has stopped answering), and a task that waited on a thread of the cooperative pool — as many
    /// threads as cores — would keep every other task of the process from running meanwhile, the
    /// shutdown's deadlines included (docs/reliability.md, Finding 13). SQLite reads a local file
    /// without waiting for a writer (WAL), so its reads run in place: no thread hop per read.
    nonisolated(nonsending) public func reading<T: Sendable>(_ body: @escaping @Sendable (StoreTransaction) throws -> T) async throws -> T {
        guard kind == .postgres else { return try read(body) }
        return try await offThePool { [self] in try read(body) }
    }

    /// `transaction` for async code, off the cooperative pool on PostgreSQL as `reading` is (a write of
    /// its own, not grouped: for the few writes whose caller needs them outside the group commit).
    nonisolated(nonsending) public func writing<T: Sendable>(_ body: @escaping @Sendable (StoreTransaction) throws -> T) async throws -> T {
        guard kind == .postgres else { return try transaction(body) }
        return try await offThePool { [self] in try transaction(body) }
    }

    private func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Self.readers.async { continuation.resume(with: Result { try work() }) }
        }
    }

    /// Where `reading` and `writing` wait for PostgreSQL: concurrent (the session pool bounds how many
    /// reach the server at once; the others wait for a free session here, not on the cooperative pool).
    static let readers = DispatchQueue(label: "imbridge.store.readers", attributes: .concurrent)

    /// Store failures become a retryable `IMError(.unavailable)`; errors thrown by the body pass through.
    func wrap<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            throw mapped(error)
        }
    }

    func mapped(_ error: any Error) -> any Error {
        guard driver.isStoreFailure(error) else { return error }
        return IMError(.unavailable, "store: \(PostgresDriver.describe(error))", isRetryable: true)
    }

    /// The schema version the store is at (the number of applied migrations).
    public func schemaVersion() throws -> Int {
        try wrap { try driver.schemaVersion() }
    }

    /// Closes the store's connections.
    public func close() { driver.close() }
}
