import Foundation
import IMCore

/// Leases (docs/high-availability.md): who works a lane, the leader, and the fences of their tenures.
extension StoreTransaction {
    /// Takes the lease `name` for `owner` for `ttlMs` when it is free, expired, or already `owner`'s (then
    /// it is renewed); nil when another owner holds it unexpired. Expiry is counted on the store's clock:
    /// PostgreSQL's own (`clock_timestamp()`, the same for every instance, and read when the statement
    /// runs, not when the caller decided to run it); SQLite, which one machine uses, the caller's `now`.
    /// The returned fence names this tenure: its token is drawn anew whenever the lease changes owner,
    /// and kept while the same owner renews or re-takes it.
    public func takeLease(_ name: String, owner: String, ttlMs: Int64, now: Int64) throws -> LeaseFence? {
        try ops.takeLease(name, owner: owner, ttlMs: ttlMs, now: now, token: Int64.random(in: 1...Int64.max))
            .map { LeaseFence(name: name, owner: owner, token: $0) }
    }

    /// Extends every lease `owner` holds to `ttlMs` from now (the store's clock, see `takeLease`); returns
    /// the leases renewed — a lease another owner took over meanwhile is not among them.
    @discardableResult
    public func renewLeases(owner: String, ttlMs: Int64, now: Int64) throws -> [LeaseFence] {
        try ops.renewLeases(owner: owner, ttlMs: ttlMs, now: now).map { LeaseFence(name: $0.name, owner: owner, token: $0.token) }
    }

    /// Whether the tenure `fence` names still holds its lease: same owner, same token — nobody took the
    /// lease over since, so nobody else can have worked what it guards (even if it expired meanwhile).
    public func holds(_ fence: LeaseFence) throws -> Bool { try ops.holds(fence) }

    /// Gives the lease up (nothing happens when `owner` does not hold it).
    public func releaseLease(_ name: String, owner: String) throws { try ops.releaseLease(name, owner: owner) }

    /// Who holds the lease unexpired at `now` (nil: free); on PostgreSQL at the server's clock.
    public func leaseHolder(_ name: String, at now: Int64) throws -> String? { try ops.leaseHolder(name, at: now) }

    /// The owners of those of `names` that have a lease row, expired or not (a row an instance left
    /// behind when it died still says that its work under the lease was not finished).
    public func leaseOwners(_ names: [String]) throws -> [String: String] {
        names.isEmpty ? [:] : try ops.leaseOwners(names)
    }

    /// The names of up to `limit` lease rows whose name starts with `prefix` and whose owner is not
    /// `owner`, expired or not (as `leaseOwners`).
    public func foreignLeases(prefix: String, notOwnedBy owner: String, limit: Int) throws -> [String] {
        try ops.foreignLeases(prefix: prefix, notOwnedBy: owner, limit: limit)
    }

    /// Marks those of `names` another owner has a row for (expired or not) by moving their token, and
    /// returns them: the owner's `releaseLease(_:owner:token:)` then fails, telling it that somebody met
    /// its lease meanwhile. The row lock orders the mark and the release.
    public func markLeases(_ names: [String], notOwnedBy owner: String) throws -> [String] {
        names.isEmpty ? [] : try ops.markLeases(names, notOwnedBy: owner)
    }

    /// The token of `owner`'s row for `name` (nil: the owner has none, or it was taken over).
    public func leaseToken(_ name: String, owner: String) throws -> Int64? { try ops.leaseToken(name, owner: owner) }

    /// Gives the lease up only if its token is still `token` (not marked since); true when given up.
    public func releaseLease(_ name: String, owner: String, token: Int64) throws -> Bool {
        try ops.releaseLease(name, owner: owner, token: token)
    }

    /// Forgets every lease (whoever holds it); returns how many. Only for a store that one instance uses
    /// (SQLite): what a killed predecessor held is then free at once instead of after its expiry.
    @discardableResult
    public func dropAllLeases() throws -> Int { try ops.dropAllLeases() }
}
