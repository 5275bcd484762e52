#if canImport(Glibc)
import Foundation
import Glibc

/// A raw TCP connection to a loopback port, for requests no HTTP client sends: headers trickled a byte
/// at a time, a body that stops half way, a chunk size of 2^64−1. Blocking calls: use it from its own
/// `Thread` (`RawConnection.run`), never from the cooperative pool.
public final class RawConnection: @unchecked Sendable {
    public let fd: Int32
    public private(set) var received: [UInt8] = []
    /// Set once the server closed (EOF or reset) the connection.
    public private(set) var closed = false

    public init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .ECONNREFUSED)
        }
    }

    deinit { close(fd) }

    /// Ends the connection from this side (both directions); the descriptor is freed at deinit.
    public func shutdown() { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }

    /// Sends everything (blocking); false once the peer closed or reset.
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 {
                if sent < 0 && errno == EINTR { continue }
                return false
            }
            offset += sent
        }
        return true
    }

    @discardableResult
    public func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Waits up to `seconds` for data; reads what there is into `received`. True when the connection
    /// is closed (EOF or error).
    @discardableResult
    public func poll(seconds: Double) -> Bool {
        if closed { return true }
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = Glibc.poll(&pfd, 1, Int32(max(0, seconds * 1000)))
        guard ready > 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count <= 0 {
            closed = true
        } else {
            received += buffer[0..<count]
        }
        return closed
    }

    /// Reads until `condition(received)` holds, the connection closes, or `seconds` pass.
    public func read(seconds: Double, until condition: ([UInt8]) -> Bool) {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition(received), !closed, Date() < deadline { poll(seconds: min(0.1, deadline.timeIntervalSinceNow)) }
    }

    /// What was received as text.
    public var text: String { String(decoding: received, as: UTF8.self) }

    /// The status code of the first response received, if any.
    public var status: Int? {
        guard text.hasPrefix("HTTP/1.1 "), text.count >= 12 else { return nil }
        return Int(text.dropFirst(9).prefix(3))
    }

    /// Runs `body` on a thread of its own and returns its result (blocking socket work off the pool).
    public static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            let thread = Thread { continuation.resume(returning: body()) }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }
}

/// The resident set size of a process in kilobytes (`VmRSS` of /proc/PID/status), nil where unreadable.
public func residentKilobytes(of pid: Int32) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
    return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
}
#endif
