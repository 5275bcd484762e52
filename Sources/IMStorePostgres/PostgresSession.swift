import Foundation
import Logging
import PostgresNIO
import Synchronization
import IMStoreCore

/// A value bound to a `$n` parameter.
package enum PostgresValue {
    case int(Int64)
    case text(String)
    case textOrNull(String?)
    case bytes(Data)
    case bool(Bool)
    case bools([Bool])
    case ints([Int64])
    case texts([String])
    case byteArrays([Data])
}

/// One connection, used by one thread at a time, opened on first use and after it was lost.
package final class PostgresSession: @unchecked Sendable {
    package static var group: any EventLoopGroup { PostgresConnection.defaultEventLoopGroup }
    package static let ids = Atomic<Int>(0)
    package let configuration: PostgresConnection.Configuration
    package let logger = Logger(label: "imbridge.store.postgres")
    private var connection: PostgresConnection?

    /// How long a statement (or opening a connection) may go unanswered (`PostgresSession.wait`).
    package let answerTimeout: TimeAmount

    /// Where this session's statements and transactions are counted (nil: the schema migration's).
    package let counters: StoreCounters?
    /// A side session's (`StoreSideSession`): counted among `StoreCounters.sideStatements` too.
    package let side: Bool

    package init(configuration: PostgresConnection.Configuration, answerTimeout: TimeAmount = PostgresSession.defaultAnswerTimeout,
         counters: StoreCounters? = nil, side: Bool = false) {
        self.configuration = configuration
        self.answerTimeout = answerTimeout
        self.counters = counters
        self.side = side
    }

    package var isConnected: Bool { connection.map { !$0.isClosed } ?? false }

    /// The connection the transaction in hand began on. Every statement of the transaction runs on it: a
    /// connection lost meanwhile (the server ended the session of a paused process as idle in transaction,
    /// a restart) took the transaction with it, and running the rest on a new connection would commit
    /// that rest statement by statement — half a transaction (an outbox row without its ledger row).
    private var transactionConnection: PostgresConnection?

    private func open() throws -> PostgresConnection {
        if let pinned = transactionConnection {
            guard !pinned.isClosed else {
                var lost = PostgresFailure(message: "postgres: the connection was lost inside a transaction; the server rolled it back")
                lost.rolledBack = true
                throw lost
            }
            return pinned
        }
        if let connection, !connection.isClosed { return connection }
        connection = nil
        do {
            let id = Self.ids.wrappingAdd(1, ordering: .relaxed).newValue
            let connecting = PostgresConnection.connect(on: Self.group.any(), configuration: configuration, id: id, logger: logger)
            let opened = try wait(for: connecting, what: "connecting") {
                connecting.whenSuccess { late in late.close().whenComplete { _ in _ = late } }
            }
            connection = opened
            return opened
        } catch {
            throw PostgresFailure(error)
        }
    }

    /// Runs one statement and returns its rows and the number of rows it changed.
    @discardableResult
    package func query(_ sql: String, _ values: [PostgresValue] = []) throws -> PostgresQueryResult {
        let connection = try open()
        counters?.statement(side: side)
        let binds = try Self.bindings(values)
        return try answer(connection) { connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: $0) }
    }

    /// Runs a named prepared statement (`PostgresPreparedStatement`: postgres-nio prepares it once per
    /// connection, then sends only its parameters) and returns its rows: for a statement run often whose
    /// planning costs the server as much as running it (`PostgresOperations.finishAll`). A statement
    /// sent by `query` is parsed and planned again each time.
    ///
    /// postgres-nio offers this only as an async call; it runs in a task on the connection's own event
    /// loop (`EventLoopTaskExecutor`), not on the cooperative pool, so that this thread's wait does not
    /// depend on a pool thread being free (callers of `BridgeStore.transaction` may be pool threads).
    package func execute<Statement: PostgresPreparedStatement>(_ statement: Statement) throws -> [PostgresRow] where Statement.Row == PostgresRow {
        let connection = try open()
        counters?.statement(side: side)
        return try answer(connection) { logger in
            let promise = connection.eventLoop.makePromise(of: [PostgresRow].self)
            Task(executorPreference: executor(for: connection.eventLoop)) {
                do {
                    var rows: [PostgresRow] = []
                    for try await row in try await connection.execute(statement, logger: logger) { rows.append(row) }
                    promise.succeed(rows)
                } catch {
                    promise.fail(error)
                }
            }
            return promise.futureResult
        }
    }

    /// The executor of `execute`'s tasks: one per event loop, kept (the connection stays on its loop).
    private var taskExecutor: EventLoopTaskExecutor?

    private func executor(for loop: any EventLoop) -> EventLoopTaskExecutor {
        if let taskExecutor, taskExecutor.loop === loop { return taskExecutor }
        let made = EventLoopTaskExecutor(loop)
        taskExecutor = made
        return made
    }

    package static func bindings(_ values: [PostgresValue]) throws -> PostgresBindings {
        var binds = PostgresBindings(capacity: values.count)
        for value in values {
            switch value {
            case .int(let v): binds.append(v)
            case .text(let v): binds.append(v)
            case .textOrNull(let v): binds.append(v)
            case .bytes(let v): try binds.append(v)
            case .bool(let v): binds.append(v)
            case .bools(let v): binds.append(v)
            case .ints(let v): binds.append(v)
            case .texts(let v): binds.append(v)
            case .byteArrays(let v): binds.append(v.map { ByteBuffer(bytes: $0) })
            }
        }
        return binds
    }

    /// Waits for a statement's answer (`wait`); a lost or timed-out connection is dropped (reopened next time).
    private func answer<T: Sendable>(_ connection: PostgresConnection, _ send: (Logger) -> EventLoopFuture<T>) throws -> T {
        do {
            return try wait(for: send(logger), what: "a statement") {
                connection.close().whenComplete { _ in _ = connection }
            }
        } catch {
            if connection.isClosed || error is AnswerTimeout { self.connection = nil }
            throw PostgresFailure(error)
        }
    }

    /// The default `answerTimeout` (schema migration uses a session with 30 minutes). Past it the connection is closed
    /// and the transaction in hand fails as unavailable (a callback answered 503, a lane retried): a
    /// connection whose server went away without closing it (a network cut, a host that died) would
    /// otherwise hold its caller — for the grouped writer, every write of the bridge — for ever, since
    /// postgres-nio sets no deadline of its own.
    package static let defaultAnswerTimeout = TimeAmount.seconds(30)

    package struct AnswerTimeout: Error, CustomStringConvertible {
        package var what: String
        package var after: TimeAmount
        package var description: String { "no answer from the server within \(after.nanoseconds / 1_000_000) ms (\(what)); connection closed" }
    }

    /// Waits for `future` on the calling thread for at most `answerTimeout`; `onTimeout` runs (on the
    /// future's event loop) when it gives up.
    package func wait<T: Sendable>(for future: EventLoopFuture<T>, what: String, onTimeout: @escaping @Sendable () -> Void) throws -> T {
        let (loop, after) = (future.eventLoop, answerTimeout)
        let promise = loop.makePromise(of: T.self)
        let timer = loop.scheduleTask(in: after) {
            onTimeout()
            promise.fail(AnswerTimeout(what: what, after: after))   // ignored when the answer came first
        }
        future.whenComplete { result in
            timer.cancel()
            promise.completeWith(result)
        }
        return try promise.futureResult.wait()
    }

    /// Runs `body` between BEGIN and COMMIT; rolls back when it throws.
    ///
    /// A transaction whose connection was lost before its COMMIT was sent — the server ended the session
    /// (`idle_in_transaction_session_timeout`, which every session sets: a process paused or starved of
    /// CPU for 2 s between two statements; a server restart) or the connection broke — was rolled back
    /// whole by the server, as at a restart. It runs once more, from the start, on a new connection
    /// (docs/high-availability.md, "A transaction the server ended"): `body` may run twice. Also when the
    /// server answers the COMMIT with the idle-in-transaction timeout (it ended the transaction before the
    /// COMMIT arrived). A COMMIT whose answer is lost otherwise is not run again: whether it took effect
    /// is unknown, and the caller's own retry decides (the ledger, the earlier-copy search).
    package func transaction<T>(_ body: () throws -> T) throws -> T {
        do {
            return try transactionOnce(body)
        } catch let lost as RolledBack {
            counters?.rerun()
            logger.warning("a transaction was ended by the server before its commit (rolled back); running it again on a new connection",
                           metadata: ["cause": "\(lost.cause)"])
            do {
                return try transactionOnce(body)
            } catch let again as RolledBack {
                throw again.cause
            }
        }
    }

    /// A transaction the server rolled back whole before its COMMIT (`transaction` runs it again once).
    package struct RolledBack: Error {
        package var cause: any Error
    }

    private func transactionOnce<T>(_ body: () throws -> T) throws -> T {
        counters?.transaction(side: side)
        do {
            try query("BEGIN")
        } catch {
            if !isConnected { throw RolledBack(cause: error) }   // nothing began: a connection found dead
            throw error
        }
        transactionConnection = connection
        defer { transactionConnection = nil }
        let value: T
        do {
            value = try body()
        } catch {
            // Whatever the body made of it (the grouped writer turns a statement's error into its own),
            // a connection lost before the COMMIT took the transaction with it.
            if transactionConnection?.isClosed ?? true { throw RolledBack(cause: error) }
            if isConnected { _ = try? query("ROLLBACK") }
            throw error
        }
        do {
            try query("COMMIT")
            return value
        } catch let failure as PostgresFailure where failure.rolledBack || failure.sqlState == PostgresFailure.idleInTransactionTimeout {
            throw RolledBack(cause: failure)
        } catch {
            if isConnected { _ = try? query("ROLLBACK") }
            throw error
        }
    }

    package func close() {
        if let connection { try? connection.close().wait() }
        connection = nil
    }

    /// A store dropped without `close()`: the connection is closed in the background (the closure keeps
    /// it alive until then; postgres-nio requires a connection to be closed before it is released).
    deinit {
        if let connection, !connection.isClosed {
            connection.close().whenComplete { _ in _ = connection }
        }
    }
}

/// A few sessions shared by the callers of `transaction` and `read`; a caller waits for a free one.
package final class PostgresSessionPool: Sendable {
    private let idle: Mutex<[PostgresSession]>
    private let available: DispatchSemaphore

    package init(configuration: PostgresConnection.Configuration, size: Int, counters: StoreCounters) {
        idle = Mutex((0..<size).map { _ in PostgresSession(configuration: configuration, counters: counters) })
        available = DispatchSemaphore(value: size)
    }

    package func with<T>(_ body: (PostgresSession) throws -> T) throws -> T {
        available.wait()
        let session = idle.withLock { $0.removeLast() }
        defer {
            idle.withLock { $0.append(session) }
            available.signal()
        }
        return try body(session)
    }

    package func closeAll() {
        for session in idle.withLock({ $0 }) { session.close() }
    }
}

/// A task executor that runs jobs on one NIO event loop (`PostgresSession.execute`). Written by hand:
/// the swift-nio version in use offers no `TaskExecutor` for an event loop.
package final class EventLoopTaskExecutor: TaskExecutor {
    package let loop: any EventLoop
    package init(_ loop: any EventLoop) { self.loop = loop }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        loop.execute { job.runSynchronously(on: executor) }
    }
}
