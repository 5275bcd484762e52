import Foundation
import IMCore
import PostgresNIO
import IMStoreCore

/// Leases on PostgreSQL, counted on the server's clock (`serverNow`).
extension PostgresOperations {
    package func takeLease(_ name: String, owner: String, ttlMs: Int64, now: Int64, token: Int64) throws -> Int64? {
        try int("""
            INSERT INTO leases (name, owner, expires_at, token) VALUES ($1, $2, \(Self.serverNow) + $3, $4)
            ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at,
                token = CASE WHEN leases.owner = EXCLUDED.owner THEN leases.token ELSE EXCLUDED.token END
            WHERE leases.owner = EXCLUDED.owner OR leases.expires_at <= \(Self.serverNow)
            RETURNING token
            """, [.text(name), .text(owner), .int(ttlMs), .int(token)])
    }

    package func renewLeases(owner: String, ttlMs: Int64, now: Int64) throws -> [(name: String, token: Int64)] {
        try rows("UPDATE leases SET expires_at = \(Self.serverNow) + $1 WHERE owner = $2 RETURNING name, token", [.int(ttlMs), .text(owner)])
            .map { let (name, token) = try $0.decode((String, Int64).self); return (name: name, token: token) }
    }

    package func holds(_ fence: LeaseFence) throws -> Bool {
        try !rows("SELECT 1 FROM leases WHERE name = $1 AND owner = $2 AND token = $3",
                  [.text(fence.name), .text(fence.owner), .int(fence.token)]).isEmpty
    }

    package func releaseLease(_ name: String, owner: String) throws {
        try session.query("DELETE FROM leases WHERE name = $1 AND owner = $2", [.text(name), .text(owner)])
    }

    package func dropAllLeases() throws -> Int { try changed("DELETE FROM leases", []) }

    package func markLeases(_ names: [String], notOwnedBy owner: String) throws -> [String] {
        try rows("UPDATE leases SET token = CASE WHEN token = 9223372036854775807 THEN 1 ELSE token + 1 END WHERE name = ANY($1) AND owner <> $2 RETURNING name", [.texts(names), .text(owner)])
            .map { try $0.decode(String.self) }
    }

    package func leaseToken(_ name: String, owner: String) throws -> Int64? {
        try int("SELECT token FROM leases WHERE name = $1 AND owner = $2", [.text(name), .text(owner)])
    }

    package func releaseLease(_ name: String, owner: String, token: Int64) throws -> Bool {
        try changed("DELETE FROM leases WHERE name = $1 AND owner = $2 AND token = $3", [.text(name), .text(owner), .int(token)]) > 0
    }

    package func foreignLeases(prefix: String, notOwnedBy owner: String, limit: Int) throws -> [String] {
        try rows("SELECT name FROM leases WHERE left(name, $1::int) = $2 AND owner <> $3 LIMIT $4",
                 [.int(Int64(prefix.count)), .text(prefix), .text(owner), .int(Int64(limit))]).map { try $0.decode(String.self) }
    }

    package func leaseOwners(_ names: [String]) throws -> [String: String] {
        var owners: [String: String] = [:]
        for row in try rows("SELECT name, owner FROM leases WHERE name = ANY($1)", [.texts(names)]) {
            let (name, owner) = try row.decode((String, String).self)
            owners[name] = owner
        }
        return owners
    }

    package func leaseHolder(_ name: String, at now: Int64) throws -> String? {
        try rows("SELECT owner FROM leases WHERE name = $1 AND expires_at > \(Self.serverNow)", [.text(name)]).first.map { try $0.decode(String.self) }
    }
}
