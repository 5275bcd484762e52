import CoreMetrics
import Foundation
import IMAdapterKit
import IMCore
import IMMapping
import IMStore
import Prometheus
import Synchronization

/// The bridge's metrics, served at `/metrics` in the Prometheus text format (docs/architecture.md,
/// "Metrics"). The one facade the engine and tests use: `increment`, `observeLatency`, `value`, `total`,
/// and `scrape`, which reads the store gauges before it renders.
///
/// Counters and the latency histogram are swift-metrics instruments (`CoreMetrics.Counter`, `Timer`)
/// made by `RelayMetricsFactory` into a swift-prometheus `PrometheusCollectorRegistry` that this object
/// owns; the registry renders the text (label escaping, histogram series). Why a registry per bridge and
/// not `MetricsSystem.bootstrap`: the global bootstrap can run once per process, and tests (and the lab)
/// build several bridges in one process, each of which must count on its own; with the factory passed
/// explicitly, two engines never share a series.
///
/// Every family is declared in `families` with its type and help text: the factory gives each series
/// its family's `# HELP` line, and a family missing there is rendered without one (a test fails on it).
/// Series that are known up front (per configured backend, per route target) exist from `prepare` on,
/// at zero. No label carries a conversation: the outbox is described per target backend.
public final class RelayMetrics: Sendable {
    public enum Kind: String, Sendable { case counter, gauge, histogram }

    /// One metric family: its name, type and help text.
    public struct Family: Sendable {
        public let name: String
        public let kind: Kind
        public let help: String
    }

    // `families`, every family the bridge exposes: RelayMetrics+Families.swift.

    /// Upper bounds of the relay latency histogram's buckets, in seconds.
    public static let latencyBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

    /// Event kinds (`IMEvent.kindName`) and action kinds (`RelayAction.kindName`), for the series made at start.
    package static let eventKinds = ["message", "edited", "recalled", "expansion", "reaction", "read", "command"]
    package static let actionKinds = ["send", "notice", "edit", "recall", "expansion", "reaction", "read", "profile", "group"]
    /// The codes a callback is refused with (`CallbackExchange`).
    package static let refusalCodes: [IMError.Code] = [.authenticationFailed, .malformedPayload, .invalidArgument]

    /// The registry this bridge's series live in (its own, never the process-wide default).
    public let registry: PrometheusCollectorRegistry
    /// The swift-metrics factory over `registry`: code that wants to record through the swift-metrics
    /// API passes it as `factory:`.
    public let factory: RelayMetricsFactory
    private let latency: CoreMetrics.Timer
    /// The last minutes of the counters the status page charts (events in, relayed, retries, dead
    /// letters, refusals), fed by `increment`.
    public let activity = ActivityLog()
    /// The last scheduled audit (`VerifyAudit`), for the status page.
    public let verifyAudit = VerifyAuditBoard()
    /// When this object (and so the engine) was created, Unix milliseconds.
    public let startedAtMs = Int64((Date().timeIntervalSince1970 * 1000).rounded())

    public init() {
        registry = PrometheusCollectorRegistry()
        factory = RelayMetricsFactory(registry: registry)
        latency = CoreMetrics.Timer(label: "imbridge_relay_latency_seconds", dimensions: [], factory: factory)
        let build = MappingSet.buildVersion
        gauge("imbridge_build_info", ["version": build.version, "commit": build.commit]).set(1)
        gauge("imbridge_start_time_seconds", [:]).set(Double(startedAtMs) / 1000)
        for name in ["imbridge_ingest_errors_total", "imbridge_duplicates_total", "imbridge_echoes_total", "imbridge_inbound_dead_letters_retried_total"] {
            increment(name, by: 0)
        }
        increment("imbridge_store_errors_total", ["operation": "record"], by: 0)
        for table in ["outbox", "ledger", "attempts"] { increment("imbridge_pruned_total", ["table": table], by: 0) }
        gauge("imbridge_outbox_dead_letters", [:]).set(0)
        gauge("imbridge_store_up", [:]).set(1)
        gauge("imbridge_ready", [:]).set(1)
    }

    /// Makes, at zero, the series known from the configuration: per backend (events in, refusals) and
    /// per route target (relays, retries, dead letters, outbox gauges). The engine calls it at creation.
    public func prepare(backends: [BackendID], targets: [BackendID]) {
        for backend in backends.map(\.rawValue) {
            for kind in Self.eventKinds { increment("imbridge_events_in_total", ["backend": backend, "kind": kind], by: 0) }
            increment("imbridge_inbound_dead_letters_total", ["backend": backend], by: 0)
            increment("imbridge_callbacks_total", ["backend": backend], by: 0)
            for code in Self.refusalCodes { increment("imbridge_callbacks_refused_total", ["backend": backend, "code": code.rawValue], by: 0) }
        }
        for target in targets.map(\.rawValue) {
            for action in Self.actionKinds { increment("imbridge_relayed_total", ["target": target, "action": action], by: 0) }
            for name in ["imbridge_retries_total", "imbridge_requeued_total", "imbridge_lanes_fenced_total", "imbridge_dead_letters_total", "imbridge_retry_budget_exhausted_total"] {
                increment(name, ["target": target], by: 0)
            }
        }
        knownTargets.withLock { $0.formUnion(targets.map(\.rawValue)) }
        setOutboxGauges(StoreGauges(), now: 0)
    }

