import Foundation
import IMCore
import Logging
import Synchronization
import IMRelay
import IMOutbox
import IMTelemetry

/// Scheduled audits inside `imbridge run` (`verify:`, docs/verify.md): every `interval`, on the leader
/// (or on SQLite, where one instance runs), the `Verifier` compares every route over the last `window`.
/// The result goes to the status page, to `/metrics` (`imbridge_verify_drift{kind}`,
/// `imbridge_verify_last_run_timestamp_seconds`, `imbridge_verify_unreadable_conversations`) and, for each
/// drift item, to the log as a warning. An audit repairs nothing.
public actor VerifyAudit {
    let verifier: Verifier
    let settings: VerifySettings
    let engine: RelayEngine
    let logger = Logger(label: "imbridge.verify")
    private var loop: Task<Void, Never>?

    public init(engine: RelayEngine, backends: [any IMBackend], routes: [Route], settings: VerifySettings) {
        self.engine = engine
        self.settings = settings
        self.verifier = Verifier(store: engine.store, backends: backends, routes: routes, customFallbacks: engine.customFallbacks,
                                 clock: engine.clock)
        // Shown as on from the start (the page and /metrics may be read before the loop starts).
        if settings.intervalMs != nil {
            engine.metrics.prepareVerify()
            engine.metrics.verifyAudit.enable()
        }
    }

    /// Starts the loop (nothing when `verify.interval` is not set); the first audit after one interval.
    public func start() {
        guard let interval = settings.intervalMs, loop == nil else { return }
        loop = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: UInt64(interval) * 1_000_000)
                if Task.isCancelled { break }
                await self?.auditIfLeading()
            }
        }
    }

    public func stop() async {
        let task = loop
        loop = nil
        task?.cancel()
        await task?.value
    }

    func auditIfLeading() async {
        guard engine.leadership.isLeader || engine.store.kind == .sqlite else { return }
        _ = await audit()
    }

    /// One audit now; its report (nil when the store could not list the conversations).
    @discardableResult
    public func audit() async -> VerifyReport? {
        let now = engine.clock.nowMs()
        let report: VerifyReport
        do {
            report = try await verifier.run(VerifyScope(sinceMs: now - settings.windowMs))
        } catch {
            logger.warning("scheduled audit could not run", metadata: ["error": "\(error)"])
            return nil
        }
        let summary = VerifyAuditSummary(report, windowMs: settings.windowMs)
        engine.metrics.verifyAudit.record(summary)
        engine.metrics.recordVerify(summary)
        for conversation in report.conversations {
            if let error = conversation.error {
                logger.warning("audit could not read a conversation", metadata: [
                    "source": "\(conversation.source)", "target": "\(conversation.target)", "error": "\(String(error.prefix(300)))"])
            }
            for item in conversation.items {
                logger.warning("drift between source and target", metadata: [
                    "kind": "\(item.kind.rawValue)", "source": "\(conversation.source)", "target": "\(conversation.target)",
                    "source_message": "\(item.sourceMessage)", "target_message": "\(item.targetMessage ?? "")", "detail": "\(item.detail)"])
            }
        }
        logger.info("audit finished", metadata: ["conversations": "\(summary.conversations)", "drift": "\(report.driftCount)",
                                                 "read_calls": "\(summary.readCalls)", "duration_ms": "\(summary.durationMs)"])
        return report
    }
}

extension RelayMetrics {
    /// The audit series at zero (`VerifyAudit.start`).
    func prepareVerify() {
        for kind in VerifyReport.Kind.allCases { gauge("imbridge_verify_drift", ["kind": kind.rawValue]).set(0) }
        gauge("imbridge_verify_last_run_timestamp_seconds", [:]).set(0)
        gauge("imbridge_verify_unreadable_conversations", [:]).set(0)
    }

    func recordVerify(_ summary: VerifyAuditSummary) {
        for kind in VerifyReport.Kind.allCases {
            gauge("imbridge_verify_drift", ["kind": kind.rawValue]).set(Double(summary.drift[kind.rawValue] ?? 0))
        }
        gauge("imbridge_verify_last_run_timestamp_seconds", [:]).set(Double(summary.ranAtMs) / 1000)
        gauge("imbridge_verify_unreadable_conversations", [:]).set(Double(summary.unreadable))
    }
}

extension VerifyAuditSummary {
    public init(_ report: VerifyReport, windowMs: Int64) {
        self.init(ranAtMs: report.startedAtMs, durationMs: max(0, report.finishedAtMs - report.startedAtMs), windowMs: windowMs,
                  conversations: report.conversations.count, sourceMessages: report.conversations.reduce(0) { $0 + $1.sourceMessages },
                  drift: Dictionary(uniqueKeysWithValues: report.counts.map { ($0.key.rawValue, $0.value) }), unreadable: report.unreadable,
                  items: Array(report.conversations.flatMap { conversation in
                      conversation.items.map { Item(kind: $0.kind.rawValue, source: conversation.source, target: conversation.target,
                                                    sourceMessage: $0.sourceMessage, targetMessage: $0.targetMessage, detail: $0.detail) }
                  }.prefix(Self.shownItems)),
                  readCalls: report.readCalls.values.reduce(0, +))
    }
}
