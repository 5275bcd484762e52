import Foundation
import GRDB
import IMCore

/// A sandbox's state kept in one SQLite file (`imbridge sandbox <vendor> --state FILE.sqlite`): named
/// JSON snapshots, one row each, replaced whole on every save.
///
/// Contract: `save` commits before it returns (a sandbox saves after each change it answers, so a
/// restarted sandbox serves what it acknowledged); `load` returns nil for a name never saved; a file
/// that cannot be opened or a snapshot that does not decode throws `IMError(.unavailable)`.
public final class SandboxStateFile: Sendable {
    let queue: DatabaseQueue
    public let path: String

    public init(path: String) throws {
        do {
            queue = try DatabaseQueue(path: path)
            try queue.write { db in
                try db.execute(sql: """
                    CREATE TABLE IF NOT EXISTS sandbox_state (name TEXT PRIMARY KEY NOT NULL, json BLOB NOT NULL)
                    """)
            }
        } catch {
            throw IMError(.unavailable, "cannot open sandbox state \(path): \(error)", isRetryable: false)
        }
        self.path = path
    }

    public func load<T: Decodable>(_ type: T.Type, name: String) throws -> T? {
        do {
            guard let data = try queue.read({ db in try Data.fetchOne(db, sql: "SELECT json FROM sandbox_state WHERE name = ?", arguments: [name]) })
            else { return nil }
            return try JSONDecoder().decode(T.self, from: data)
        } catch {
            throw IMError(.unavailable, "sandbox state \(path) '\(name)': \(error)", isRetryable: false)
        }
    }

    public func save<T: Encodable>(_ value: T, name: String) throws {
        do {
            let data = try JSONEncoder().encode(value)
            try queue.write { db in
                try db.execute(sql: "INSERT OR REPLACE INTO sandbox_state (name, json) VALUES (?, ?)", arguments: [name, data])
            }
        } catch {
            throw IMError(.unavailable, "cannot save sandbox state \(path) '\(name)': \(error)", isRetryable: true)
        }
    }
}
