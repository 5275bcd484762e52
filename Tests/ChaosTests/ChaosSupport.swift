import Foundation
import GRDB
import IMCore
import Synchronization

/// A full disk under the bridge's SQLite store, staged from outside the process: triggers that make
/// every insert, update and delete fail with the message SQLite gives for SQLITE_FULL (the same
/// staging as `UnknownOutcomeTests`, on every table). The bridge's connection sees them at its next
/// statement (the schema changed).
enum StoreFull {
    static let tables = ["ledger", "outbox", "id_map", "checkpoints", "leases", "inbound_dead_letters"]

    static func set(_ full: Bool, _ path: String) async throws {
        var configuration = Configuration()
        // The running bridge writes the same file: wait for its write lock as its store does.
        configuration.busyMode = .timeout(10)
        let database = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? database.close() }
        try await database.write { db in
            for table in tables {
                for operation in ["INSERT", "UPDATE", "DELETE"] {
                    let name = "chaos_full_\(table)_\(operation.lowercased())"
                    if full {
                        try db.execute(sql: "CREATE TRIGGER IF NOT EXISTS \(name) BEFORE \(operation) ON \(table) BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
                    } else {
                        try db.execute(sql: "DROP TRIGGER IF EXISTS \(name)")
                    }
                }
            }
        }
    }
}

/// A flag shared between the fault runner and the healing step.
final class SharedFlag: Sendable {
    private let value = Mutex<(on: Bool, raised: Int)>((false, 0))
    func set(_ on: Bool) { value.withLock { if on, !$0.on { $0.raised += 1 }; $0.on = on } }
    func withLock<T>(_ body: (Bool) -> T) -> T { value.withLock { body($0.on) } }
    /// How often it was raised so far: whether it was up at some time between two reads.
    var raised: Int { value.withLock { $0.raised } }
}

/// The schedule as it was carried out, each line stamped with the time since the workload started.
final class Timeline: Sendable {
    private let state = Mutex<(start: Date?, lines: [String])>((nil, []))

    func start() { state.withLock { $0.start = Date() } }

    func note(_ line: String) {
        state.withLock { state in
            let stamp = state.start.map { String(format: "+%6.3fs", Date().timeIntervalSince($0)) } ?? "  setup "
            state.lines.append("\(stamp) \(line)")
        }
    }

    func sleep(untilMs ms: Int) async {
        guard let start = state.withLock({ $0.start }) else { return }
        let wait = start.addingTimeInterval(Double(ms) / 1000).timeIntervalSinceNow
        if wait > 0 { try? await Task.sleep(nanoseconds: UInt64(wait * 1_000_000_000)) }
    }

    var lines: [String] { state.withLock { $0.lines } }
}

extension Optional {
    func orThrow(_ message: String) throws -> Wrapped {
        guard let self else { throw IMError(.unavailable, message) }
        return self
    }
}

extension ChaosCampaign {
    static func poll(_ seconds: Double, _ condition: () async -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if await condition() { return true }
            try? await Task.sleep(nanoseconds: 250_000_000)
        }
        return await condition()
    }
}
