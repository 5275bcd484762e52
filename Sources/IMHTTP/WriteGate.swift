import NIOCore
import Synchronization

/// A check asked as late as the HTTP client allows before a request's body leaves the process: after the
/// connection is ready and the head written, right before the body is handed to the channel. The relay
/// sets it around a send (the lane's lease check, docs/high-availability.md "Fenced deliveries"): a pause
/// of the process before this point is caught by the check, and a request the check refuses never
/// completes at the server (its body is never written; the connection is closed).
///
/// Written by hand: AsyncHTTPClient has no hook between "connection ready" and "body written" other than a
/// streamed body, which is what this is.
public enum WriteGate {
    /// The check for the task's current send. Boxed in a class: with a task-local of the function type
    /// itself, the optimized build of Swift 6.3 pushed the value with broken type metadata and crashed on
    /// the first relayed message (`swift_task_localValuePush`); debug builds, which the tests use, did not.
    /// `SelfContainedBinaryTests.theReleaseBuildRunsTheDemo` runs the release binary (`make test`) so that such
    /// a crash cannot go unnoticed again.
    @TaskLocal public static var check: Check?

    /// A check (`WriteGate.check`): throws to refuse the write. It counts the writes it let through, so
    /// that a refusal after one of them is not taken for "nothing written" (`RefusedAfterWrite`).
    public final class Check: Sendable {
        public let run: @Sendable () throws -> Void
        private let passed = Atomic<Int>(0)
        public init(_ run: @escaping @Sendable () throws -> Void) { self.run = run }

        /// Asks the check for one request; counts it when it passes.
        public func pass() throws {
            try run()
            passed.add(1, ordering: .relaxed)
        }

        /// How many requests the check let through so far.
        public var passes: Int { passed.load(ordering: .relaxed) }
    }

    /// A refusal that came after the same check had let an earlier request through: one action of several
    /// requests (WuKongIM's send and its initial `extra`, for one) was cut off halfway, and what the earlier
    /// requests wrote is on the server. The caller must treat the outcome as unknown, not as nothing written.
    public struct RefusedAfterWrite: Error, CustomStringConvertible {
        public let refusal: any Error
        public let passes: Int
        public init(refusal: any Error, passes: Int) { (self.refusal, self.passes) = (refusal, passes) }
        public var description: String { "refused after \(passes) request(s) went out: \(refusal)" }
    }

    /// The body as one buffer, produced only when `check` passes; its refusal is kept in `refusal` so the
    /// caller can rethrow it as it was (not as a transport failure).
    struct GatedBody: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        let bytes: ByteBuffer
        let check: @Sendable () throws -> Void
        let refusal: Refusal

        struct AsyncIterator: AsyncIteratorProtocol {
            var body: GatedBody?
            mutating func next() async throws -> ByteBuffer? {
                guard let pending = body else { return nil }
                body = nil
                do {
                    try pending.check()
                } catch {
                    pending.refusal.error.withLock { $0 = error }
                    throw error
                }
                return pending.bytes
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(body: self) }
    }

    /// What the gate threw, if it refused.
    final class Refusal: Sendable {
        let error = Mutex<(any Error)?>(nil)
        var refused: (any Error)? { error.withLock { $0 } }
    }
}
