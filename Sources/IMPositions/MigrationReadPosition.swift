import Foundation
import IMCore

/// How far an `imbridge migrate` run beside the bridge has read a source conversation's history, among
/// the messages a callback can still bring (`migrated/<backend>/<conversation>` in the store's
/// checkpoints, stored as a `CatchUpCheckpoint.Record` with its time and id). The migration writes it
/// with the page it queues; the bridge's intake reads it, with the conversation's catch-up checkpoint, to
/// find a callback that comes only now for a message a read went past — one its source's history no
/// longer listed when read (docs/architecture.md, "Callbacks behind the catch-up position").
package enum MigrationReadPosition {
    package static let prefix = "migrated/"

    package static func name(for key: CatchUpKey) -> String {
        "\(prefix)\(key.backend.rawValue)/\(key.conversation)"
    }
}
