import Foundation
import IMAdapterKit
import IMCore
import IMStore
import IMTelemetry
import Logging
import IMPositions

/// Callbacks behind the catch-up position (docs/architecture.md, "Callbacks behind the catch-up
/// position"). On a source whose history drops what is recalled or deleted (`ChangeWindowSource`: NIM
/// drops a recalled message, RongCloud an `isDelete` recall), a message whose callback could not be
/// recorded and that was then taken back is not met by catch-up, which reads on past it; when the
/// vendor's retried callback comes later, relaying it would put it behind every newer message, shown
/// until its recall follows. So a callback for a message sent before the last message catch-up confirmed
/// in its conversation, and not recorded yet, is looked up in the source's history first:
/// - still shown there: relayed as it came (late, but not lost);
/// - gone (or shown recalled): **withheld** — its ledger row, the ledger row of the change that took it
///   away (`ChangeWindowSource.absenceEvent`, so the vendor's recall callback, when it comes, is a
///   duplicate) and a `withheld:<message id>` row are recorded, nothing is queued for any target;
/// - history cannot tell, or cannot be read: relayed as it came (nothing is lost for a lookup).
/// The position is also one stored by another read — an `imbridge migrate` run's, or another instance's
/// catch-up — read from the store in the intake's transaction (`readPast`). The live path makes no vendor call for this: the gate compares times in memory, the
/// intake reads one row per conversation, and only messages behind a position meet the ledger (one read)
/// and, when not recorded, the vendor.
extension RelayEngine {
    /// A message withheld from the targets (gone from its source's history), with the change that took it away.
    package struct Withheld: Sendable {
        package var message: IMEvent
        package var absence: IMEvent?
    }

    /// The ledger row that marks a withheld message (changes that refer to it wait for no copy).
    static func withheldEventID(_ message: MessageID) -> EventID { EventID("withheld:\(message.rawValue)") }

    /// `events` without the messages withheld (see the extension), and those.
    package nonisolated func screenBehind(_ events: [IMEvent]) async -> (relay: [IMEvent], withheld: [Withheld]) {
        let behind = intake.gate.behindConfirmed(events).filter { backends[$0.backend] is any ChangeWindowSource }
        guard !behind.isEmpty else { return (events, []) }
        // Recorded already (a redelivered callback, a message a read took): the ledger drops it, no lookup.
        guard let unrecorded = try? await store.reading({ tx in try behind.filter { !(try tx.hasEvent($0.backend, $0.eventID)) } }),
              !unrecorded.isEmpty else { return (events, []) }
        var withheld: [Withheld] = []
        for event in unrecorded {
            guard case .message(let message) = event.kind, let source = backends[event.backend] as? any ChangeWindowSource else { continue }
            do {
                guard try await source.showsInHistory(message) == false else { continue }
            } catch {
                metrics.increment("imbridge_catch_up_errors_total", ["backend": event.backend.rawValue])
                logs.relay.warning("a message behind the catch-up position could not be looked up in history; relayed as it came", metadata: [
                    "backend": "\(event.backend)", "conversation": "\(message.conversation)", "message": "\(message.id)",
                    "error": "\(String("\(error)".prefix(300)))",
                ])
                continue
            }
            withheld.append(Withheld(message: event, absence: source.absenceEvent(of: message.id, in: message.conversation, at: clock.nowMs(),
                                                                                  by: message.sender)))
        }
        let taken = Set(withheld.map(\.message.eventID))
        return (events.filter { !taken.contains($0.eventID) }, withheld)
    }

    /// Records the withheld messages' ledger rows (see the extension), in the intake's transaction;
    /// returns those new to the ledger.
    nonisolated func recordWithheld(_ withheld: [Withheld], _ tx: StoreTransaction, at now: Int64, origin: EventOrigin?) throws -> [Withheld] {
        guard !withheld.isEmpty else { return [] }
        var rows: [StoreTransaction.InboundEvent] = []
        for item in withheld {
            guard case .message(let message) = item.message.kind else { continue }
            let backend = item.message.backend
            rows.append(.init(backend: backend, eventID: item.message.eventID, kind: item.message.kindName, message: message.id))
            rows.append(.init(backend: backend, eventID: Self.withheldEventID(message.id), kind: "withheld", message: nil))
            if let absence = item.absence { rows.append(.init(backend: backend, eventID: absence.eventID, kind: absence.kindName, message: nil)) }
        }
        let outcomes = try tx.recordEvents(rows, at: now, origin: origin)
        var new: [Withheld] = []
        var index = 0
        for item in withheld {
            guard case .message = item.message.kind else { continue }
            if case .new = outcomes[index] { new.append(item) }
            index += item.absence == nil ? 2 : 3
        }
        return new
    }

