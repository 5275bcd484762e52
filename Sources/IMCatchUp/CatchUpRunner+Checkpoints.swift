import Foundation
import IMAdapterKit
import IMCore
import IMStore
import Logging
import IMRelay
import IMOutbox

/// The conversations a catch-up covers, and their checkpoints in the store.
extension CatchUpRunner {
    // MARK: conversations

    func covered(_ key: CatchUpGate.Key) -> Bool {
        !routes.legs(from: key.backend, conversation: key.conversation).isEmpty
    }

    /// Conversations routes name on `backend` (`wk:group:g1`).
    func namedConversations(of backend: BackendID) -> [CatchUpGate.Key] {
        routes.routes.flatMap { route -> [RouteEndpoint] in
            route.direction == .both ? [route.from, route.to] : [route.from]
        }.compactMap { endpoint in
            guard endpoint.backend == backend, let id = endpoint.id,
                  let conversation = try? ConversationRef(parsing: "\(endpoint.kind):\(id)") else { return nil }
            return CatchUpGate.Key(backend: backend, conversation: conversation)
        }
    }

    /// Conversations the source lists for the users seen so far (wildcard routes only).
    func discovered(_ backend: BackendID) async -> [CatchUpGate.Key] {
        guard let source = sources[backend],
              routes.routes.contains(where: { ($0.from.backend == backend && $0.from.id == nil) || ($0.direction == .both && $0.to.backend == backend && $0.to.id == nil) })
        else { return [] }
        let users = Set(records.filter { $0.key.backend == backend }.compactMap { $0.value.viewer }).sorted()
        var found: [CatchUpGate.Key] = []
        for user in users {
            do {
                for conversation in try await source.catchUpConversations(of: UserID(user)) {
                    let key = CatchUpGate.Key(backend: backend, conversation: conversation)
                    guard covered(key) else { continue }
                    found.append(key)
                    // Known from the store (the intake may have positioned it) or new: never a blank record
                    // over a stored one, which the next save would write back without its position.
                    if records[key] == nil, var record = try? await storedRecord(key) {
                        if record.viewer == nil { record.viewer = user }
                        records[key] = record
                    }
                }
            } catch let error as IMError where error.code == .unsupported {
                return found
            } catch {
                metrics.increment("imbridge_catch_up_errors_total", ["backend": backend.rawValue])
                logger.warning("catch-up could not list a user's conversations", metadata: ["backend": "\(backend)", "user": "\(user)", "error": "\(error)"])
            }
        }
        return found
    }

    // MARK: checkpoints

    /// Moves the checkpoints of what live traffic recorded (and the members seen) into the store.
    func flushObserved() async {
        var changed = unsaved
        for (key, observed) in gate.drainObserved() where sources[key.backend] != nil && covered(key) {
            // A conversation's first checkpoint is the intake's to write (positioned at its first message,
            // in the transaction that records it) or a catch-up read's: one not in the store yet waits, so
            // that a flush racing that transaction never writes a checkpoint without a position over it.
            guard var record = try? await knownRecord(key) else {
                gate.putBack(key, observed)
                continue
            }
            if let sender = observed.sender, !routes.isBridgeIdentity(sender, on: key.backend) { record.viewer = sender.rawValue }
            if let last = observed.last, let source = sources[key.backend], (last.seq ?? 0) > (record.seq ?? 0) {
                record.cursor = (try? source.cursor(for: last))?.rawValue ?? record.cursor
                record.seq = last.seq
                record.at = last.sentAt
                record.id = last.id.rawValue
            }
            if record != records[key] || records[key] == nil {
                changed[key] = record
                records[key] = record
            }
        }
        guard !changed.isEmpty else { return }
        do {
            try await save(changed)
            unsaved = [:]
        } catch {
            unsaved = changed
            logger.warning("catch-up checkpoints not saved; tried again in a second", metadata: ["error": "\(error)"])
        }
    }

    /// `key`'s checkpoint: as this runner last saved or loaded it, else as stored (the intake writes a
    /// conversation's first checkpoint itself), else empty. Throws when the store cannot be read, so
    /// that nothing overwrites a checkpoint it has not seen.
    func storedRecord(_ key: CatchUpGate.Key) async throws -> Record {
        try await knownRecord(key) ?? Record()
    }

    /// `storedRecord`, but nil when the store has no checkpoint for `key` yet (one that does not decode
    /// reads as empty).
    func knownRecord(_ key: CatchUpGate.Key) async throws -> Record? {
        if let known = records[key] { return known }
        let name = Self.checkpointName(for: key)
        let value = try await store.reading { try $0.checkpoint(name) }
        if let known = records[key] { return known }   // saved or loaded while the store was read
        guard let value else { return nil }
        guard let record = Record(stored: value) else { return Record() }
        records[key] = record
        return record
    }

    /// Through the store's group commit (beside the callbacks' and lanes' writes). A position another
    /// instance stored past this runner's is kept (`Record.merged(over:)`); returns what was stored.
    @discardableResult
    func save(_ changed: [CatchUpGate.Key: Record]) async throws -> [CatchUpGate.Key: Record] {
        let now = clock.nowMs()
        let saved = try await store.groupedTransaction { tx -> [CatchUpGate.Key: Record] in
            var saved: [CatchUpGate.Key: Record] = [:]
            for (key, record) in changed {
                let name = Self.checkpointName(for: key)
                let merged = record.merged(over: try tx.checkpoint(name).flatMap(Record.init(stored:)))
                try tx.setCheckpoint(name, try merged.stored(), at: now)
                saved[key] = merged
            }
            return saved
        }
        for (key, record) in saved { records[key] = record }
        gate.markKnown(changed.keys)
        return saved
    }
}
