import Foundation
import IMStore
import PostgresTestSupport
import Testing

/// The implementations every store test runs against: the one suite, parameterized (`@Test(arguments:
/// StoreKind.allCases)`), so both keep the contract written on `BridgeStore` and `StoreTransaction`.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres

    var testDescription: String { rawValue }

    /// A new, empty store location of this kind (open it again with the same string to reopen it).
    func freshLocation() throws -> String {
        switch self {
        case .sqlite: return FileManager.default.temporaryDirectory.appendingPathComponent("imstore-\(UUID().uuidString).sqlite").path
        case .postgres: return try TestPostgres.freshURL("store")
        }
    }

    /// A location that cannot be opened.
    var unopenable: String {
        switch self {
        case .sqlite: "/nonexistent-dir/x/store.sqlite"
        case .postgres: "postgres://imbridge@127.0.0.1:1/imbridge"
        }
    }
}
