import Foundation
import IMCore
import Logging
import PostgresNIO
import IMStoreCore

/// The shared implementation: a PostgreSQL database that one or more bridge instances use at once
/// (docs/high-availability.md). Schema: `PostgresSchema`.
///
/// The store's API is synchronous (transaction bodies are plain closures), postgres-nio's is
/// asynchronous: each query is sent on a `PostgresConnection` and its future is waited for on the
/// calling thread — the grouped writer's dispatch queue, or the caller of `transaction`/`read` — never on
/// an event loop thread (those run the connections). A connection serves one caller at a time
/// (`PostgresSessionPool`); the grouped writer has one of its own.
///
/// A connection lost before a transaction's COMMIT was sent (the server ended the session — its 2 s
/// idle-in-transaction limit on a paused or starved process, a restart — or the network) took the
/// transaction with it, rolled back: it runs again once, whole, on a new connection
/// (`PostgresSession.transaction`). Otherwise a lost connection fails the transaction in hand with a
/// retryable `IMError(.unavailable)` (a callback is answered 503) and is reopened by the next transaction.
package final class PostgresDriver: StoreDriver {
    package let location: StoreLocation
    package let pool: PostgresSessionPool
    package let writerSession: PostgresSession

    /// The sessions of `sideWrite`: lease renewal and the readiness probe, each on a connection of its
    /// own, so that neither waits behind the grouped writer (which a lock held by a stranded transaction of
    /// another instance may keep waiting up to `lock_timeout`), nor behind the other.
    package let sideSessions: [StoreSideSession: PostgresSession]
    package let counters: StoreCounters

    package init(_ location: StoreLocation, counters: StoreCounters) throws {
        self.counters = counters
        self.location = location
        var configuration = PostgresConnection.Configuration(host: location.host, port: location.port, username: location.user,
                                                             password: location.password, database: location.database, tls: .disable)
        configuration.options.connectTimeout = .seconds(3)
        let searchPath = location.schema.map { [("search_path", $0)] } ?? []
        func settings(_ limits: SessionLimits) -> PostgresConnection.Configuration {
            var configured = configuration
            configured.options.additionalStartupParameters = searchPath + limits.startupParameters
            return configured
        }
        pool = PostgresSessionPool(configuration: settings(.standard), size: 4, counters: counters)
        writerSession = PostgresSession(configuration: settings(.standard), counters: counters)
        sideSessions = [
            .leases: PostgresSession(configuration: settings(.standard), counters: counters, side: true),
            .probe: PostgresSession(configuration: settings(.probe), answerTimeout: .milliseconds(SessionLimits.probe.statementMs + 200),
                                    counters: counters, side: true),
        ]
        do {
            // A schema step may build an index over a large table, or wait for another instance's
            // migration: its own session, with a long deadline and no statement or lock limit.
            let migrator = PostgresSession(configuration: settings(.migration), answerTimeout: .minutes(30))
            defer { migrator.close() }
            try PostgresSchema.migrate(migrator, schema: location.schema)
        } catch {
            throw IMError(.unavailable, "cannot open store \(location.redacted): \(Self.describe(error))", isRetryable: false)
        }
    }

    /// What each session asks the server for at connection time (docs/high-availability.md, "A frozen
    /// instance"). A transaction left open by an instance that stopped (SIGSTOP, a VM paused, a debugger)
    /// keeps its row locks until the server ends it: `idle_in_transaction_session_timeout` ends it after
    /// 2 s, and no statement of ours waits for a lock longer than `lock_timeout` (it fails as unavailable
    /// and is retried), so one frozen instance holds the others up for about 2 s, not for as long as it
    /// stays frozen.
    package struct SessionLimits {
        package var lockMs: Int64
        package var statementMs: Int64
        package var idleInTransactionMs: Int64

        package static let standard = SessionLimits(lockMs: 2_000, statementMs: 15_000, idleInTransactionMs: 2_000)
        /// The readiness probe answers within a second, stuck store or not.
        package static let probe = SessionLimits(lockMs: 500, statementMs: 700, idleInTransactionMs: 2_000)
        package static let migration = SessionLimits(lockMs: 0, statementMs: 0, idleInTransactionMs: 0)

        package var startupParameters: [(String, String)] {
            [("application_name", "imbridge pid=\(ProcessInfo.processInfo.processIdentifier)"),
             ("lock_timeout", "\(lockMs)"), ("statement_timeout", "\(statementMs)"),
             ("idle_in_transaction_session_timeout", "\(idleInTransactionMs)")]
        }
    }

    package func sideWrite<T>(_ side: StoreSideSession, _ body: (any StoreOperations) throws -> T) throws -> T {
        let session = sideSessions[side]!
        return try session.transaction { try body(PostgresOperations(session: session)) }
    }

    package func write<T>(_ body: (any StoreOperations) throws -> T) throws -> T {
        try pool.with { session in try session.transaction { try body(PostgresOperations(session: session)) } }
    }

    /// Reads run statement by statement (autocommit), each seeing what was committed when it started.
    package func read<T>(_ body: (any StoreOperations) throws -> T) throws -> T {
        try pool.with { session in try body(PostgresOperations(session: session)) }
    }

    /// The jobs run in one transaction without savepoints (each would cost two round trips). When a
    /// job throws, the transaction is rolled back, that job keeps its error, and the batch runs again
    /// without it — so a job's body may run more than once (see `BridgeStore.groupedTransaction`); so
    /// does a batch whose transaction the server ended before its COMMIT (`PostgresSession.transaction`).
    ///
    /// The lanes' finishes among the jobs (`GroupedJob.finish`) run after the other jobs, all in one
    /// statement (`PostgresOperations.finishAll`, prepared once per connection): one round trip instead
    /// of one per lane. Running them after the others is an order the submitters cannot tell from the
    /// submitted one — each was submitted while the others were waiting, none had seen another's
    /// commit — and a finish run later only sees more of its lane (an entry queued meanwhile is claimed
    /// rather than woken for). A finish whose tenure no longer holds its lease writes nothing there and
    /// gets `LeaseLost`, as it would alone. When that statement fails, the batch runs again with each
    /// finish on its own, which tells the failing one from the others.
    ///
    /// A batch of finishes only (a lane completing while nothing else is written: the common case under
    /// a steady flow) is that one statement alone, without BEGIN and COMMIT: a statement outside a
    /// transaction is atomic and committed (durably, as COMMIT is) before its answer comes — one round
    /// trip for the batch instead of three.
    package func writeBatch(_ jobs: [GroupedJob]) throws {
        var live = jobs
        var combine = true
        let finishes = Self.combinableFinishes(jobs)
        if finishes.count == jobs.count {
            counters.transaction()
            if try finishTogether(finishes, PostgresOperations(session: writerSession)) { return }
            combine = false   // nothing of it took effect: the batch runs below, each finish alone
        }
        while !live.isEmpty {
            let combined = combine ? Self.combinableFinishes(live) : []
            let singles = combined.isEmpty ? live : live.filter { $0.finish == nil }
            var failed: GroupedJob?
            do {
                try writerSession.transaction {
                    // Run again from here when the server ended the transaction before its COMMIT.
                    failed = nil
                    for job in singles + combined { job.error = nil }
                    let ops = PostgresOperations(session: writerSession)
                    for job in singles {
                        do {
                            try job.run(ops)
                        } catch {
                            job.error = error
                            failed = job
                            throw BatchAborted()
                        }
                    }
                    guard try combined.isEmpty || finishTogether(combined, ops) else { throw BatchAborted() }
                }
                return
            } catch is BatchAborted {
                guard let failed else {
                    combine = false   // the combined finishes failed: each on its own next time
                    continue
                }
                if failed.error is PostgresFailure, !writerSession.isConnected {
                    throw failed.error!   // the connection is gone: the whole batch fails
                }
                live.removeAll { $0 === failed }
            }
        }
    }

    /// Runs `jobs`' finishes in one statement and hands each its outcome (`LeaseLost` as its error).
    /// False when the statement failed on a live connection (nothing of it took effect); throws when the
    /// connection is gone (the whole batch fails).
    private func finishTogether(_ jobs: [GroupedJob], _ ops: PostgresOperations) throws -> Bool {
        let outcomes: [PostgresOperations.FinishOutcome]
        do {
            outcomes = try ops.finishAll(jobs.map { $0.finish! })
        } catch {
            if !writerSession.isConnected { throw error }
            writerSession.logger.debug("the lanes' combined finish failed; each runs alone", metadata: ["error": "\(error)"])
            return false
        }
        for (job, outcome) in zip(jobs, outcomes) {
            switch outcome {
            case .next(let entry): job.finished!(entry)
            case .lost: job.error = StoreTransaction.LeaseLost(fence: job.finish!.fence)
            }
        }
        return true
    }

    /// The finishes among `jobs` that can share one statement: none when two would touch the same lane,
    /// entry or id-map row (one statement cannot change a row twice).
    package static func combinableFinishes(_ jobs: [GroupedJob]) -> [GroupedJob] {
        let finishes = jobs.filter { $0.finish != nil }
        var lanes: Set<LaneKey> = [], ids: Set<Int64> = [], mapped: Set<String> = []
        for step in finishes.map({ $0.finish! }) {
            guard lanes.insert(step.lane).inserted, ids.insert(step.id).inserted else { return [] }
            if let mapping = step.mapping {
                let forward = "\(mapping.source.0)\u{0}\(mapping.source.1)\u{0}\(mapping.target.0)"
                let backward = "\(mapping.target.0)\u{0}\(mapping.target.1)\u{0}\(mapping.source.0)"
                guard mapped.insert(forward).inserted, mapped.insert(backward).inserted else { return [] }
            }
        }
        return finishes
    }

    package struct BatchAborted: Error {}

    package func schemaVersion() throws -> Int {
        try pool.with { session in try PostgresSchema.appliedVersions(session).count }
    }

    package func isStoreFailure(_ error: any Error) -> Bool { error is PostgresFailure }

    package func close() {
        pool.closeAll()
        writerSession.close()
        for session in sideSessions.values { session.close() }
    }

    /// A printable description of a store error (no password: connections errors do not carry it).
    package static func describe(_ error: any Error) -> String {
        if let failure = error as? PostgresFailure { return failure.message }
        return "\(error)"
    }
}

/// A failure of the PostgreSQL store itself (connection, server, SQL), as opposed to a body's error.
package struct PostgresFailure: Error, CustomStringConvertible {
    package var message: String
    package var description: String { message }
    /// The server's SQLSTATE, when the server answered with an error.
    package var sqlState: String?
    /// Known to have been rolled back: the transaction's connection was found closed before the next
    /// statement was sent (`PostgresSession.transaction` runs such a transaction again once).
    package var rolledBack = false

    /// `idle_in_transaction_session_timeout` ended the session: its open transaction was rolled back.
    package static let idleInTransactionTimeout = "25P03"

    package init(_ error: any Error) {
        if let psql = error as? PSQLError {
            var text = "postgres: \(psql.code)"
            sqlState = psql.serverInfo?[.sqlState]
            if let server = psql.serverInfo {
                text += " \(server[.sqlState] ?? ""): \(server[.message] ?? "")"
                if let detail = server[.detail] { text += " (\(detail))" }
            }
            if let underlying = psql.underlying { text += " (\(underlying))" }
            message = text
        } else {
            message = "postgres: \(error)"
        }
    }

    package init(message: String) { self.message = message }
}
