import IMStore
import IMHTTP
import Logging

extension RelayEngine {
    /// What every line about an outbox entry carries.
    nonisolated func laneMetadata(_ entry: OutboxEntry) -> Logger.Metadata {
        ["backend": "\(entry.lane.backend)", "lane": "\(entry.lane)", "route": "\(entry.sourceBackend)->\(entry.lane.backend)",
         "event_id": "\(entry.sourceEventID)", "entry": "\(entry.id)", "action": "\(entry.kind)",
         "trace_id": "\(entry.trace.traceID)"]
    }

    nonisolated func logDeadLetter(_ entry: OutboxEntry, reason: String) {
        logs.delivery.error("outbound dead letter (see `imbridge deadletters list`)",
                             metadata: laneMetadata(entry).merging(["reason": "\(String(reason.prefix(500)))"]) { _, new in new })
    }

    /// A store failure, at most one line per operation every 5 s (with how many were held back).
    nonisolated func logStoreError(_ operation: String, _ error: any Error, lane: LaneKey? = nil) {
        guard let held = logs.storeErrorLines.admit(operation, now: clock.nowMs()) else { return }
        var metadata: Logger.Metadata = ["operation": "\(operation)", "error": "\(String("\(error)".prefix(300)))",
                                         "errors_not_logged": "\(held)"]
        if let lane { metadata["lane"] = "\(lane)" }
        logs.store.error("store error", metadata: metadata)
    }
}

extension OutboxEntry {
    /// The trace of the event this entry relays (docs/operations.md, "Trace ids").
    var trace: TraceParent { TraceParent.forEvent(backend: sourceBackend.rawValue, eventID: sourceEventID.rawValue) }
}
