import Foundation
import IMCore
import IMStore

/// The source messages of one migrated conversation whose send was started but whose id-map row was not
/// written yet, with the time the attempt started: `<message id> <ms>` lines in one store checkpoint.
///
/// An entry is added before the send and removed in the id-map transaction, so after a crash (or a send
/// that failed in a way that may have committed on the vendor's side) exactly these messages may already
/// be on the target; `Migrator` looks for them there before sending again.
struct PendingSends {
    let store: BridgeStore
    let name: String
    private(set) var entries: [MessageID: Int64]

    init(store: BridgeStore, name: String) throws {
        self.store = store
        self.name = name
        var entries: [MessageID: Int64] = [:]
        for line in (try store.read { try $0.checkpoint(name) } ?? "").split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let ms = Int64(parts[1]) { entries[MessageID(String(parts[0]))] = ms }
        }
        self.entries = entries
    }

    /// When an earlier attempt to send this message started, if one may have reached the target.
    func attempt(of message: MessageID) -> Int64? { entries[message] }

    mutating func add(_ message: MessageID, at now: Int64) throws {
        entries[message] = now
        let text = encoded
        try store.transaction { try $0.setCheckpoint(name, text, at: now) }
    }

    mutating func add(_ message: MessageID, in tx: StoreTransaction, at now: Int64) throws {
        entries[message] = now
        try tx.setCheckpoint(name, encoded, at: now)
    }

    mutating func remove(_ message: MessageID, in tx: StoreTransaction, at now: Int64) throws {
        guard entries.removeValue(forKey: message) != nil else { return }
        try tx.setCheckpoint(name, encoded, at: now)
    }

    var encoded: String {
        entries.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue) \($0.value)" }.joined(separator: "\n")
    }
}
