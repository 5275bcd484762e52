import IMCore
import Synchronization

/// The calls of a memory backend a fault can be injected into: the sandboxes pick a vendor endpoint by
/// `path_prefix`, the memory world picks the neutral operation.
public enum MemoryOperation: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case send, history, recall, delete, edit, expansion, reaction
    case readReceipt = "read_receipt"
    case media
    /// `conversations`, `unreadCount`, `totalUnread`, `setMuted`.
    case conversations
    /// `clearUnread`, `setPinned`, reminders.
    case conversationState = "conversation_state"
    /// `ensureUser` and the user directory.
    case users
    /// The group directory and member removal.
    case groups

    public var description: String { rawValue }
}

/// One fault, in the vocabulary of the sandboxes' `POST /_sandbox/faults` (docs/testing-kit.md, "Faults"):
/// a rate limit (`status` 429, with the vendor's wait or `retry_after`), a server error (500), a
/// timeout (no answer in time), and with `afterAccept` the call is carried out first and only its
/// answer is the fault (`after_accept`). `unknownOutcome` is a timeout after the accept: the message was
/// sent, the answer lost.
public struct MemoryFault: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        case rateLimited = "rate_limited", serverError = "server_error", timeout
    }

    public var kind: Kind
    /// For a rate limit: the wait the answer asks for, replacing the vendor's own
    /// (`Capabilities.faultAnswers`); as the sandbox's `retry_after`.
    public var retryAfterMs: Int64?
    /// The call is carried out, then answered with the fault.
    public var afterAccept: Bool

    public init(_ kind: Kind, retryAfterMs: Int64? = nil, afterAccept: Bool = false) {
        self.kind = kind
        self.retryAfterMs = retryAfterMs
        self.afterAccept = afterAccept
    }

    /// The vendor's rate limit, with its wait unless `retryAfterMs` is given.
    public static func rateLimited(retryAfterMs: Int64? = nil) -> MemoryFault { MemoryFault(.rateLimited, retryAfterMs: retryAfterMs) }
    /// The vendor's server error (retryable, nothing carried out).
    public static let serverError = MemoryFault(.serverError)
    /// No answer in time, nothing carried out (as a connection that times out).
    public static let timeout = MemoryFault(.timeout)
    /// Carried out, then no answer in time: a timeout with `abandonedAfterMs`, as the adapters report a
    /// request that went out.
    public static let unknownOutcome = MemoryFault(.timeout, afterAccept: true)

    /// This fault after the call was carried out.
    public var afterAccepting: MemoryFault {
        var fault = self
        fault.afterAccept = true
        return fault
    }

    public var description: String {
        if self == .unknownOutcome { return "unknown_outcome" }
        return kind.rawValue + (retryAfterMs.map { " retry_after=\($0)ms" } ?? "") + (afterAccept ? " after_accept" : "")
    }
}

/// The faults of one memory world, scripted (`inject`) or seeded (`seed`), taken by the next matching
/// calls of every backend on the world, as a sandbox's `/_sandbox/faults` rules are by the next matching
/// requests. The error is the one the vendor's adapter throws for it: the preset's `faultAnswers`
/// (vendor code and wait) for a rate limit and a server error, and for a timeout the transport's
/// (`timeout`, no vendor code; after the accept with `abandonedAfterMs` = `timeoutMs`).
public final class MemoryFaults: Sendable {
    /// One injected fault, as it was met.
    public struct Injected: Sendable, CustomStringConvertible {
        public var operation: MemoryOperation
        public var fault: MemoryFault
        public var error: IMError
        public var description: String { "\(operation): \(fault)" }
    }

    struct Rule {
        var fault: MemoryFault
        var operations: Set<MemoryOperation>?
        var remaining: Int
    }

    struct Seeded {
        var generator: SplitMix64
        var probability: Double
        var faults: [MemoryFault]
        var operations: Set<MemoryOperation>?
    }

    private let state = Mutex<(rules: [Rule], seeded: Seeded?, log: [Injected])>(([], nil, []))
    private let capabilities: Capabilities
    /// How long a timed-out call waited, as the adapters' HTTP timeout (reported as `abandonedAfterMs` of
    /// an unknown outcome). The world's clock is not moved.
    public let timeoutMs: Int64

