import Foundation
import IMCore
import IMStore
import Testing

/// Callback marks (docs/operations.md, "Forged and replayed callbacks") on both store implementations:
/// a signature is remembered with its body digest until it expires, shared by every opener of the store.
@Suite struct CallbackMarkStoreTests {
    func mark(_ key: String, _ digest: String, expires: Int64 = 1_000, backend: BackendID = "rc") -> CallbackMark {
        CallbackMark(backend: backend, key: key, bodyDigest: digest, expiresAt: expires)
    }

    @Test(arguments: StoreKind.allCases) func aSignatureIsTakenOnceForOneBody(_ kind: StoreKind) throws {
        let path = try kind.freshLocation()
        let store = try BridgeStore(path: path)
        #expect(try store.transaction { try $0.rememberCallback(mark("sig-1", "body-a"), at: 10) } == .first)
        #expect(try store.transaction { try $0.rememberCallback(mark("sig-1", "body-a"), at: 11) } == .redelivery)
        #expect(try store.transaction { try $0.rememberCallback(mark("sig-1", "body-b"), at: 12) } == .reused)
        #expect(try store.transaction { try $0.rememberCallback(mark("sig-1", "body-b", backend: "rc2"), at: 12) } == .first,
                "the key includes the backend")
        // Another opener of the same store (another instance) sees the same marks.
        let other = try BridgeStore(path: path)
        #expect(try other.transaction { try $0.rememberCallback(mark("sig-1", "body-c"), at: 13) } == .reused)
        #expect(try other.transaction { try $0.rememberCallback(mark("sig-1", "body-a"), at: 13) } == .redelivery)
    }

    @Test(arguments: StoreKind.allCases) func expiredMarksAreReplacedAndPruned(_ kind: StoreKind) throws {
        let store = try BridgeStore(path: try kind.freshLocation())
        #expect(try store.transaction { try $0.rememberCallback(mark("old", "a", expires: 100), at: 50) } == .first)
        #expect(try store.transaction { try $0.rememberCallback(mark("keep", "a", expires: 500), at: 50) } == .first)
        #expect(try store.transaction { try $0.rememberCallback(mark("old", "b", expires: 400), at: 200) } == .first,
                "an expired mark counts as forgotten")
        #expect(try store.transaction { try $0.rememberCallback(mark("old", "a", expires: 400), at: 201) } == .reused)
        #expect(try store.transaction { try $0.forgetCallbackMarks(expiredBefore: 450, limit: 10) } == 1)
        #expect(try store.transaction { try $0.forgetCallbackMarks(expiredBefore: 450, limit: 10) } == 0)
        #expect(try store.transaction { try $0.rememberCallback(mark("keep", "b", expires: 900), at: 451) } == .reused,
                "a mark not yet expired is kept by pruning")
        #expect(try store.transaction { try $0.forgetCallbackMarks(expiredBefore: 10_000, limit: 10) } == 1)
    }
}
