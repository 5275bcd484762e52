import Foundation
import Synchronization

/// How a bridge instance takes part in leasing (docs/high-availability.md): its owner name, unique per
/// process, and how long a lease lasts without renewal — the bound on how long a dead instance's lanes,
/// pollers and pruning wait before another instance takes them over.
public struct LeaseSettings: Sendable, Equatable {
    /// Default lease: 8 s, renewed every third of it; a takeover happens within lease + 1 s (the
    /// scheduler's longest scan interval), so within 10 s.
    public static let defaultTTLMs: Int64 = 8_000
    /// The lease name of the leader (pollers and pruning run on the leader only).
    public static let leaderLease = "leader"

    public var owner: String
    public var ttlMs: Int64

    public init(owner: String = LeaseSettings.uniqueOwner(), ttlMs: Int64 = LeaseSettings.defaultTTLMs) {
        self.owner = owner
        self.ttlMs = ttlMs
    }

    /// `<name or host>-<pid>-<random>`: a restarted process never mistakes its predecessor's leases for
    /// its own.
    public static func uniqueOwner(_ name: String? = nil) -> String {
        let base = name ?? ProcessInfo.processInfo.hostName
        return "\(base)-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString.prefix(8).lowercased())"
    }
}

/// Whether this instance currently holds the leader lease; set by the relay engine's lease keeper, read
/// by whatever must run on one instance at a time (the JMessage report poller, pruning).
public final class Leadership: Sendable {
    private let state = Mutex(false)

    public init() {}

    public var isLeader: Bool { state.withLock { $0 } }

    public func set(_ leader: Bool) { state.withLock { $0 = leader } }

    /// Returns once this instance is the leader (polling every `intervalMs`), or throws when cancelled.
    public func waitUntilLeader(intervalMs: UInt64 = 200) async throws {
        while !isLeader {
            try await Task.sleep(nanoseconds: intervalMs * 1_000_000)
        }
    }
}