    init(capabilities: Capabilities, timeoutMs: Int64 = 10_000) {
        self.capabilities = capabilities
        self.timeoutMs = timeoutMs
    }

    /// The next `count` calls of `operations` (nil: every operation) fail with `fault`. Rules apply in
    /// the order they were added.
    public func inject(_ fault: MemoryFault, on operations: Set<MemoryOperation>? = nil, count: Int = 1) {
        precondition(count > 0, "count must be positive")
        state.withLock { $0.rules.append(Rule(fault: fault, operations: operations, remaining: count)) }
    }

    /// The next `count` calls of `operation` fail with `fault`.
    public func inject(_ fault: MemoryFault, on operation: MemoryOperation, count: Int = 1) {
        inject(fault, on: [operation], count: count)
    }

    /// From now on, each call of `operations` (nil: every operation) that no scripted rule takes fails
    /// with `probability` (0…1), with one of `faults` drawn from `seed`: the same seed and the same calls
    /// give the same faults on every run.
    public func seed(_ seed: UInt64, probability: Double,
                     faults: [MemoryFault] = [.rateLimited(), .serverError, .timeout, .unknownOutcome],
                     on operations: Set<MemoryOperation>? = nil) {
        precondition((0...1).contains(probability) && !faults.isEmpty, "probability in 0…1 and at least one fault")
        state.withLock { $0.seeded = Seeded(generator: SplitMix64(seed: seed), probability: probability, faults: faults, operations: operations) }
    }

    /// Removes every rule and the seeded faults (the log stays).
    public func clear() {
        state.withLock { state in
            state.rules.removeAll()
            state.seeded = nil
        }
    }

    /// The faults met so far, in order.
    public var injected: [Injected] { state.withLock { $0.log } }

    /// Scripted faults not met yet.
    public var pending: Int { state.withLock { $0.rules.reduce(0) { $0 + $1.remaining } } }

    /// The error `fault` answers under this world's capabilities.
    public func error(for fault: MemoryFault, on operation: MemoryOperation) -> IMError {
        let vendor = capabilities.vendor
        let detail = "fault injected into \(operation)"
        switch fault.kind {
        case .rateLimited:
            return capabilities.faultAnswers.rateLimited.error(vendor: vendor, detail, retryAfterMs: fault.retryAfterMs)
        case .serverError:
            return capabilities.faultAnswers.serverError.error(vendor: vendor, detail)
        case .timeout where fault.afterAccept:
            return IMError(.timeout, "\(vendor) \(operation) timed out (\(detail))", isRetryable: true,
                           details: ["transport": "timeout", IMError.abandonedAfterMsKey: String(timeoutMs)])
        case .timeout:
            return IMError(.timeout, "\(vendor) \(operation) timed out connecting (\(detail))", isRetryable: true,
                           details: ["transport": "timeout"])
        }
    }

    /// Takes the fault, if any, that the next call of `operation` meets.
    func take(_ operation: MemoryOperation) -> (fault: MemoryFault, error: IMError)? {
        state.withLock { state -> (MemoryFault, IMError)? in
            var fault: MemoryFault?
            if let index = state.rules.firstIndex(where: { $0.operations?.contains(operation) ?? true }) {
                fault = state.rules[index].fault
                state.rules[index].remaining -= 1
                if state.rules[index].remaining == 0 { state.rules.remove(at: index) }
            } else if var seeded = state.seeded, seeded.operations?.contains(operation) ?? true {
                let draw = Double(seeded.generator.next() >> 11) / Double(1 << 53)
                if draw < seeded.probability { fault = seeded.faults.randomElement(using: &seeded.generator) }
                state.seeded = seeded
            }
            guard let fault else { return nil }
            let error = error(for: fault, on: operation)
            state.log.append(Injected(operation: operation, fault: fault, error: error))
            return (fault, error)
        }
    }

    /// Runs `body` as `operation` meets its fault: before it (nothing carried out), or after it (`afterAccept`).
    func run<T>(_ operation: MemoryOperation, _ body: () throws -> T) throws -> T {
        guard let (fault, error) = take(operation) else { return try body() }
        guard fault.afterAccept else { throw error }
        _ = try body()
        throw error
    }

}
