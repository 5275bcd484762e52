import Foundation
import IMAdapterKit
import IMCore
import IMRelay
import IMStore
import IMTesting
import Synchronization
import IMOutbox

/// Real time less `ms`: a backend's clock behind the bridge's.
struct ClockBehind: IMClock {
    let ms: Int64
    func nowMs() -> Int64 { SystemClock().nowMs() - ms }
}

/// Two in-memory backends (WuKong and RongCloud rules) joined by a group route, over a real SQLite store.
struct RelayHarness {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("relay-\(UUID().uuidString).sqlite").path
    let clock = SystemClock()
    let wk: MemoryBackend
    let rc: any IMBackend
    let rcMemory: MemoryBackend
    let store: BridgeStore
    let routes: [Route]

    /// `storeURL`: another store than the SQLite file at `path` (a PostgreSQL URL). `rcClock`: the clock
    /// RongCloud stamps its messages with.
    init(rcWrapper: ((MemoryBackend) -> any IMBackend)? = nil, routes: [Route]? = nil, storeURL: String? = nil,
         rcClock: any IMClock = SystemClock()) throws {
        wk = MemoryBackend(id: "wk", capabilities: .wukong, clock: SystemClock())
        rcMemory = MemoryBackend(id: "rc", capabilities: .rongCloud, clock: rcClock)
        rc = rcWrapper?(rcMemory) ?? rcMemory
        store = try BridgeStore(path: storeURL ?? path)
        self.routes = try routes ?? [Route(from: try RouteEndpoint(parsing: "wk:group:*"), to: try RouteEndpoint(parsing: "rc:group:*"))]
    }

    func engine(retry: RetryPolicy = RetryPolicy(baseMs: 5, maxMs: 50), store: BridgeStore? = nil) -> RelayEngine {
        RelayEngine(store: store ?? self.store, backends: [wk, rc], routes: routes, retry: retry)
    }

    func history(_ backend: any IMBackend, _ group: String) async throws -> [Message] {
        try await backend.history(HistoryQuery(conversation: .group(GroupID(group)), anchor: .latest, limit: 1000)).messages
    }
}

/// Polls `condition` until it holds or `seconds` pass. (The default is a bound for a whole suite starting at
/// once on 2 shared cores, where the first half minute can go to the sandboxes' start-up: not a speed.)
func eventually(_ seconds: Double = 120, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(nanoseconds: 10_000_000)
    }
    return try await condition()
}

/// A test backend that changes some of a memory backend's answers and passes the rest to it.
protocol MemoryWrapping: IMBackend {
    var inner: MemoryBackend { get }
}

extension MemoryWrapping {
    var id: BackendID { inner.id }
    var capabilities: Capabilities { inner.capabilities }
    func send(_ message: OutgoingMessage) async throws -> Message { try await inner.send(message) }
    func events() -> AsyncStream<IMEvent> { inner.events() }
    func history(_ query: HistoryQuery) async throws -> HistoryPage { try await inner.history(query) }
}

/// A RongCloud-rules backend that answers 429 to sends in chosen conversations while `failing` says so.
final class FlakyBackend: IMBackend, Recalling, ExpansionUpdating {
    let inner: MemoryBackend
    let failing = Mutex<[ConversationRef: Int]>([:])
    let permanent = Mutex<Set<String>>([])
    /// The vendor's message of the permanent refusal (the status page shows it as the dead letter's reason).
    let permanentReason = Mutex("refused for good")
    init(_ inner: MemoryBackend) { self.inner = inner }
    var id: BackendID { inner.id }
    var capabilities: Capabilities { inner.capabilities }

    func send(_ message: OutgoingMessage) async throws -> Message {
        if case .text(let text) = message.content, permanent.withLock({ $0.contains(text.text) }) {
            throw IMError(.invalidArgument, permanentReason.withLock { $0 }, vendorCode: "1002")
        }
        let fail = failing.withLock { table -> Bool in
            guard let left = table[message.conversation], left > 0 else { return false }
            table[message.conversation] = left - 1
            return true
        }
        if fail { throw IMError(.rateLimited, "slow down", vendorCode: "1008", retryAfterMs: 5) }
        return try await inner.send(message)
    }
    func events() -> AsyncStream<IMEvent> { inner.events() }
    func history(_ query: HistoryQuery) async throws -> HistoryPage { try await inner.history(query) }
    func recall(_ message: MessageID, in conversation: ConversationRef, by user: UserID) async throws {
        try await inner.recall(message, in: conversation, by: user)
    }
    func updateExpansion(of message: MessageID, in conversation: ConversationRef, by user: UserID,
                         _ change: ExpansionChange) async throws -> ExpansionDelta {
        try await inner.updateExpansion(of: message, in: conversation, by: user, change)
    }
    func expansion(of message: MessageID, in conversation: ConversationRef) async throws -> Expansion {
        try await inner.expansion(of: message, in: conversation)
    }
}

extension RelayEngine {
    /// Starts the lanes and feeds each in-memory backend's `events()` into the engine (the intake a
    /// backend without callbacks gets).
    func start(feeding backends: [any IMBackend]) async throws {
        start()
        try await startIntake(backends.map { StreamIntake($0) })
    }
}
