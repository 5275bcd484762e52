import Foundation
import IMCore

/// How far an `imbridge migrate` run beside the bridge has read a source conversation's history, among
/// the messages a callback can still bring (`migrated/<backend>/<conversation>` in the store's
/// checkpoints). The migration writes it with the page it queues; the bridge's intake reads it to find a
/// callback that comes only now for a message the migration read past — one its source's history no
/// longer listed when read (docs/architecture.md, "Callbacks behind the catch-up position").
package enum MigrationReadPosition {
    package static let prefix = "migrated/"

    /// The last message read (its time and id), as stored (JSON).
    package struct Record: Codable, Sendable, Equatable {
        package var at: Int64
        package var id: String

        package init(at: Int64, id: String) { (self.at, self.id) = (at, id) }

        package func stored() throws -> String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            return String(decoding: try encoder.encode(self), as: UTF8.self)
        }

        package init?(stored value: String) {
            guard let record = try? JSONDecoder().decode(Record.self, from: Data(value.utf8)) else { return nil }
            self = record
        }
    }

    package static func name(for key: CatchUpKey) -> String {
        "\(prefix)\(key.backend.rawValue)/\(key.conversation)"
    }
}
