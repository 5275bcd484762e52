import IMCore
import Synchronization
import IMHTTP

/// Where an adapter puts what it received: vendor callbacks and pollers alike push their events
/// here. The bridge's sink is its relay engine (`accept` returns once the events are committed to the
/// store); an app or a test may use `CollectingSink` or its own.
///
/// Contract for implementations:
/// - `accept` returns only when the events are durably taken (for the bridge: ledger and outbox rows
///   committed). If it throws, nothing was taken and the adapter must make the vendor redeliver
///   (answer its retry response) or, for a poller, not move its checkpoint.
/// - `accept(_ batch:)` takes a batch's events and its set-aside (poison) messages together: both are
///   durably taken, or neither. A sink that cannot keep set-aside messages throws (the default does, so
///   the vendor redelivers rather than anything being dropped).
/// - `refused` is told about a request the adapter turned away (forged signature, malformed body);
///   it must not block. The error's message never contains the request body or a secret.
/// - `remember` keeps a `CallbackMark` (a signature that does not cover the body) where every instance
///   sharing the sink's store sees it, and says whether it was seen before; nil: the sink keeps no marks
///   (the adapter then keeps them in its own memory, `CallbackMarks`). A throw means it could not be
///   kept: the vendor must redeliver.
/// - `unrecorded` is told about events a callback carried that the adapter answered with a retry before
///   they reached `accept` (their mark could not be kept): the vendor may give up on them, and a sink that
///   keeps order (the bridge) reads their conversations back before it takes anything newer there.
public protocol EventSink: Sendable {
    func accept(_ events: [IMEvent]) async throws
    func accept(_ batch: InboundBatch) async throws
    func refused(_ error: IMError, backend: BackendID)
    /// A sign of life from `backend`: a callback that verified and parsed, or a poll the vendor answered
    /// (with or without messages). The status page counts it like a successful call (docs/status-page.md).
    func heard(from backend: BackendID)
    func remember(_ mark: CallbackMark) async throws -> CallbackMark.Outcome?
    func unrecorded(_ events: [IMEvent])
}

extension EventSink {
    public func refused(_ error: IMError, backend: BackendID) {}
    public func heard(from backend: BackendID) {}
    public func remember(_ mark: CallbackMark) async throws -> CallbackMark.Outcome? { nil }
    public func unrecorded(_ events: [IMEvent]) {}

    /// A sink that keeps no positions takes the events alone (the source then keeps its positions in memory).
    public func accept(_ batch: InboundBatch) async throws {
        guard batch.setAside.isEmpty else {
            throw IMError(.unavailable, "this sink keeps no set-aside messages (\(batch.setAside.count) in the batch)", isRetryable: true)
        }
        try await accept(batch.events)
    }
}

/// An inbound message that was correctly authenticated but could not be turned into an event (its
/// content does not convert through the mapping, or a registered custom type's `validate()` refused
/// it): a poison message. The adapter acknowledges it to the vendor, so the vendor's stream moves on,
/// and the sink keeps it as an inbound dead letter (`imbridge deadletters list`) until an operator
/// retries it (`InboundHandling.replay`) after fixing the mapping.
public struct SetAsideMessage: Sendable, Hashable {
    /// The backend it arrived on.
    public var backend: BackendID
    /// Stable across redeliveries (the vendor's message id where there is one, else a hash of `raw`):
    /// the same poison message delivered twice is kept once.
    public var key: String
    /// What `raw` is, for `replay`: an adapter-defined name such as `routed-form` or `message-json`.
    public var format: String
    /// The message's own bytes in the vendor's wire format (one item of a batch, not the batch).
    public var raw: [UInt8]
    /// Why it was set aside (the conversion error; never a secret — a codec's message names fields, not values of credentials).
    public var reason: String

    public init(backend: BackendID, key: String, format: String, raw: [UInt8], reason: String) {
        self.backend = backend
        self.key = key
        self.format = format
        self.raw = raw
        self.reason = reason
    }

    /// The error's text as a reason (an `IMError` without its code prefix noise).
    public static func reason(_ error: any Error) -> String {
        (error as? IMError).map { "\($0.code): \($0.message)" } ?? "\(error)"
    }
}

/// What one parse of inbound traffic yields: the events, in order, the messages set aside, and the
/// change-feed positions the events were read up to (`ChangeFeedSource`), stored with them.
public struct InboundBatch: Sendable {
    public var events: [IMEvent]
    public var setAside: [SetAsideMessage]
    public var positions: [FeedPosition]

    public init(events: [IMEvent] = [], setAside: [SetAsideMessage] = [], positions: [FeedPosition] = []) {
        self.events = events
        self.setAside = setAside
        self.positions = positions
    }

