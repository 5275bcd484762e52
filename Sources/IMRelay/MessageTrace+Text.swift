import Foundation
import IMCore
import IMStore

extension MessageTracer {
    /// The traces for `imbridge trace` and `/trace`: of the message `id`, or of the messages of
    /// `conversation` around `at` (one per source message).
    package func traces(id: String, _ tx: StoreTransaction) throws -> [MessageTrace] { [try trace(id, tx)] }

    package func traces(conversation: ConversationRef, on backend: BackendID?, at: Int64, windowMs: Int64,
                        _ tx: StoreTransaction) throws -> [MessageTrace] {
        var seen = Set<String>()
        return try candidates(in: conversation, on: backend, at: at, windowMs: windowMs, tx).compactMap { id in
            let trace = try trace(id, tx)
            return seen.insert("\(trace.sourceBackend ?? "")\u{1}\(trace.sourceMessage)").inserted ? trace : nil
        }
    }

    /// Parses `--at`: an ISO 8601 time (`2026-11-29T10:02:00Z`, fractions allowed) or a number of
    /// milliseconds (seconds when it has at most 10 digits) since 1970.
    package static func parseTime(_ text: String) -> Int64? {
        if let number = Int64(text) { return text.count <= 10 ? number * 1000 : number }
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return Int64(date.timeIntervalSince1970 * 1000) }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text).map { Int64($0.timeIntervalSince1970 * 1000) }
    }

    /// Parses `--conversation`: `KIND:ID` (kinds `direct`, `group`, `chatroom`, `system`), or
    /// `BACKEND:KIND:ID` to name the backend too (and for any other kind).
    package static func parseConversation(_ text: String) throws -> (BackendID?, ConversationRef) {
        let known: Set<String> = ["direct", "group", "chatroom", "system"]
        if let colon = text.firstIndex(of: ":"), known.contains(String(text[..<colon])), let conversation = try? ConversationRef(parsing: text) {
            return (nil, conversation)
        }
        guard let colon = text.firstIndex(of: ":"),
              let conversation = try? ConversationRef(parsing: String(text[text.index(after: colon)...])) else {
            throw IMError(.invalidArgument, "conversation '\(text)' is not KIND:ID or BACKEND:KIND:ID (group:g1, wk:group:g1)")
        }
        return (BackendID(String(text[..<colon])), conversation)
    }
}

extension MessageTrace {
    /// The table `imbridge trace` prints: one line per hop, the time first.
    package static func text(_ traces: [MessageTrace]) -> String {
        guard !traces.isEmpty else { return "no message found\n" }
        var out = ""
        for trace in traces {
            out += "message \(trace.sourceMessage)" + (trace.sourceBackend.map { " on \($0)" } ?? "")
                + (trace.query != trace.sourceMessage ? " (asked as \(trace.query))" : "") + ": \(trace.status)\n"
            if trace.hops.isEmpty { out += "  nothing in the store: not received, held by catch-up in memory, or pruned (retention)\n" }
            for hop in trace.hops {
                let time = (hop.time ?? "now").padding(toLength: 24, withPad: " ", startingAt: 0)
                out += "  \(time)  \(hop.hop.padding(toLength: 19, withPad: " ", startingAt: 0)) \(hop.summary)\n"
            }
        }
        return out
    }
}

extension MessageTrace.Hop {
    /// The hop's fields as `name=value` words, in a fixed order.
    var summary: String {
        let fields: [(String, String?)] = [
            ("backend", backend), ("event", eventID), ("trace_id", traceID), ("kind", kind), ("entry", outboxID.map { "#\($0)" }), ("lane", lane), ("action", action),
            ("route", route), ("attempt", attempt.map(String.init)), ("attempts", attempts.map(String.init)), ("outcome", outcome),
            ("class", errorClass), ("code", errorCode), ("vendor_code", vendorCode), ("retry_in_ms", retryInMs.map(String.init)),
            ("listener", listener), ("instance", instance), ("target", targetBackend), ("target_message", targetMessage), ("conversation", targetConversation),
            ("client_id", clientID), ("error", error.map { String($0.prefix(200)) }), ("reason", reason.map { String($0.prefix(300)) }), ("note", note),
        ]
        return fields.compactMap { name, value in value.map { "\(name)=\($0)" } }.joined(separator: " ")
    }
}