    /// Counted and logged once recorded.
    nonisolated func noteWithheld(_ withheld: [Withheld]) {
        for item in withheld {
            guard case .message(let message) = item.message.kind else { continue }
            metrics.increment("imbridge_catch_up_withheld_total", ["backend": item.message.backend.rawValue])
            logs.relay.info("a late message gone from its source's history is withheld (recalled or deleted there before the bridge recorded it)",
                            metadata: ["backend": "\(item.message.backend)", "conversation": "\(message.conversation)",
                                       "message": "\(message.id)", "sent_at": "\(message.sentAt)"])
        }
    }

    /// Live messages a stored read position is past without their having been recorded: an `imbridge
    /// migrate` run's beside the bridge (`MigrationReadPosition`), or a catch-up's of any instance on the
    /// store (`CatchUpCheckpoint`; this instance's gate knows only its own reads). Found in the intake's
    /// transaction, which then records nothing; the gate takes the positions and the batch is screened
    /// again (`screeningReadPast`).
    package struct ReadPast: Error {
        var positions: [CatchUpGate.Key: (at: Int64, id: String)]
        /// How often one batch is sent back (a read going on meanwhile moves its position again).
        static let maxPasses = 3
    }

    /// Runs `record` (which screens its messages and records them) until no stored read position sends
    /// them back (`ReadPast`): the gate takes the positions each time; the last pass checks none.
    package nonisolated func screeningReadPast<T>(_ record: @Sendable (_ checkReadPast: Bool) async throws -> T) async throws -> T {
        var pass = 0
        while true {
            do {
                return try await record(pass < ReadPast.maxPasses)
            } catch let past as ReadPast {
                for (key, position) in past.positions {
                    intake.gate.confirm(key, at: position.at, id: position.id)
                    logs.relay.info("a callback behind another read's position (a migration's or another instance's catch-up): screened as behind the catch-up position", metadata: [
                        "backend": "\(key.backend)", "conversation": "\(key.conversation)", "read_through": "\(position.id)",
                    ])
                }
                pass += 1
            }
        }
    }

    /// The stored read positions of the conversations of `events` that some message of theirs is behind —
    /// a message of a source whose history drops what is taken back (`ChangeWindowSource`), sent before the
    /// position, not behind the gate's own position (screened already) and not recorded yet — else nil.
    /// Two reads of one row each (the migration's, the catch-up's) per such conversation.
    nonisolated func readPast(_ events: [IMEvent], _ tx: StoreTransaction) throws -> ReadPast? {
        // A WuKong or JMessage callback (no `ChangeWindowSource`) costs nothing here: no read, no set built.
        let candidates = events.filter { event in
            guard case .message = event.kind else { return false }
            return backends[event.backend] is any ChangeWindowSource
        }
        guard !candidates.isEmpty else { return nil }
        let screened = Set(intake.gate.behindConfirmed(candidates).map(\.eventID))
        var stored = StoredReadPositions { [MigrationReadPosition.name(for: $0), CatchUpCheckpoint.name(for: $0)] }
        var past: [CatchUpGate.Key: (at: Int64, id: String)] = [:]
        for event in candidates where !screened.contains(event.eventID) {
            guard case .message(let message) = event.kind, let (key, position) = try stored.past(event, message, tx) else { continue }
            past[key] = position
        }
        return past.isEmpty ? nil : ReadPast(positions: past)
    }

    /// Whether `message` of `backend` was withheld: a change that refers to it has no copy to wait for.
    nonisolated func isWithheld(_ message: MessageID, on backend: BackendID) async -> Bool {
        (try? await store.reading { try $0.hasEvent(backend, Self.withheldEventID(message)) }) == true
    }
}

/// Stored read positions of conversations (`names` gives the checkpoints to read for one; the furthest
/// counts), each conversation's read once per use: what the intake's screen (`readPast`) and a migration's
/// (`itemsReadPast`) compare a message with.
struct StoredReadPositions {
    let names: (CatchUpGate.Key) -> [String]
    private var positions: [CatchUpGate.Key: (at: Int64, id: String)?] = [:]

    init(names: @escaping (CatchUpGate.Key) -> [String]) { self.names = names }

    /// The conversation and its stored position when `message` (of `event`) was sent before that position
    /// and the ledger does not hold `event` yet; else nil.
    mutating func past(_ event: IMEvent, _ message: Message, _ tx: StoreTransaction) throws -> (CatchUpGate.Key, (at: Int64, id: String))? {
        let key = CatchUpGate.Key(backend: event.backend, conversation: message.conversation)
        if positions[key] == nil {
            let stored = try names(key).compactMap { try tx.checkpoint($0).flatMap(CatchUpCheckpoint.Record.init(stored:))?.position }
            positions[key] = .some(stored.max { ($0.at, $0.id) < ($1.at, $1.id) })
        }
        guard let position = positions[key] ?? nil, message.sentAt < position.at, try !tx.hasEvent(event.backend, event.eventID) else { return nil }
        return (key, position)
    }
}
