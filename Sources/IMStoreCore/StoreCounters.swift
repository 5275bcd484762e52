import Synchronization

/// What the store has done since it opened: statements sent to the database (on PostgreSQL each is a
/// round trip, `BEGIN` and `COMMIT` included; on SQLite each statement SQLite starts, triggers'
/// included) and write transactions run. Read by `/metrics` (`imbridge_store_statements_total`,
/// `imbridge_store_transactions_total`) and by the cost guard, which divides them by the messages
/// relayed (docs/performance.md, "Counted costs").
public final class StoreCounters: Sendable {
    private let statementCount = Atomic<Int>(0)
    private let transactionCount = Atomic<Int>(0)
    private let sideStatementCount = Atomic<Int>(0)
    private let sideTransactionCount = Atomic<Int>(0)
    private let rerunCount = Atomic<Int>(0)

    public init() {}

    public var statements: Int { statementCount.load(ordering: .relaxed) }
    public var transactions: Int { transactionCount.load(ordering: .relaxed) }
    /// Of `statements` and `transactions`, those run on a side session (`StoreSideSession`: the lease
    /// loop's renewals, the readiness probe's write), which come on their own clocks, not with the
    /// messages relayed.
    public var sideStatements: Int { sideStatementCount.load(ordering: .relaxed) }
    public var sideTransactions: Int { sideTransactionCount.load(ordering: .relaxed) }
    /// PostgreSQL transactions the server ended before their COMMIT, run again on a new connection
    /// (`PostgresSession.transaction`).
    public var transactionsRerun: Int { rerunCount.load(ordering: .relaxed) }

    package func statement(side: Bool = false) {
        statementCount.add(1, ordering: .relaxed)
        if side { sideStatementCount.add(1, ordering: .relaxed) }
    }

    package func rerun() { rerunCount.add(1, ordering: .relaxed) }

    package func transaction(side: Bool = false) {
        transactionCount.add(1, ordering: .relaxed)
        if side { sideTransactionCount.add(1, ordering: .relaxed) }
    }
}