    /// Runs `convert` for one item of a batch: its events are appended; a conversion failure (any error
    /// `convert` throws) sets the item aside instead, with `raw` and the reason. Failures that must
    /// make the vendor redeliver (a follow-up fetch) belong outside `convert`.
    public mutating func convert(backend: BackendID, key: String, format: String, raw: @autoclosure () -> [UInt8],
                                 _ convert: () throws -> [IMEvent]) {
        do {
            events += try convert()
        } catch {
            setAside.append(SetAsideMessage(backend: backend, key: key, format: format, raw: raw(), reason: SetAsideMessage.reason(error)))
        }
    }
}

/// The inbound half of every adapter's backend: the one way vendor traffic enters IMBridge.
///
/// - `handle` gets every HTTP request the vendor sends to `/callbacks/<backend>`: it verifies the
///   vendor's signature on the exact bytes, parses the events (including any follow-up fetch the
///   callback implies, such as WuKong's extras sync), pushes them into `sink`, and answers the way the
///   vendor expects — its success body once `sink.accept` returned, its refusal for a forged or
///   malformed request (after telling `sink.refused`), and a response the vendor retries when the
///   sink failed. A redelivered callback yields events with the same `eventID`s.
/// - `startIntake` starts whatever the adapter fetches on its own (JMessage's report poller) pushing
///   into the same sink; `stopIntake` stops it and returns when it has. Both default to nothing.
/// - `replay` converts a set-aside message again (after a mapping fix), through the same conversion as
///   on arrival but without the request's verification (it was verified when it arrived). What still
///   does not convert comes back in the batch's `setAside`.
///
/// - `admit` sees the request before its body is read (`head.body` is empty): it checks what the
///   vendor's scheme lets it check from the method, query and headers (a shared secret, a signature
///   over headers), and either answers at once — the body is then never read — or names the largest
///   body it accepts (more is answered 413). A refusal here is told to `sink.refused` like one in
///   `handle`. The default admits every head, with bodies up to `defaultMaxCallbackBodyBytes`.
public protocol InboundHandling: Sendable {
    func handle(_ request: HTTPRequestData, sink: any EventSink) async -> HTTPResponseData
    func admit(_ head: HTTPRequestData, sink: any EventSink) async -> BodyAdmission
    func startIntake(into sink: any EventSink) async throws
    func stopIntake() async
    func replay(_ message: SetAsideMessage) async throws -> InboundBatch
}

/// The body cap of a receiver that names none (`InboundHandling.admit`'s default): 1 MiB.
public let defaultMaxCallbackBodyBytes = 1 << 20

extension InboundHandling {
    public func admit(_ head: HTTPRequestData, sink: any EventSink) async -> BodyAdmission {
        .read(upTo: defaultMaxCallbackBodyBytes)
    }
    public func startIntake(into sink: any EventSink) async throws {}
    public func stopIntake() async {}
    public func replay(_ message: SetAsideMessage) async throws -> InboundBatch {
        throw IMError(.unsupported, "this backend cannot replay set-aside messages of format '\(message.format)'")
    }
}

/// What every adapter's backend is: the neutral API plus the inbound contract.
public typealias VendorBackend = IMBackend & InboundHandling

/// The answers one vendor expects from a callback receiver.
public struct CallbackAnswers: Sendable {
    /// The body and status the vendor takes as "delivered".
    public var success: HTTPResponseData
    /// The answer to a refused request (forged → usually 401, malformed → 400).
    public var refusal: @Sendable (IMError) -> HTTPResponseData
    /// The answer when the events could not be taken (the store is down): one the vendor retries.
    public var retry: @Sendable (IMError) -> HTTPResponseData

    public init(success: HTTPResponseData, refusal: @escaping @Sendable (IMError) -> HTTPResponseData = CallbackAnswers.plainRefusal,
                retry: @escaping @Sendable (IMError) -> HTTPResponseData = CallbackAnswers.plainRetry) {
        self.success = success
        self.refusal = refusal
        self.retry = retry
    }

    /// 401 for signature failures, 400 for malformed requests; anything else is a retry.
    public static let plainRefusal: @Sendable (IMError) -> HTTPResponseData = { error in
        let status = error.details["http_status"].flatMap(Int.init)
        switch error.code {
        case .authenticationFailed: return .text("unauthorized: \(error.message)", status: status ?? 401)
        case .malformedPayload, .invalidArgument: return .text("bad request: \(error.message)", status: status ?? 400)
        default: return plainRetry(error)
        }
    }

    /// 503: every vendor redelivers on it.
    public static let plainRetry: @Sendable (IMError) -> HTTPResponseData = { error in
        .text("unavailable: \(error.message)", status: 503)
    }
}

