import Foundation
import IMStore
import Testing

/// `checkpoints(prefix:)`, which catch-up lists its per-conversation checkpoints with, on both stores.
@Suite struct CheckpointPrefixTests {
    @Test(arguments: StoreKind.allCases) func listsByPrefixInNameOrder(_ kind: StoreKind) throws {
        let store = try BridgeStore(path: try kind.freshLocation())
        try store.transaction { tx in
            try tx.setCheckpoint("catchup/wk/group:g2", "{\"seq\":2}", at: 1)
            try tx.setCheckpoint("catchup/wk/group:g1", "{\"seq\":1}", at: 1)
            try tx.setCheckpoint("catchup_other", "x", at: 1)
            try tx.setCheckpoint("jmessage.jm.poller", "y", at: 1)
            try tx.setCheckpoint("catchup/rc/group:100%_", "z", at: 1)
        }
        let listed = try store.read { try $0.checkpoints(prefix: "catchup/wk/") }
        #expect(listed.map(\.name) == ["catchup/wk/group:g1", "catchup/wk/group:g2"])
        #expect(listed.map(\.value) == ["{\"seq\":1}", "{\"seq\":2}"])
        // `%` and `_` are plain characters in a prefix (no LIKE patterns).
        #expect(try store.read { try $0.checkpoints(prefix: "catchup/rc/group:100%") }.map(\.value) == ["z"])
        #expect(try store.read { try $0.checkpoints(prefix: "catchup/").count } == 3)
        #expect(try store.read { try $0.checkpoints(prefix: "nothing/") }.isEmpty)
    }
}
