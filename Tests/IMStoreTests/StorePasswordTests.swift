import Foundation
import IMCore
import IMStore
import PostgresTestSupport
import Testing

/// The store URL's user and password are decoded once: `%2541` is the literal `%41`, `%25` a `%`,
/// `%40` an `@`, `%3A` a `:`, `%C3%A9` an `é` (docs/configuration.md, "store").
@Suite struct StorePasswordTests {
    /// (written in the URL, the password it means)
    static let passwords: [(String, String)] = [
        ("%2541", "%41"),
        ("%41", "A"),
        ("100%25", "100%"),
        ("a%40b", "a@b"),
        ("a%3Ab", "a:b"),
        ("a:b", "a:b"),
        ("caf%C3%A9", "café"),
        ("%25C3%25A9", "%C3%A9"),
        ("p%2Fq%3Fr%23s", "p/q?r#s"),
    ]

    @Test(arguments: passwords) func thePasswordIsDecodedOnce(_ written: String, _ meant: String) throws {
        let location = try StoreLocation(parsing: "postgres://imb:\(written)@db:5433/imbridge", environment: [:])
        #expect(location.password == meant)
        #expect(location.host == "db" && location.port == 5433 && location.user == "imb" && location.database == "imbridge")
        #expect(!location.redacted.contains(meant) && !location.redacted.contains(written))
    }

    @Test func theUserIsDecodedOnceAndTheEnvironmentPasswordIsTakenAsItIs() throws {
        let location = try StoreLocation(parsing: "postgres://b%2541r%40x@db/imbridge", environment: [StoreLocation.passwordVariable: "%2541"])
        #expect(location.user == "b%41r@x")
        #expect(location.password == "%2541", "the environment's password is not URL-decoded")
    }

    /// Against a server that checks passwords (SCRAM): a role whose password holds `%41`, `%`, `@`, `:`
    /// and `é` opens the store with its URL-encoded password, and a password decoded twice is refused.
    @Test func aPasswordWithEscapesAuthenticates() async throws {
        let cluster = try await TestPostgres.startPrivateCluster()
        defer { TestPostgres.destroy(cluster) }
        let password = "p%41:100%@x-é"
        let role = "pwcheck"
        _ = try TestPostgres.query(cluster.url, "CREATE ROLE \(role) LOGIN SUPERUSER PASSWORD '\(password)'")
        // This role (and only it) must give its password; the cluster's own user keeps `trust`.
        let hba = cluster.directory + "/data/pg_hba.conf"
        let rules = try String(contentsOfFile: hba, encoding: .utf8)
        try ("host all \(role) 127.0.0.1/32 scram-sha-256\nhost all \(role) ::1/128 scram-sha-256\n" + rules)
            .write(toFile: hba, atomically: true, encoding: .utf8)
        _ = try TestPostgres.query(cluster.url, "SELECT pg_reload_conf()")
        let server = try #require(URLComponents(string: cluster.url))
        func url(_ encodedPassword: String) -> String {
            "postgres://\(role):\(encodedPassword)@127.0.0.1:\(server.port ?? 5432)/imbridge?schema=pwcheck"
        }
        let encoded = "p%2541%3A100%25%40x-%C3%A9"
        let store = try BridgeStore(path: url(encoded))
        #expect(try store.transaction { try $0.recordEvent("rc", "msg:1", kind: "message", at: 1) })
        #expect(throws: (any Error).self, "the password decoded twice (p A:…) is not the role's") {
            _ = try BridgeStore(path: url("pA%3A100%25%40x-%C3%A9"))
        }
        #expect(throws: (any Error).self, "nothing authenticates without the password") {
            _ = try BridgeStore(path: "postgres://\(role)@127.0.0.1:\(server.port ?? 5432)/imbridge?schema=pwcheck")
        }
    }
}