    /// Makes a catch-up source's series at zero (`CatchUpRunner.start`).
    public func prepareCatchUp(backend: BackendID) {
        for reason in ["start", "gap", "held", "interval"] {
            increment("imbridge_catch_up_runs_total", ["backend": backend.rawValue, "reason": reason], by: 0)
        }
        for name in ["imbridge_catch_up_recovered_total", "imbridge_catch_up_skipped_total", "imbridge_catch_up_errors_total",
                     "imbridge_catch_up_changes_total", "imbridge_catch_up_withheld_total"] {
            increment(name, ["backend": backend.rawValue], by: 0)
        }
    }

    /// The targets the outbox gauges are set for at every scrape.
    private let knownTargets = Mutex<Set<String>>([])

    // MARK: recording

    /// Adds `amount` to a counter series (made on first use; `by: 0` only makes it).
    public func increment(_ name: String, _ labels: [String: String] = [:], by amount: Int = 1) {
        counter(name, labels).increment(by: Int64(amount))
        activity.record(family: name, amount)
    }

    /// A series' handler, made once and kept: an increment is on the relay path (every event in, every
    /// relay), and making the series again each time — sorting the labels into dimensions, then the
    /// registry's own lookup under its lock — cost about 30 allocations an increment (docs/performance.md,
    /// "Where the allocations are"). The key hashes the labels dictionary in place; nothing is copied on
    /// a hit. A series is never removed, so the table only grows with the configured label values.
    private func counter(_ name: String, _ labels: [String: String]) -> any CounterHandler {
        let key = SeriesKey(name: name, labels: labels)
        if let known = counters.withLock({ $0[key] }) { return known }
        let made = factory.makeCounter(label: name, dimensions: Self.dimensions(labels))
        return counters.withLock { table in
            if let raced = table[key] { return raced }
            table[key] = made
            return made
        }
    }

    private struct SeriesKey: Hashable {
        let name: String
        let labels: [String: String]
    }

    private let counters = Mutex<[SeriesKey: any CounterHandler]>([:])

    public func observeLatency(seconds: Double) {
        latency.recordNanoseconds(Int64(max(0, seconds) * 1_000_000_000))
    }

    package func gauge(_ name: String, _ labels: [String: String]) -> Meter {
        Meter(label: name, dimensions: Self.dimensions(labels), factory: factory)
    }

    // MARK: reading

    /// A series' current value as a scrape shows it (tests, the demo's summary); 0 when it does not exist.
    /// swift-prometheus keeps values private, so this reads the registry's own rendering: what a test
    /// asserts here is what Prometheus would scrape.
    public func value(_ name: String, _ labels: [String: String] = [:]) -> Double {
        let prefix = name + Self.labelText(labels) + " "
        for line in registry.emitToString().split(separator: "\n") where line.hasPrefix(prefix) {
            return Double(line.dropFirst(prefix.count)) ?? 0
        }
        return 0
    }

    /// Sum of a family's series over all label sets.
    public func total(_ name: String) -> Double {
        registry.emitToString().split(separator: "\n").reduce(0) { sum, line in
            guard line.hasPrefix(name + "{") || line.hasPrefix(name + " "), let space = line.lastIndex(of: " ") else { return sum }
            return sum + (Double(line[line.index(after: space)...]) ?? 0)
        }
    }

    /// The exposition as it stands (no store reads).
    public func exposition() -> String { registry.emitToString() }

    // MARK: store gauges

    /// What the outbox gauges show, read from the store.
    package struct StoreGauges {
        package var pending: [String: Int] = [:]
        package var lanes: [String: Int] = [:]
        package var oldestCreatedMs: [String: Int64] = [:]
        package var dead = 0
    }

    /// Reads the outbox gauges from `store` (pending entries, lanes with work and oldest pending age per
    /// target backend, dead letters), then renders. A store that does not answer sets `imbridge_store_up`
    /// to 0 and leaves the outbox gauges as they were. Cost: one grouped scan of the pending entries.
    /// `backendsDown`: a backend has failed past `readiness.backend_failing` (`imbridge_ready` is then 0).
    public func scrape(store: BridgeStore, now: Int64, backendsDown: Bool = false) async -> String {
        var storeUp = true
        do {
            var read = StoreGauges()
            let (depths, oldest, dead) = try await store.reading {
                (try $0.laneDepths(), try $0.oldestPendingByTarget(), try $0.count(state: .dead))
            }
            for (laneText, depth) in depths {
                let target = String(laneText.prefix { $0 != "/" })   // a lane is "<target backend>/<conversation>"
                read.pending[target, default: 0] += depth
                read.lanes[target, default: 0] += 1
            }
            read.oldestCreatedMs = Dictionary(uniqueKeysWithValues: oldest.map { ($0.key.rawValue, $0.value) })
            read.dead = dead
            setOutboxGauges(read, now: now)
            gauge("imbridge_store_up", [:]).set(1)
        } catch {
            gauge("imbridge_store_up", [:]).set(0)
            storeUp = false
        }
        gauge("imbridge_ready", [:]).set(storeUp && !backendsDown ? 1 : 0)
        setProcessMetrics(ProcessStats.read())
        count("imbridge_store_statements_total", upTo: Double(store.counters.statements))
        count("imbridge_store_transactions_total", upTo: Double(store.counters.transactions))
        return registry.emitToString()
    }

