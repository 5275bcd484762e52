import Synchronization

/// The bridge's counters, gauges and the relay latency histogram, rendered as Prometheus text at
/// `/metrics`. Names: `imbridge_events_in_total{backend,kind}`, `imbridge_duplicates_total{backend}`,
/// `imbridge_echoes_total{backend}`, `imbridge_relayed_total{target,action}`, `imbridge_retries_total{target}`,
/// `imbridge_dead_letters_total{target}`, `imbridge_store_errors_total{operation}`,
/// `imbridge_inbound_dead_letters_total{backend}` (poison messages set aside), `imbridge_inbound_dead_letters_retried_total`, `imbridge_fallbacks_total{feature,policy}`,
/// `imbridge_lane_depth{lane}`, `imbridge_relay_latency_seconds` (source event time → target accept).
public final class RelayMetrics: Sendable {
    struct State {
        var counters: [String: [String: Double]] = [:]
        var gauges: [String: [String: Double]] = [:]
        var latencyBuckets = [Int](repeating: 0, count: RelayMetrics.bounds.count)
        var latencyCount = 0
        var latencySum = 0.0
    }

    static let bounds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]
    private let state = Mutex(State())

    public init() {}

    public func increment(_ name: String, _ labels: [String: String] = [:], by amount: Double = 1) {
        let key = Self.labelText(labels)
        state.withLock { $0.counters[name, default: [:]][key, default: 0] += amount }
    }

    public func setGauge(_ name: String, _ values: [String: Double], label: String) {
        let rendered = Dictionary(uniqueKeysWithValues: values.map { (Self.labelText([label: $0.key]), $0.value) })
        state.withLock { $0.gauges[name] = rendered }
    }

    public func observeLatency(seconds: Double) {
        state.withLock { state in
            state.latencyCount += 1
            state.latencySum += seconds
            for (index, bound) in Self.bounds.enumerated() where seconds <= bound { state.latencyBuckets[index] += 1 }
        }
    }

    /// A counter's value (tests, the demo's summary).
    public func value(_ name: String, _ labels: [String: String] = [:]) -> Double {
        state.withLock { $0.counters[name]?[Self.labelText(labels)] ?? 0 }
    }

    /// Sum of a counter over all its label sets.
    public func total(_ name: String) -> Double {
        state.withLock { $0.counters[name]?.values.reduce(0, +) ?? 0 }
    }

    public func prometheusText() -> String {
        state.withLock { state in
            var lines: [String] = []
            for name in state.counters.keys.sorted() {
                lines.append("# TYPE \(name) counter")
                for (labels, value) in state.counters[name]!.sorted(by: { $0.key < $1.key }) { lines.append("\(name)\(labels) \(Self.number(value))") }
            }
            for name in state.gauges.keys.sorted() {
                lines.append("# TYPE \(name) gauge")
                for (labels, value) in state.gauges[name]!.sorted(by: { $0.key < $1.key }) { lines.append("\(name)\(labels) \(Self.number(value))") }
            }
            let histogram = "imbridge_relay_latency_seconds"
            lines.append("# TYPE \(histogram) histogram")
            for (index, bound) in Self.bounds.enumerated() {
                lines.append("\(histogram)_bucket{le=\"\(bound)\"} \(state.latencyBuckets[index])")
            }
            lines.append("\(histogram)_bucket{le=\"+Inf\"} \(state.latencyCount)")
            lines.append("\(histogram)_sum \(state.latencySum)")
            lines.append("\(histogram)_count \(state.latencyCount)")
            return lines.joined(separator: "\n") + "\n"
        }
    }

    static func labelText(_ labels: [String: String]) -> String {
        guard !labels.isEmpty else { return "" }
        let body = labels.sorted { $0.key < $1.key }.map { key, value in
            "\(key)=\"\(value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\""))\""
        }
        return "{\(body.joined(separator: ","))}"
    }

    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
