import GRDB
import IMStoreCore

/// Versioned SQLite schema. Append migrations; never edit one that shipped. `PostgresSchema` carries
/// the same versions, so both implementations report the same `schemaVersion()`.
package enum SQLiteSchema {
    package static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-ledger-outbox-idmap") { db in
            try db.execute(sql: """
                CREATE TABLE ledger (
                    backend TEXT NOT NULL,
                    event_id TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    received_at INTEGER NOT NULL,
                    PRIMARY KEY (backend, event_id)
                ) WITHOUT ROWID;

                CREATE TABLE outbox (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    lane TEXT NOT NULL,
                    target_backend TEXT NOT NULL,
                    source_backend TEXT NOT NULL,
                    source_event_id TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    payload BLOB NOT NULL,
                    state TEXT NOT NULL DEFAULT 'pending',
                    attempts INTEGER NOT NULL DEFAULT 0,
                    next_attempt_at INTEGER NOT NULL DEFAULT 0,
                    last_error TEXT,
                    created_at INTEGER NOT NULL,
                    finished_at INTEGER
                );
                CREATE INDEX outbox_pending ON outbox (lane, id) WHERE state = 'pending';
                CREATE INDEX outbox_state ON outbox (state, id);

                CREATE TABLE id_map (
                    from_backend TEXT NOT NULL,
                    from_message TEXT NOT NULL,
                    to_backend TEXT NOT NULL,
                    to_message TEXT NOT NULL,
                    to_conversation TEXT NOT NULL,
                    bridge_created INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY (from_backend, from_message, to_backend)
                ) WITHOUT ROWID;

                CREATE TABLE checkpoints (
                    name TEXT PRIMARY KEY NOT NULL,
                    value TEXT NOT NULL,
                    updated_at INTEGER NOT NULL
                ) WITHOUT ROWID;
                """)
        }
        // `isBridgeCreated` runs for every inbound message inside the ingest transaction; without an
        // index on the target side it scanned the whole id map (two rows per relayed message) while
        // holding the writer, so relaying slowed down as history grew.
        migrator.registerMigration("v2-id-map-target-index") { db in
            try db.execute(sql: "CREATE INDEX id_map_bridge_created ON id_map (to_backend, to_message) WHERE bridge_created = 1")
        }
        // Pruning (`StoreTransaction.prune`) deletes the oldest finished outbox rows and ledger rows;
        // these indexes let it find them without scanning what it keeps.
        migrator.registerMigration("v3-prune-indexes") { db in
            try db.execute(sql: """
                CREATE INDEX outbox_finished ON outbox (finished_at) WHERE state = 'done';
                CREATE INDEX ledger_received ON ledger (received_at);
                """)
        }
        // Leases (docs/high-availability.md): which bridge instance works a lane, and which one is the
        // leader (pollers, pruning). A single SQLite instance holds them all; the table keeps the engine's
        // code the same on both implementations.
        migrator.registerMigration("v4-leases") { db in
            try db.execute(sql: """
                CREATE TABLE leases (
                    name TEXT PRIMARY KEY NOT NULL,
                    owner TEXT NOT NULL,
                    expires_at INTEGER NOT NULL
                ) WITHOUT ROWID;
                """)
        }
        // Inbound dead letters (poison messages): authenticated inbound messages that did not convert,
        // kept with their raw bytes and the reason until retried; one row per (backend, item_key), so a
        // redelivered poison message is kept once.
        migrator.registerMigration("v5-inbound-dead-letters") { db in
            try db.execute(sql: """
                CREATE TABLE inbound_dead_letters (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    backend TEXT NOT NULL,
                    item_key TEXT NOT NULL,
                    format TEXT NOT NULL,
                    payload BLOB NOT NULL,
                    reason TEXT NOT NULL,
                    received_at INTEGER NOT NULL,
                    retries INTEGER NOT NULL DEFAULT 0,
                    UNIQUE (backend, item_key)
                );
                """)
        }
        // Fencing tokens (docs/high-availability.md, "Fenced deliveries"): each tenure of a lease carries a
        // token that writes only its holder may make check.
        migrator.registerMigration("v6-lease-tokens") { db in
            try db.execute(sql: "ALTER TABLE leases ADD COLUMN token INTEGER NOT NULL DEFAULT 0")
        }
        // Expansion convergence (docs/expansions.md): per copy of a message and key, the converged value
        // and its version, what the copy holds and what the bridge last wrote to it.
        migrator.registerMigration("v7-expansion-keys") { db in
            try db.execute(sql: """
                CREATE TABLE expansion_keys (
                    backend TEXT NOT NULL,
                    message TEXT NOT NULL,
                    key TEXT NOT NULL,
                    value TEXT,
                    version INTEGER NOT NULL,
                    origin TEXT NOT NULL,
                    held TEXT,
                    held_known INTEGER NOT NULL,
                    held_at INTEGER NOT NULL,
                    written TEXT,
                    written_known INTEGER NOT NULL,
                    PRIMARY KEY (backend, message, key)
                ) WITHOUT ROWID;
                """)
        }
        // The source message's own time and sender on both rows of a relayed message, so that catch-up can list the
        // messages it relayed from a source conversation since a time and compare them with that source's
        // history (docs/architecture.md, "Catch-up of changes"). Rows written before stay NULL.
        migrator.registerMigration("v8-id-map-source-time") { db in
            try db.execute(sql: """
                ALTER TABLE id_map ADD COLUMN source_time INTEGER;
                ALTER TABLE id_map ADD COLUMN source_sender TEXT;
                CREATE INDEX id_map_source_window ON id_map (to_backend, to_conversation, source_time)
                    WHERE bridge_created = 0 AND source_time IS NOT NULL;
                """)
        }
        // Failed attempts of outbox entries (retried, requeued, buried), for `imbridge trace`
        // (docs/operations.md, "Where is my message"); a delivered entry's last attempt is its outbox row.
        migrator.registerMigration("v9-attempts") { db in
            try db.execute(sql: """
                CREATE TABLE attempts (
                    outbox_id INTEGER NOT NULL,
                    attempt INTEGER NOT NULL,
                    at INTEGER NOT NULL,
                    outcome TEXT NOT NULL,
                    error_class TEXT NOT NULL,
                    error_code TEXT,
                    vendor_code TEXT,
                    error TEXT NOT NULL,
                    retry_at INTEGER,
                    instance TEXT NOT NULL,
                    PRIMARY KEY (outbox_id, attempt, at)
                ) WITHOUT ROWID;
                CREATE INDEX attempts_at ON attempts (at);
                """)
        }
        // Callback marks (docs/operations.md, "Forged and replayed callbacks"): the signature of each callback
        // whose signature does not cover its body, with a digest of that body, until its timestamp is stale.
        migrator.registerMigration("v10-callback-marks") { db in
            try db.execute(sql: """
                CREATE TABLE callback_marks (
                    backend TEXT NOT NULL,
                    mark TEXT NOT NULL,
                    body_digest TEXT NOT NULL,
                    expires_at INTEGER NOT NULL,
                    PRIMARY KEY (backend, mark)
                );
                CREATE INDEX callback_marks_expiry ON callback_marks (expires_at);
                """)
        }
        // Who took each inbound event in (docs/operations.md, "Where is my message: `imbridge trace`"): the
        // listener's address or `poll`, `catch-up` …, and the instance; columns of the ledger row the intake
        // transaction writes anyway, so they cost no extra write and go with it when it is pruned. Rows
        // written before stay NULL (`imbridge trace` shows `unknown`).
        migrator.registerMigration("v11-ledger-origin") { db in
            try db.execute(sql: """
                ALTER TABLE ledger ADD COLUMN listener TEXT;
                ALTER TABLE ledger ADD COLUMN instance TEXT;
                """)
        }
        // The bridge's earlier writes of an expansion key still awaiting their echoes (`ExpansionKeyRecord.earlierWrites`,
        // docs/expansions.md, "Convergence"): a JSON array, NULL when there are none.
        migrator.registerMigration("v12-expansion-earlier-writes") { db in
            try db.execute(sql: "ALTER TABLE expansion_keys ADD COLUMN written_earlier TEXT")
        }
        return migrator
    }
}