    /// What each counter read from elsewhere (`count(_:upTo:)`) has already been raised by.
    private let countedUpTo = Mutex<[String: Double]>([:])

    /// Raises the counter `name` to `total` (a counter only moves by increments).
    private func count(_ name: String, upTo total: Double) {
        let delta = countedUpTo.withLock { counted -> Double in
            let delta = max(0, total - counted[name, default: 0])
            counted[name] = max(counted[name, default: 0], total)
            return delta
        }
        FloatingPointCounter(label: name, dimensions: [], factory: factory).increment(by: delta)
    }

    package func setProcessMetrics(_ stats: ProcessStats?) {
        guard let stats else { return }
        count("process_cpu_seconds_total", upTo: stats.cpuSeconds)
        gauge("process_resident_memory_bytes", [:]).set(stats.residentBytes)
        gauge("process_virtual_memory_bytes", [:]).set(stats.virtualBytes)
        gauge("process_open_fds", [:]).set(stats.openFDs)
        if let maxFDs = stats.maxFDs { gauge("process_max_fds", [:]).set(maxFDs) }
        if let start = stats.startTimeSeconds { gauge("process_start_time_seconds", [:]).set(start) }
    }

    /// Sets the per-target gauges for every known target (0 where the store has nothing) and for any
    /// other target the store names (entries left from an earlier configuration).
    private func setOutboxGauges(_ read: StoreGauges, now: Int64) {
        let targets = knownTargets.withLock { known -> Set<String> in
            known.formUnion(read.pending.keys)
            known.formUnion(read.oldestCreatedMs.keys)
            return known
        }
        for target in targets {
            let labels = ["target": target]
            gauge("imbridge_outbox_pending", labels).set(Double(read.pending[target] ?? 0))
            gauge("imbridge_outbox_lanes_with_work", labels).set(Double(read.lanes[target] ?? 0))
            let age = read.oldestCreatedMs[target].map { Double(max(0, now - $0)) / 1000 } ?? 0
            gauge("imbridge_outbox_oldest_pending_age_seconds", labels).set(age)
        }
        gauge("imbridge_outbox_dead_letters", [:]).set(Double(read.dead))
    }

    // MARK: labels

    /// Labels in name order: the registry keys a series by its label list, order included, so one
    /// order keeps one series per label set.
    package static func dimensions(_ labels: [String: String]) -> [(String, String)] {
        labels.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// `{a="x",b="y"}` as the text format writes it (backslash, double quote and line feed escaped).
    package static func labelText(_ labels: [String: String]) -> String {
        guard !labels.isEmpty else { return "" }
        let body = dimensions(labels).map { key, value in
            let escaped = value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\n", with: "\\n")
            return "\(key)=\"\(escaped)\""
        }
        return "{\(body.joined(separator: ","))}"
    }
}

/// The swift-metrics factory of one `RelayMetrics`: counters, meters and timers become series of its
/// registry, named by their label, with their family's help text (`RelayMetrics.families`); a timer
/// records in seconds into `RelayMetrics.latencyBuckets`.
public struct RelayMetricsFactory: MetricsFactory {
    public let registry: PrometheusCollectorRegistry

    package func descriptor(_ label: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: label, unitName: "", helpText: RelayMetrics.families[label]?.help ?? "")
    }

    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    public func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else { return registry.makeGauge(descriptor: descriptor(label), labels: dimensions) }
        return registry.makeValueHistogram(descriptor: descriptor(label), labels: dimensions, buckets: RelayMetrics.latencyBuckets)
    }

    public func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: descriptor(label), labels: dimensions)
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        registry.makeDurationHistogram(descriptor: descriptor(label), labels: dimensions,
                                       buckets: RelayMetrics.latencyBuckets.map { Duration.milliseconds(Int64($0 * 1000)) })
    }

    public func destroyCounter(_ handler: any CounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    public func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    public func destroyRecorder(_ handler: any RecorderHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
        if let histogram = handler as? ValueHistogram { registry.unregisterValueHistogram(histogram) }
    }

    public func destroyMeter(_ handler: any MeterHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
    }

    public func destroyTimer(_ handler: any TimerHandler) {
        if let histogram = handler as? DurationHistogram { registry.unregisterDurationHistogram(histogram) }
    }
}
