import IMCore
import Testing

/// One backend an app's test runs against, as a Swift Testing argument: `MemoryBackend` under a vendor's
/// preset (`.memory(.rongCloud)`, this module), or the vendor's real adapter talking to an in-process
/// sandbox (`.sandbox("rongcloud")`, the `IMTestingSandbox` product, which needs IMBridge's `Server`
/// trait). The same test body then runs on both, so an app's CI shows that its memory tests predict
/// production (docs/testing-kit.md, "One test, two backends"):
///
/// ```swift
/// @Test(arguments: TestBackendTarget.memory([.rongCloud, .nim]) + TestBackendTarget.sandboxes(["rongcloud", "nim"]))
/// func placingAnOrder(_ target: TestBackendTarget) async throws {
///     try await target.run(registry: registry) { session in
///         session.backend …                                   // any IMBackend
///         try await session.inject(.rateLimited(), on: .send)  // a fault, in memory or in the sandbox
///     }
/// }
/// ```
public struct TestBackendTarget: Sendable, CustomTestStringConvertible {
    public enum Kind: String, Sendable { case memory, sandbox }

    public var kind: Kind
    /// The vendor's name (`Capabilities.vendor`).
    public var vendor: String
    /// Makes a fresh session (a new world, or a new sandbox) for the app's registry.
    public var make: @Sendable (ContentRegistry?) async throws -> TestBackendSession

    public init(kind: Kind, vendor: String, make: @escaping @Sendable (ContentRegistry?) async throws -> TestBackendSession) {
        self.kind = kind
        self.vendor = vendor
        self.make = make
    }

    /// "memory rongcloud", "sandbox nim".
    public var testDescription: String { "\(kind.rawValue) \(vendor)" }

    /// `MemoryBackend` under `capabilities`, on a `TestClock`.
    public static func memory(_ capabilities: Capabilities) -> TestBackendTarget {
        TestBackendTarget(kind: .memory, vendor: capabilities.vendor) { registry in
            let clock = TestClock()
            let backend = MemoryBackend(id: BackendID(capabilities.vendor), capabilities: capabilities, clock: clock, registry: registry)
            return TestBackendSession(backend: backend, kind: .memory,
                                      inject: { fault, operation, count in backend.faults.inject(fault, on: operation, count: count) },
                                      advance: { clock.advance(byMs: $0) }, close: {})
        }
    }

    /// One memory target per preset.
    public static func memory(_ presets: [Capabilities]) -> [TestBackendTarget] { presets.map(memory) }

    /// Runs `body` on a fresh session and closes it (the sandbox stops) whatever `body` does.
    public func run<T>(registry: ContentRegistry? = nil, _ body: (TestBackendSession) async throws -> T) async throws -> T {
        let session = try await make(registry)
        do {
            let result = try await body(session)
            await session.close()
            return result
        } catch {
            await session.close()
            throw error
        }
    }
}

/// A backend under test and what a test does around it, the same on both kinds: inject a fault into the
/// next calls, move the vendor's clock.
public struct TestBackendSession: Sendable {
    public let backend: any IMBackend
    public let kind: TestBackendTarget.Kind
    let injectFault: @Sendable (MemoryFault, MemoryOperation, Int) async throws -> Void
    let advanceClock: @Sendable (Int64) async throws -> Void
    let closeSession: @Sendable () async -> Void

    public init(backend: any IMBackend, kind: TestBackendTarget.Kind,
                inject: @escaping @Sendable (MemoryFault, MemoryOperation, Int) async throws -> Void,
                advance: @escaping @Sendable (Int64) async throws -> Void, close: @escaping @Sendable () async -> Void) {
        self.backend = backend
        self.kind = kind
        self.injectFault = inject
        self.advanceClock = advance
        self.closeSession = close
    }

    public var capabilities: Capabilities { backend.capabilities }

    /// The next `count` calls of `operation` fail with `fault`: `MemoryFaults` in memory, a
    /// `/_sandbox/faults` rule on the operation's endpoint in a sandbox (which takes rate limits and
    /// server errors, with or without `afterAccepting`; a timeout is refused there with `unsupported`,
    /// as it would need a latency over the adapter's HTTP timeout).
    public func inject(_ fault: MemoryFault, on operation: MemoryOperation, count: Int = 1) async throws {
        try await injectFault(fault, operation, count)
    }

    /// Moves the vendor's clock (the memory world's `TestClock`, the sandbox's clock): recall and edit
    /// windows follow it.
    public func advance(byMs ms: Int64) async throws { try await advanceClock(ms) }

    func close() async { await closeSession() }
}
