import IMCore

/// Message expansions (消息扩展) between RongCloud's wire forms and `Expansion`/`ExpansionDelta`.
///
/// **Versions.** RongCloud gives each key an opaque `ts` (query: `{"k":{"v":"…","ts":33831605613}}`)
/// and nothing else. The adapter's rule, deterministic across redelivery and restarts:
/// - a key's `ExpansionEntry.version` is its `ts` exactly as the server reports it;
/// - an inbound change (`RC:MsgExMsg`) has version = the routed `msgTimestamp` of that signalling
///   message (milliseconds), the same value every redelivery carries;
/// - the sandbox stamps each change with `ts = max(now ms, previous ts of the message + 1)` and routes
///   the `RC:MsgExMsg` with that same value as `msgTimestamp`, so the three agree (strictly increasing
///   per message). Against the real server the `ts` scale is UNCONFIRMED (the doc's sample is not epoch
///   milliseconds); only its order per key is relied on.
public enum RongCloudExpansionCodec {
    public static func expansion(from query: [String: RCExpansionValue]) -> Expansion {
        Expansion(entries: query.mapValues { ExpansionEntry(value: $0.v, version: $0.ts) })
    }

    /// Reads a history row's `extraContent` text: the query shape `{"k":{"v","ts"}}` or plain `{"k":"v"}`
    /// (plain values get version 0). Empty or absent text is an empty expansion.
    public static func expansion(fromHistoryText text: String?) throws -> Expansion {
        guard let text, !text.isEmpty else { return Expansion() }
        guard case .object(let object) = try JSONValue.parse(text) else {
            throw IMError(.malformedPayload, "extraContent is not a JSON object")
        }
        var entries: [String: ExpansionEntry] = [:]
        for (key, value) in object {
            if let plain = value.stringValue, value.objectValue == nil {
                entries[key] = ExpansionEntry(value: plain, version: 0)
            } else if let v = value["v"]?.stringValue {
                entries[key] = ExpansionEntry(value: v, version: value["ts"]?.int64Value ?? 0)
            } else {
                throw IMError(.malformedPayload, "extraContent key '\(key)' has no value")
            }
        }
        return Expansion(entries: entries)
    }

    /// The delta an `RC:MsgExMsg` announces, at the routed message's time.
    public static func delta(from signal: RCExpansionSignal, version: Int64) -> ExpansionDelta {
        ExpansionDelta(version: version, set: signal.put, removed: signal.del, cleared: signal.clear)
    }

    /// `extraKeyVal` of a set call: `{"k":"v"}`.
    public static func setText(_ values: [String: String]) -> String {
        JSONValue.object(values.mapValues { .string($0) }).jsonString()
    }

    /// `extraKey` of a delete call: `["k1","k2"]`.
    public static func deleteText(_ keys: [String]) -> String {
        JSONValue.array(keys.map { .string($0) }).jsonString()
    }
}
