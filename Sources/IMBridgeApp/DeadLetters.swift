import Foundation
import IMRelay
import IMStore

/// What `imbridge deadletters list|retry` does, as library functions (the command prints their text).
///
/// Two kinds of dead letters live in the store:
/// - **outbound**: an outbox entry the target refused for good, or that used up its retry budget;
///   `retry` puts it back in its lane.
/// - **inbound** (poison messages): a message a vendor delivered, correctly authenticated, whose content
///   did not convert (mapping, `validate()`); it was acknowledged so the vendor's stream moved on, and
///   kept with its raw bytes. `retry` converts it again through the backend that received it (after a
///   mapping fix) and, when it converts, takes its events like a callback's.
public enum DeadLetters {
    /// The listing: outbound first (`#<id>`), then inbound (`in#<id>`), each with its reason.
    public static func listing(_ store: BridgeStore) throws -> String {
        let outbound = try store.read { try $0.deadLetters() }
        let inbound = try store.read { try $0.inboundDeadLetters() }
        var out = "\(outbound.count) outbound dead letter(s)\n"
        for letter in outbound {
            out += "  #\(letter.id) \(letter.lane) \(letter.kind) from \(letter.sourceBackend)/\(letter.sourceEventID) attempts=\(letter.attempts): \(letter.lastError ?? "")\n"
        }
        out += "\(inbound.count) inbound dead letter(s) (poison messages, kept with their raw payload)\n"
        for letter in inbound {
            let received = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(letter.receivedAt) / 1000))
            out += "  in#\(letter.id) \(letter.backend) \(letter.key) \(letter.format) \(letter.payload.count) bytes received=\(received)"
                + " retries=\(letter.retries): \(letter.reason)\n"
        }
        return out
    }

    /// Retries outbound dead letters (`outbound` ids; all when both id lists are empty) and inbound ones
    /// (`inbound` ids; all when both are empty) against `bridge`'s store and backends. The bridge need not
    /// be started: a running bridge on the same store picks the queued work up within a second.
    public static func retry(_ bridge: Bridge, outbound: [Int64] = [], inbound: [Int64] = []) async throws -> String {
        let all = outbound.isEmpty && inbound.isEmpty
        var out = ""
        if all || !outbound.isEmpty {
            let count = try bridge.store.transaction { try $0.retryDeadLetters(ids: all ? nil : outbound) }
            out += "\(count) outbound dead letter(s) back in their lanes\n"
        }
        if all || !inbound.isEmpty {
            let result = try await bridge.engine.retryInboundDeadLetters(ids: all ? nil : inbound)
            out += "\(result.relayed) inbound dead letter(s) converted and queued, \(result.stillPoison) still not convertible"
                + (result.skipped > 0 ? ", \(result.skipped) skipped (unknown id, or backend not configured)" : "") + "\n"
        }
        out += "a running bridge picks them up within a second\n"
        return out
    }
}
