import IMCore
import IMHTTP
import Synchronization

/// Replay protection for callbacks whose signature does not cover the body (RongCloud's message routing;
/// docs/operations.md, "Forged and replayed callbacks"): each signature is taken for one body only.
///
/// The decision, per signature (`CallbackMark.key`) within its freshness window:
/// - first seen: remembered with a digest (SHA-256) of the body, and the request goes on;
/// - seen with the same body: the vendor delivering the same request again (a retry after a lost
///   answer) — it goes on, and the ledger keeps its events once, so it is answered 200 and relayed once;
/// - seen with another body: a captured signature carrying a body it was not made for — refused
///   (`authentication_failed`, HTTP 401), nothing is relayed.
///
/// Marks are kept by the sink (`EventSink.remember`: the bridge's store, shared by every instance on it);
/// a sink that keeps none (an app's own sink, tests) falls back to this process's memory.
public final class CallbackMarks: Sendable {
    private let memory = Mutex<[String: (digest: String, expiresAt: Int64)]>([:])

    public init() {}

    /// The mark of a request signed with `signature`, with `body`, acceptable until `expiresAt` (ms).
    public static func mark(backend: BackendID, signature: String, body: [UInt8], expiresAt: Int64) -> CallbackMark {
        CallbackMark(backend: backend, key: signature.lowercased(), bodyDigest: Hashing.sha256Hex(body), expiresAt: expiresAt)
    }

    /// Remembers `mark` through `sink` (or here when the sink keeps no marks) and throws the refusal when
    /// its signature came before with another body. A sink that fails throws its error (a retry answer).
    public func check(_ mark: CallbackMark, sink: any EventSink, now: Int64) async throws {
        let outcome: CallbackMark.Outcome
        if let kept = try await sink.remember(mark) {
            outcome = kept
        } else {
            outcome = remember(mark, now: now)
        }
        guard outcome != .reused else {
            throw IMError(.authenticationFailed, "the callback's signature was already used with another body (a replay)",
                          details: ["refusal": "replayed"])
        }
    }

    /// The in-memory twin of `StoreTransaction.rememberCallback`; forgets expired marks as it goes.
    public func remember(_ mark: CallbackMark, now: Int64) -> CallbackMark.Outcome {
        memory.withLock { marks in
            let key = "\(mark.backend.rawValue)\u{1}\(mark.key)"
            if let known = marks[key], known.expiresAt >= now {
                return known.digest == mark.bodyDigest ? .redelivery : .reused
            }
            if marks.count >= 4096 { marks = marks.filter { $0.value.expiresAt >= now } }
            marks[key] = (mark.bodyDigest, mark.expiresAt)
            return .first
        }
    }
}
