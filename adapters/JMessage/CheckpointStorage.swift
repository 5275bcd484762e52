import Synchronization

/// Where the report poller keeps its position: a string value by name. The bridge backs it with
/// `IMStore`'s checkpoints table (`checkpoint(_:)` / `setCheckpoint(_:_:at:)`); tests use
/// `InMemoryCheckpointStorage`.
///
/// Contract: `set` is durable when it returns; `get` returns the last value set under that name
/// (nil if none). Names are the caller's (the poller uses `jmessage.<backend>.poller`).
public protocol CheckpointStorage: Sendable {
    func checkpoint(named name: String) async throws -> String?
    func setCheckpoint(named name: String, to value: String) async throws
}

/// The in-memory twin of `CheckpointStorage`; share one instance to simulate a restart.
public final class InMemoryCheckpointStorage: CheckpointStorage {
    private let values = Mutex<[String: String]>([:])
    public init() {}
    public func checkpoint(named name: String) async throws -> String? { values.withLock { $0[name] } }
    public func setCheckpoint(named name: String, to value: String) async throws { values.withLock { $0[name] = value } }
}