/// The shared shape of a callback exchange, so that each adapter writes only its parsing:
/// parse (verify + events) → `sink.accept` → the vendor's success answer; a refusal (an `IMError` of
/// code `authentication_failed`, `malformed_payload` or `invalid_argument`) → `sink.refused` and the
/// vendor's refusal; anything else (a failed follow-up fetch, a failed `accept`) → the retry answer.
/// A parse that yields an `InboundBatch` may set messages aside (poison messages, see
/// `SetAsideMessage`): the sink takes them with the events, and the vendor gets its success answer, so
/// one unconvertible message does not hold up the ones after it. Only a request that fails
/// verification, or whose envelope does not parse at all, is refused.
/// Accepted events are also published on `fanout`, which backs the adapter's `events()` stream for
/// app code that reads the neutral API directly.
public struct CallbackExchange: Sendable {
    public let backend: BackendID
    public let answers: CallbackAnswers
    public let fanout: EventFanout?

    public init(backend: BackendID, answers: CallbackAnswers, fanout: EventFanout? = nil) {
        self.backend = backend
        self.answers = answers
        self.fanout = fanout
    }

    public func run(_ request: HTTPRequestData, sink: any EventSink,
                    batch parse: (HTTPRequestData) async throws -> InboundBatch) async -> HTTPResponseData {
        let batch: InboundBatch
        do {
            batch = try await parse(request)
        } catch let error as IMError {
            if Self.isRefusal(error) {
                sink.refused(error, backend: backend)
                return answers.refusal(error)
            }
            return answers.retry(error)
        } catch {
            let refusal = IMError(.malformedPayload, "\(error)")
            sink.refused(refusal, backend: backend)
            return answers.refusal(refusal)
        }
        sink.heard(from: backend)
        do {
            // A batch with change-feed positions goes whole: the positions are stored with its events
            // (docs/architecture.md, "Catch-up of changes"), or the next read would begin past them.
            if batch.setAside.isEmpty, batch.positions.isEmpty {
                try await sink.accept(batch.events)
            } else {
                try await sink.accept(batch)
            }
        } catch let error as IMError {
            return answers.retry(error)
        } catch {
            return answers.retry(IMError(.unavailable, "\(error)"))
        }
        fanout?.publish(batch.events)
        return answers.success
    }

    /// The head half of a callback exchange (`InboundHandling.admit`): `check` verifies what the head
    /// carries and throws the refusal; a refusal is told to `sink.refused` and answered the vendor's
    /// way at once, anything else lets the body (up to `maxBodyBytes`) be read.
    public func admit(_ head: HTTPRequestData, sink: any EventSink, maxBodyBytes: Int,
                      check: (HTTPRequestData) throws -> Void) -> BodyAdmission {
        do {
            try check(head)
        } catch let error as IMError where Self.isRefusal(error) {
            sink.refused(error, backend: backend)
            return .answer(answers.refusal(error))
        } catch {
            // Not a refusal: let the full exchange decide with the body.
        }
        return .read(upTo: maxBodyBytes)
    }

    public static func isRefusal(_ error: IMError) -> Bool {
        [.authenticationFailed, .malformedPayload, .invalidArgument].contains(error.code)
    }
}

/// A sink that keeps what it is given, in order: for apps and tests that call an adapter's `handle`
/// themselves. `failing` makes `accept` throw (to test the vendor's retry answer).
public final class CollectingSink: EventSink {
    private let state = Mutex<(events: [IMEvent], refusals: [IMError], failing: IMError?, setAside: [SetAsideMessage])>(([], [], nil, []))
    public init() {}
    public func accept(_ events: [IMEvent]) async throws {
        try state.withLock { state in
            if let error = state.failing { throw error }
            state.events += events
        }
    }
    public func accept(_ batch: InboundBatch) async throws {
        try state.withLock { state in
            if let error = state.failing { throw error }
            state.events += batch.events
            state.setAside += batch.setAside
        }
    }
    /// The poison messages set aside, in order.
    public var setAside: [SetAsideMessage] { state.withLock { $0.setAside } }
    public func refused(_ error: IMError, backend: BackendID) { state.withLock { $0.refusals.append(error) } }
    public var events: [IMEvent] { state.withLock { $0.events } }
    public var refusals: [IMError] { state.withLock { $0.refusals } }
    public func fail(with error: IMError?) { state.withLock { $0.failing = error } }
    /// The backends' signs of life (`heard(from:)`), in order.
    public var heard: [BackendID] { signs.withLock { $0 } }
    public func heard(from backend: BackendID) { signs.withLock { $0.append(backend) } }
    private let signs = Mutex<[BackendID]>([])
}
