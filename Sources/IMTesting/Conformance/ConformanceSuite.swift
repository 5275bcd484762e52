import IMCore

/// What a conformance run needs from a backend under test.
///
/// - `backend`: the backend, wired so that what happens on it reaches `events()` (an adapter wires its
///   sandbox's callbacks to it).
/// - `users`: at least three users who can exchange direct messages; `group`: a group all of them are
///   in (created beforehand where the vendor needs it), or nil to skip group checks.
/// - `advanceClock`: moves the backend's clock (a `TestClock`, or a sandbox's `/_sandbox/clock`); nil
///   skips the checks that need time to pass.
/// - `registry`: the content registry the backend decodes with; the suite registers its own probe type.
public struct ConformanceSubject: Sendable {
    public var backend: any IMBackend
    public var users: [UserID]
    public var group: GroupID?
    public var advanceClock: (@Sendable (Int64) async throws -> Void)?
    public var registry: ContentRegistry?
    /// How long to wait for an event before a check fails, in seconds.
    public var eventTimeout: Double
    /// The backend's events report a deletion for everyone (`deleted`): RongCloud's routed recall command
    /// with `isDelete`, a memory world with `reportsDeletions`. The deletion checks then wait for it.
    public var reportsDeletions = false
    /// The backend's events report group joins and removals (`membersChanged`): a memory world with
    /// `reportsMembershipChanges`. The membership checks then wait for them.
    public var reportsMembershipChanges = false
    /// Where the content checks' media live (ending in `/`): a host that serves `ConformanceMedia.bytes(path)`
    /// at each path, for a backend that fetches media to upload them (JMessage); the default names a host
    /// that does not exist, which a backend that keeps URLs never asks.
    public var mediaBaseURL = "https://media.example.test/"

    public init(backend: any IMBackend, users: [UserID], group: GroupID? = nil,
                advanceClock: (@Sendable (Int64) async throws -> Void)? = nil, registry: ContentRegistry? = nil,
                eventTimeout: Double = 5) {
        self.backend = backend
        self.users = users
        self.group = group
        self.advanceClock = advanceClock
        self.registry = registry
        self.eventTimeout = eventTimeout
    }
}

/// The outcome of one check.
public struct ConformanceResult: Sendable, CustomStringConvertible {
    public enum Outcome: Sendable, Equatable {
        case passed
        case skipped(String)
        case failed(String)
    }
    public var check: String
    public var outcome: Outcome
    public var description: String {
        switch outcome {
        case .passed: "PASS \(check)"
        case .skipped(let why): "SKIP \(check): \(why)"
        case .failed(let why): "FAIL \(check): \(why)"
        }
    }
}

public struct ConformanceReport: Sendable, CustomStringConvertible {
    public var backend: String
    public var results: [ConformanceResult]
    public var failures: [ConformanceResult] { results.filter { if case .failed = $0.outcome { true } else { false } } }
    public var passed: [ConformanceResult] { results.filter { $0.outcome == .passed } }
    public var description: String {
        "conformance \(backend): \(passed.count) passed, \(failures.count) failed, \(results.count - passed.count - failures.count) skipped\n"
            + results.map { "  \($0)" }.joined(separator: "\n")
    }
}

/// The checks every `IMBackend` must pass, driven by its own `Capabilities`: a feature marked native
/// must work and keep the model's rules; a feature not marked native must be refused with
/// `unsupported` when the backend offers the opt-in protocol at all.
///
/// Each check gets a fresh subject from the factory, so checks cannot disturb each other.
public struct ConformanceSuite: Sendable {
    public typealias Factory = @Sendable () async throws -> ConformanceSubject

    public let factory: Factory
    /// The app's own checks, run after the built-in ones.
    public let additionalChecks: [ConformanceCheck]

    public init(additionalChecks: [ConformanceCheck] = [], factory: @escaping Factory) {
        self.additionalChecks = additionalChecks
        self.factory = factory
    }

    /// Names of every built-in check, in the order they run.
    public static var checkNames: [String] { ConformanceChecks.all.map(\.name) }

    /// Runs every check (or only those named) and reports each outcome; it never throws.
    public func run(only names: Set<String>? = nil) async -> ConformanceReport {
        var results: [ConformanceResult] = []
        var backendName = "?"
        for check in ConformanceChecks.all + additionalChecks where names?.contains(check.name) ?? true {
            do {
                let subject = try await factory()
                backendName = "\(subject.backend.id) (\(subject.backend.capabilities.vendor))"
                try await check.body(ConformanceContext(subject: subject))
                results.append(ConformanceResult(check: check.name, outcome: .passed))
            } catch let skip as ConformanceSkip {
                results.append(ConformanceResult(check: check.name, outcome: .skipped(skip.reason)))
            } catch {
                results.append(ConformanceResult(check: check.name, outcome: .failed("\(error)")))
            }
        }
        return ConformanceReport(backend: backendName, results: results)
    }
}

/// Thrown by a check that does not apply to the subject (a feature the capabilities do not offer, no
/// group given, a clock that cannot move): the report lists it as skipped with `reason`, not failed.
public struct ConformanceSkip: Error, CustomStringConvertible {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { "skipped: \(reason)" }
}

/// A failed expectation inside a check.
public struct ConformanceFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
    public init(description: String) { self.description = description }
}
