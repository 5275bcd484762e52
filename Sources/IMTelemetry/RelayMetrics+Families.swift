import CoreMetrics
import Foundation
import IMCore

extension RelayMetrics {
    /// Every family the bridge exposes. Adding a family: add it here (the strict-format test requires a
    /// `# HELP` on each family) and to the list in docs/architecture.md.
    public static let families: [String: Family] = Dictionary(uniqueKeysWithValues: [
        Family(name: "imbridge_build_info", kind: .gauge, help: "Always 1; the labels name the running build (version, commit)."),
        Family(name: "imbridge_start_time_seconds", kind: .gauge, help: "Unix time at which this bridge's engine was created."),
        Family(name: "imbridge_events_in_total", kind: .counter, help: "Events received from a backend (callbacks, pollers, streams), by backend and event kind."),
        Family(name: "imbridge_callbacks_total", kind: .counter,
               help: "Callback requests whose body was read and handed to the backend's receiver (one may carry several events), by backend."),
        Family(name: "imbridge_callbacks_refused_total", kind: .counter,
               help: "Callbacks turned away (forged signature, malformed body), by backend and error code."),
        Family(name: "imbridge_ingest_errors_total", kind: .counter, help: "Batches of events the store could not record (the vendor is asked to redeliver)."),
        Family(name: "imbridge_callbacks_held_elsewhere_total", kind: .counter,
               help: "Callbacks refused because another instance is catching their conversation up (the vendor redelivers them)."),
        Family(name: "imbridge_duplicates_total", kind: .counter, help: "Events received again (same backend and event id) and not relayed again."),
        Family(name: "imbridge_echoes_total", kind: .counter, help: "Events caused by the bridge itself, recorded and not relayed."),
        Family(name: "imbridge_fallbacks_total", kind: .counter,
               help: "Features a target lacks, carried by the route's fallback (notice or drop), by feature and policy."),
        Family(name: "imbridge_relayed_total", kind: .counter, help: "Outbox entries carried out on their target, by target backend and action."),
        Family(name: "imbridge_retries_total", kind: .counter, help: "Retryable failures on a target; the entry waits and is tried again."),
        Family(name: "imbridge_requeued_total", kind: .counter, help: "Changes put back in their lane to wait for the message they refer to."),
        Family(name: "imbridge_late_copies_total", kind: .counter,
               help: "Sends the target accepted after another instance had taken the lane over (a retract entry is queued), by target backend."),
        Family(name: "imbridge_late_copies_retracted_total", kind: .counter,
               help: "Late copies taken back from the target (not the copy the id map names), by target backend."),
        Family(name: "imbridge_lanes_fenced_total", kind: .counter,
               help: "Lanes this instance stopped working because their lease lapsed or another instance took it over."),
        Family(name: "imbridge_dead_letters_total", kind: .counter, help: "Outbox entries given up on (permanent failure or retry budget used up), by target backend."),
        Family(name: "imbridge_retry_budget_exhausted_total", kind: .counter,
               help: "Dead letters because retrying used up retry.max_age, by target backend."),
        Family(name: "imbridge_inbound_dead_letters_total", kind: .counter,
               help: "Poison messages (accepted from a vendor, not translatable) set aside as inbound dead letters, by backend."),
        Family(name: "imbridge_inbound_dead_letters_retried_total", kind: .counter,
               help: "Inbound dead letters put through the relay again by imbridge deadletters retry."),
        Family(name: "imbridge_store_errors_total", kind: .counter, help: "Store writes that failed and were tried again, by operation."),
        Family(name: "imbridge_pruned_total", kind: .counter, help: "Rows deleted by pruning, by table (outbox, ledger, attempts: retention; callback_marks: expired)."),
        Family(name: "imbridge_relay_latency_seconds", kind: .histogram,
               help: "Time from the source event to the target's accept of its relay, in seconds."),
        Family(name: "imbridge_outbox_pending", kind: .gauge, help: "Pending outbox entries per target backend, read from the store at scrape time."),
        Family(name: "imbridge_outbox_lanes_with_work", kind: .gauge,
               help: "Lanes (target conversations) with at least one pending entry, per target backend, read at scrape time."),
        Family(name: "imbridge_outbox_oldest_pending_age_seconds", kind: .gauge,
               help: "Age of the oldest pending outbox entry per target backend (0 when none), read at scrape time."),
        Family(name: "imbridge_outbox_dead_letters", kind: .gauge,
               help: "Dead letters held in the store, waiting for an operator (imbridge deadletters), read at scrape time."),
        Family(name: "imbridge_verify_drift", kind: .gauge,
               help: "Drift items the last scheduled audit found (verify:), by kind: missing, doubled, out_of_order, content, recall, expansion."),
        Family(name: "imbridge_verify_last_run_timestamp_seconds", kind: .gauge, help: "Unix time at which the last scheduled audit started (0: none yet)."),
        Family(name: "imbridge_verify_unreadable_conversations", kind: .gauge,
               help: "Conversations the last scheduled audit could not read (a side's history refused or failed)."),
        Family(name: "imbridge_store_statements_total", kind: .counter,
               help: "Statements the store sent to its database (PostgreSQL: round trips, BEGIN and COMMIT included), read at scrape time."),
        Family(name: "imbridge_store_transactions_total", kind: .counter, help: "Write transactions the store ran, read at scrape time."),
        Family(name: "imbridge_ready", kind: .gauge,
               help: "1 when this scrape's store reads answered and no backend has failed past readiness.backend_failing (what /readyz checks, its store write aside), else 0."),
        Family(name: "imbridge_backend_failing_seconds", kind: .gauge,
               help: "How long a backend's calls have failed without a success, by backend (0 while it is not failing), read at scrape time."),
        Family(name: "imbridge_store_up", kind: .gauge, help: "1 when the store answered this scrape's reads, 0 when it did not (the outbox gauges then keep their last values)."),
        Family(name: "imbridge_catch_up_runs_total", kind: .counter,
               help: "Catch-ups of one source conversation from history, by backend and reason (start, gap, held, interval)."),
        Family(name: "imbridge_catch_up_recovered_total", kind: .counter,
               help: "Messages read from a source's history by catch-up that the bridge had not received, by backend."),
        Family(name: "imbridge_catch_up_skipped_total", kind: .counter,
               help: "Messages catch-up left out (older than catch_up.max_age, or beyond max_messages_per_conversation), by backend."),
        Family(name: "imbridge_catch_up_errors_total", kind: .counter,
               help: "Catch-up history reads, change reads or conversation listings that failed (tried again later), by backend."),
        Family(name: "imbridge_catch_up_changes_total", kind: .counter,
               help: "Changes to old messages catch-up found that the bridge had not recorded, by backend."),
        Family(name: "imbridge_catch_up_withheld_total", kind: .counter,
               help: "Late messages withheld because the source's history no longer shows them (recalled or deleted before the bridge recorded them), by backend."),
        // The standard process families (Linux, read from /proc at scrape time: `ProcessStats`).
        Family(name: "process_cpu_seconds_total", kind: .counter, help: "Total user and system CPU time spent in seconds."),
        Family(name: "process_resident_memory_bytes", kind: .gauge, help: "Resident memory size in bytes."),
        Family(name: "process_virtual_memory_bytes", kind: .gauge, help: "Virtual memory size in bytes."),
        Family(name: "process_open_fds", kind: .gauge, help: "Number of open file descriptors."),
        Family(name: "process_max_fds", kind: .gauge, help: "Maximum number of open file descriptors."),
        Family(name: "process_start_time_seconds", kind: .gauge, help: "Start time of the process since unix epoch in seconds."),
    ].map { ($0.name, $0) })

    /// Sets `imbridge_backend_failing_seconds` for each backend from the health board (read at scrape).
    public func setBackendHealth(_ health: [String: HealthBoard.Entry], now: Int64) {
        for (backend, entry) in health {
            let failing = entry.failingSinceMs.map { Double(max(0, now - $0)) / 1000 } ?? 0
            gauge("imbridge_backend_failing_seconds", ["backend": backend]).set(failing)
        }
    }
}
