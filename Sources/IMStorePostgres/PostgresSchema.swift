import Foundation
import IMStoreCore

/// Versioned PostgreSQL schema, the same versions as `SQLiteSchema` (one per entry, applied in order,
/// recorded in `schema_migrations`). Append migrations; never edit one that shipped. Instances starting
/// together migrate one at a time (a transaction-scoped advisory lock).
package enum PostgresSchema {
    package static let migrations: [(name: String, sql: [String])] = [
        ("v1-ledger-outbox-idmap", [
            """
            CREATE TABLE ledger (
                backend TEXT NOT NULL,
                event_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                received_at BIGINT NOT NULL,
                PRIMARY KEY (backend, event_id)
            )
            """,
            """
            CREATE TABLE outbox (
                id BIGSERIAL PRIMARY KEY,
                lane TEXT NOT NULL,
                target_backend TEXT NOT NULL,
                source_backend TEXT NOT NULL,
                source_event_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                payload BYTEA NOT NULL,
                state TEXT NOT NULL DEFAULT 'pending',
                attempts BIGINT NOT NULL DEFAULT 0,
                next_attempt_at BIGINT NOT NULL DEFAULT 0,
                last_error TEXT,
                created_at BIGINT NOT NULL,
                finished_at BIGINT
            )
            """,
            "CREATE INDEX outbox_pending ON outbox (lane, id) WHERE state = 'pending'",
            "CREATE INDEX outbox_state ON outbox (state, id)",
            """
            CREATE TABLE id_map (
                from_backend TEXT NOT NULL,
                from_message TEXT NOT NULL,
                to_backend TEXT NOT NULL,
                to_message TEXT NOT NULL,
                to_conversation TEXT NOT NULL,
                bridge_created BOOLEAN NOT NULL,
                created_at BIGINT NOT NULL,
                PRIMARY KEY (from_backend, from_message, to_backend)
            )
            """,
            """
            CREATE TABLE checkpoints (
                name TEXT PRIMARY KEY,
                value TEXT NOT NULL,
                updated_at BIGINT NOT NULL
            )
            """,
        ]),
        ("v2-id-map-target-index", ["CREATE INDEX id_map_bridge_created ON id_map (to_backend, to_message) WHERE bridge_created"]),
        ("v3-prune-indexes", [
            "CREATE INDEX outbox_finished ON outbox (finished_at) WHERE state = 'done'",
            "CREATE INDEX ledger_received ON ledger (received_at)",
        ]),
        ("v4-leases", [
            """
            CREATE TABLE leases (
                name TEXT PRIMARY KEY,
                owner TEXT NOT NULL,
                expires_at BIGINT NOT NULL
            )
            """,
        ]),
        ("v5-inbound-dead-letters", [
            """
            CREATE TABLE inbound_dead_letters (
                id BIGSERIAL PRIMARY KEY,
                backend TEXT NOT NULL,
                item_key TEXT NOT NULL,
                format TEXT NOT NULL,
                payload BYTEA NOT NULL,
                reason TEXT NOT NULL,
                received_at BIGINT NOT NULL,
                retries BIGINT NOT NULL DEFAULT 0,
                UNIQUE (backend, item_key)
            )
            """,
        ]),
        ("v6-lease-tokens", ["ALTER TABLE leases ADD COLUMN token BIGINT NOT NULL DEFAULT 0"]),
        ("v7-expansion-keys", [
            """
            CREATE TABLE expansion_keys (
                backend TEXT NOT NULL,
                message TEXT NOT NULL,
                key TEXT NOT NULL,
                value TEXT,
                version BIGINT NOT NULL,
                origin TEXT NOT NULL,
                held TEXT,
                held_known BOOLEAN NOT NULL,
                held_at BIGINT NOT NULL,
                written TEXT,
                written_known BOOLEAN NOT NULL,
                PRIMARY KEY (backend, message, key)
            )
            """,
        ]),
        ("v8-id-map-source-time", [
            "ALTER TABLE id_map ADD COLUMN source_time BIGINT",
            "ALTER TABLE id_map ADD COLUMN source_sender TEXT",
            """
            CREATE INDEX id_map_source_window ON id_map (to_backend, to_conversation, source_time)
                WHERE NOT bridge_created AND source_time IS NOT NULL
            """,
        ]),
        ("v9-attempts", [
            """
            CREATE TABLE attempts (
                outbox_id BIGINT NOT NULL,
                attempt BIGINT NOT NULL,
                at BIGINT NOT NULL,
                outcome TEXT NOT NULL,
                error_class TEXT NOT NULL,
                error_code TEXT,
                vendor_code TEXT,
                error TEXT NOT NULL,
                retry_at BIGINT,
                instance TEXT NOT NULL,
                PRIMARY KEY (outbox_id, attempt, at)
            )
            """,
            "CREATE INDEX attempts_at ON attempts (at)",
        ]),
        ("v10-callback-marks", [
            """
            CREATE TABLE callback_marks (
                backend TEXT NOT NULL,
                mark TEXT NOT NULL,
                body_digest TEXT NOT NULL,
                expires_at BIGINT NOT NULL,
                PRIMARY KEY (backend, mark)
            )
            """,
            "CREATE INDEX callback_marks_expiry ON callback_marks (expires_at)",
        ]),
        ("v11-ledger-origin", [
            "ALTER TABLE ledger ADD COLUMN listener TEXT",
            "ALTER TABLE ledger ADD COLUMN instance TEXT",
        ]),
        ("v12-expansion-earlier-writes", [
            "ALTER TABLE expansion_keys ADD COLUMN written_earlier TEXT",
        ]),
    ]

    /// An arbitrary constant: the advisory lock key that serializes migrations.
    package static let lockKey: Int64 = 0x494D_4272_6964_6765

    package static func migrate(_ session: PostgresSession, schema: String?) throws {
        try session.transaction {
            try session.query("SELECT pg_advisory_xact_lock($1)", [.int(lockKey)])
            if let schema { try session.query("CREATE SCHEMA IF NOT EXISTS \"\(schema)\"") }
            try session.query("""
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)
                """)
            let applied = try appliedVersions(session)
            for (index, migration) in migrations.enumerated() where !applied.contains(index + 1) {
                for statement in migration.sql { try session.query(statement) }
                try session.query("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
                                  [.int(Int64(index + 1)), .text(migration.name), .int(Int64(Date().timeIntervalSince1970 * 1000))])
            }
        }
    }

    package static func appliedVersions(_ session: PostgresSession) throws -> Set<Int> {
        var versions: Set<Int> = []
        for row in try session.query("SELECT version FROM schema_migrations").rows {
            versions.insert(Int(try row.decode(Int32.self)))
        }
        return versions
    }
}
