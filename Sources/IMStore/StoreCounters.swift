import Synchronization

/// What the store has done since it opened: statements sent to the database (on PostgreSQL each is a
/// round trip, `BEGIN` and `COMMIT` included; on SQLite each statement SQLite starts, triggers'
/// included) and write transactions run. Read by `/metrics` (`imbridge_store_statements_total`,
/// `imbridge_store_transactions_total`) and by the cost guard, which divides them by the messages
/// relayed (docs/performance.md, "Counted costs").
public final class StoreCounters: Sendable {
    private let statementCount = Atomic<Int>(0)
    private let transactionCount = Atomic<Int>(0)

    public init() {}

    public var statements: Int { statementCount.load(ordering: .relaxed) }
    public var transactions: Int { transactionCount.load(ordering: .relaxed) }

    func statement() { statementCount.add(1, ordering: .relaxed) }
    func transaction() { transactionCount.add(1, ordering: .relaxed) }
}
