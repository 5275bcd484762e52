import Foundation
@testable import IMStore
@testable import IMStorePostgres
import PostgresNIO
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A PostgreSQL server that stops answering (a network cut, a host gone without closing its sockets)
/// must not hold a store caller for ever: opening a connection, like any statement, gives up after the
/// session's answer timeout with a store failure the bridge retries.
@Suite struct PostgresSilenceTests {
    /// A loopback port whose connections the kernel completes (backlog) but nobody ever reads or answers.
    static func silentPort() throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        try #require(bound == 0 && listen(fd, 16) == 0)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    @Test func aServerThatNeverAnswersFailsTheCallerInsteadOfHoldingIt() throws {
        #if os(Linux)
        let (fd, port) = try Self.silentPort()
        defer { close(fd) }
        let configuration = PostgresConnection.Configuration(host: "127.0.0.1", port: port, username: "u", password: "p", database: "d", tls: .disable)
        let session = PostgresSession(configuration: configuration, answerTimeout: .milliseconds(700))
        let started = Date()
        #expect(throws: PostgresFailure.self) { try session.query("SELECT 1") }
        let waited = Date().timeIntervalSince(started)
        #expect(waited >= 0.6 && waited < 10, "gave up after \(waited) s")
        #expect(!session.isConnected)
        #endif
    }
}
