#if canImport(Glibc)
import Foundation
@testable import IMHTTP
import SandboxTestSupport
import Synchronization
import Testing

/// `HTTPServer` with `admit` and `ListenerLimits`, driven over raw sockets: an answer before the body
/// is read, the body cap, the header, body and idle timeouts, and the connection cap. Bounds are the
/// configured timeouts plus generous slack (the machine may be busy); nothing asserts speed beyond them.
@Suite(.serialized) struct ListenerLimitsTests {
    /// A server whose `admit` wants `X-Secret: s3cret` and caps bodies at `cap`; counts the requests
    /// its handler saw (only those whose body was read).
    final class Rig: Sendable {
        final class Seen: Sendable { let requests = Mutex<[HTTPRequestData]>([]) }
        let server: HTTPServer
        let handled = Seen()
        var port: Int { server.port ?? 0 }

        init(limits: ListenerLimits, cap: Int = 1000) {
            let handled = self.handled
            server = HTTPServer(limits: limits, admit: { head in
                guard head.header("X-Secret") == "s3cret" else { return .answer(.text("wrong secret", status: 401)) }
                return .read(upTo: cap)
            }) { request in
                handled.requests.withLock { $0.append(request) }
                return .text("got \(request.body.count)")
            }
        }

        func start() async throws { try await server.start() }
        func stop() async { await server.stop() }
        var handledCount: Int { handled.requests.withLock { $0.count } }
    }

    static let short = ListenerLimits(headerTimeout: .seconds(1), bodyTimeout: .seconds(2), idleTimeout: .seconds(2), maxConnections: 64,
                                      lingerTimeout: .seconds(1))

    /// Seconds until the server closes `connection`, reading (and, with `trickle`, sending one byte of
    /// it every `every` seconds) meanwhile; nil if still open after `limit`.
    static func secondsUntilClosed(_ connection: RawConnection, limit: Double, trickle: String? = nil, every: Double = 0.3) -> Double? {
        let start = Date()
        var bytes = Array((trickle ?? "").utf8)
        var nextSend = Date()
        while Date().timeIntervalSince(start) < limit {
            if !bytes.isEmpty, Date() >= nextSend {
                if !connection.send([bytes.removeFirst()]) { return Date().timeIntervalSince(start) }
                nextSend = Date().addingTimeInterval(every)
            }
            if connection.poll(seconds: 0.05) { return Date().timeIntervalSince(start) }
        }
        return nil
    }

    @Test func aWrongSecretIsAnsweredBeforeTheBodyIsSentAndTheConnectionCloses() async throws {
        let rig = Rig(limits: Self.short, cap: 64 << 20)
        try await rig.start()
        let port = rig.port
        let (status, sentBeforeAnswer, refusedAfter) = await RawConnection.run { () -> (Int?, Int, Double?) in
            guard let connection = try? RawConnection(port: port) else { return (nil, 0, nil) }
            // 20 MB declared; send 256 KB at most and look for the answer, which must come before the rest.
            connection.send("POST /callbacks/wk HTTP/1.1\r\nHost: x\r\nX-Secret: wrong\r\nContent-Length: 20000000\r\n\r\n")
            var sent = 0
            let chunk = [UInt8](repeating: 0x61, count: 16 << 10)
            while sent < 256 << 10, connection.status == nil, connection.send(chunk) {
                sent += chunk.count
                connection.poll(seconds: 0.01)
            }
            connection.read(seconds: 5) { String(decoding: $0, as: UTF8.self).contains("wrong secret") }
            // The server sends nothing more (its side is closed: EOF), drops what still comes during the
            // linger, then closes: from then on the client's writes fail. Keep writing until they do.
            let answered = Date()
            while Date().timeIntervalSince(answered) < 15, connection.send(chunk) { Thread.sleep(forTimeInterval: 0.01) }
            return (connection.status, sent, Date().timeIntervalSince(answered))
        }
        #expect(status == 401)
        #expect(sentBeforeAnswer < 1 << 20, "answered after \(sentBeforeAnswer) bytes of body")
        // Closed after the linger (1 s), not left to drain 20 MB.
        #expect(refusedAfter != nil && refusedAfter! < 1 + 5, "writes still accepted \(String(describing: refusedAfter)) s after the answer")
        #expect(rig.handledCount == 0, "the handler never saw the request")
        await rig.stop()
    }

    @Test func aContentLengthOverTheCapIsAnswered413AtOnce() async throws {
        let rig = Rig(limits: Self.short, cap: 1000)
        try await rig.start()
        let port = rig.port
        let (status, closed) = await RawConnection.run { () -> (Int?, Bool) in
            guard let connection = try? RawConnection(port: port) else { return (nil, false) }
            connection.send("POST /callbacks/wk HTTP/1.1\r\nHost: x\r\nX-Secret: s3cret\r\nContent-Length: 1001\r\n\r\n")
            connection.read(seconds: 5) { String(decoding: $0, as: UTF8.self).contains("\r\n\r\n") }
            return (connection.status, Self.secondsUntilClosed(connection, limit: 10) != nil)
        }
        #expect(status == 413)
        #expect(closed)
        #expect(rig.handledCount == 0)

        // At the cap exactly: read and handled.
        let atCap = await RawConnection.run { () -> String in
            guard let connection = try? RawConnection(port: port) else { return "" }
            connection.send("POST /x HTTP/1.1\r\nHost: x\r\nX-Secret: s3cret\r\nContent-Length: 1000\r\n\r\n" + String(repeating: "b", count: 1000))
            connection.read(seconds: 5) { String(decoding: $0, as: UTF8.self).contains("got 1000") }
            return connection.text
        }
        #expect(atCap.hasPrefix("HTTP/1.1 200") && atCap.contains("got 1000"), "\(atCap)")
        #expect(rig.handledCount == 1)
        await rig.stop()
    }

    @Test func aChunkedBodyIsAnswered413WhenItPassesTheCap() async throws {
        let rig = Rig(limits: Self.short, cap: 1000)
        try await rig.start()
        let port = rig.port
        let status = await RawConnection.run { () -> Int? in
            guard let connection = try? RawConnection(port: port) else { return nil }
            connection.send("POST /x HTTP/1.1\r\nHost: x\r\nX-Secret: s3cret\r\nTransfer-Encoding: chunked\r\n\r\n")
            // 600 + 600 bytes pass the cap; the body never ends.
            connection.send("258\r\n" + String(repeating: "c", count: 600) + "\r\n")
            connection.send("258\r\n" + String(repeating: "c", count: 600) + "\r\n")
            connection.read(seconds: 5) { String(decoding: $0, as: UTF8.self).contains("\r\n\r\n") }
            return connection.status
        }
        #expect(status == 413)
        #expect(rig.handledCount == 0)
        await rig.stop()
    }

    @Test func slowHeadersTrickledBodiesAndAbsurdChunksAreCutOffAtTheirTimeouts() async throws {
        let rig = Rig(limits: Self.short, cap: 1 << 20)
        try await rig.start()
        let port = rig.port
        // Headers one byte every 0.3 s: never complete within the 1 s header timeout.
        let slowHead = await RawConnection.run { () -> (Double?, String) in
            guard let connection = try? RawConnection(port: port) else { return (nil, "") }
            let closed = Self.secondsUntilClosed(connection, limit: 20, trickle: "POST /x HTTP/1.1\r\nHost: x\r\nX-Secret: s3cret\r\nContent-Length: 5\r\n\r\nhello")
            return (closed, connection.text)
        }
        #expect(slowHead.0 != nil && slowHead.0! < 1 + 4, "closed after \(String(describing: slowHead.0)) s")
        #expect(slowHead.1.hasPrefix("HTTP/1.1 408"), "\(slowHead.1)")

        // A complete head, then the body one byte every 0.3 s: cut at the 2 s body timeout.
        let slowBody = await RawConnection.run { () -> (Double?, String) in
            guard let connection = try? RawConnection(port: port) else { return (nil, "") }
            connection.send("POST /x HTTP/1.1\r\nHost: x\r\nX-Secret: s3cret\r\nContent-Length: 100\r\n\r\n")
            let closed = Self.secondsUntilClosed(connection, limit: 20, trickle: String(repeating: "d", count: 100))
            return (closed, connection.text)
        }
        #expect(slowBody.0 != nil && slowBody.0! < 2 + 4, "closed after \(String(describing: slowBody.0)) s")
        #expect(slowBody.1.hasPrefix("HTTP/1.1 408"), "\(slowBody.1)")

        // A chunk of 2^64−1 bytes, a few of them sent: refused by the parser or cut at the body timeout.
        let hugeChunk = await RawConnection.run { () -> Double? in
            guard let connection = try? RawConnection(port: port) else { return nil }
            connection.send("POST /x HTTP/1.1\r\nHost: x\r\nX-Secret: s3cret\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFF\r\nabc")
            return Self.secondsUntilClosed(connection, limit: 20)
        }
        #expect(hugeChunk != nil && hugeChunk! < 2 + 4, "closed after \(String(describing: hugeChunk)) s")
        #expect(rig.handledCount == 0)
        await rig.stop()
    }

    /// The clocks share one timer set for the soonest end: a body still arriving when the header timeout
    /// (1 s) passes is cut only at the body timeout (4 s), so one that ends before is answered.
    @Test func aBodyArrivingPastTheHeaderTimeoutIsTakenWithinTheBodyTimeout() async throws {
        let rig = Rig(limits: ListenerLimits(headerTimeout: .seconds(1), bodyTimeout: .seconds(4), idleTimeout: .seconds(6), maxConnections: 64,
                                             lingerTimeout: .seconds(1)))
        try await rig.start()
        let port = rig.port
        let answer = await RawConnection.run { () -> String in
            guard let connection = try? RawConnection(port: port) else { return "" }
            connection.send("POST /x HTTP/1.1\r\nHost: x\r\nX-Secret: s3cret\r\nContent-Length: 5\r\n\r\n")
            for byte in Array("abcde".utf8) {
                Thread.sleep(forTimeInterval: 0.35)
                connection.send([byte])
            }
            connection.read(seconds: 5) { String(decoding: $0, as: UTF8.self).contains("got 5") }
            return connection.text
        }
        #expect(answer.hasPrefix("HTTP/1.1 200") && answer.contains("got 5"), "\(answer)")
        await rig.stop()
    }

    @Test func anIdleKeptAliveConnectionIsClosedAfterTheIdleTimeout() async throws {
        let rig = Rig(limits: Self.short)
        try await rig.start()
        let port = rig.port
        let (first, closedAfter) = await RawConnection.run { () -> (String, Double?) in
            guard let connection = try? RawConnection(port: port) else { return ("", nil) }
            connection.send("POST /x HTTP/1.1\r\nHost: x\r\nX-Secret: s3cret\r\nContent-Length: 2\r\n\r\nhi")
            connection.read(seconds: 5) { String(decoding: $0, as: UTF8.self).contains("got 2") }
            return (connection.text, Self.secondsUntilClosed(connection, limit: 20))
        }
        #expect(first.hasPrefix("HTTP/1.1 200"), "\(first)")
        // Idle 2 s (and the header clock does not run before a request's first byte).
        #expect(closedAfter != nil && closedAfter! >= 1.5 && closedAfter! < 2 + 4, "closed after \(String(describing: closedAfter)) s")
        await rig.stop()
    }

    /// A complete request and the first part of a second head in one write (pipelined): the first is
    /// answered, the second's head is cut at the header timeout (1 s), not held for the idle timeout (6 s).
    /// The control: a complete request followed by a blank line only (which starts nothing) stays open
    /// until the idle timeout.
    @Test func aPipelinedHalfHeadIsCutAtTheHeaderTimeout() async throws {
        let rig = Rig(limits: ListenerLimits(headerTimeout: .seconds(1), bodyTimeout: .seconds(2), idleTimeout: .seconds(6), maxConnections: 64,
                                             lingerTimeout: .seconds(1)))
        try await rig.start()
        let port = rig.port
        let complete = "POST /x HTTP/1.1\r\nHost: x\r\nX-Secret: s3cret\r\nContent-Length: 2\r\n\r\nhi"
        let (answer, closedAfter) = await RawConnection.run { () -> (String, Double?) in
            guard let connection = try? RawConnection(port: port) else { return ("", nil) }
            connection.send(complete + "POST /y HTTP/1.1\r\nHost: x\r\nX-Sec")
            return (connection.text, Self.secondsUntilClosed(connection, limit: 20))
        }
        #expect(answer.isEmpty || answer.hasPrefix("HTTP/1.1 200"))
        #expect(closedAfter != nil && closedAfter! < 1 + 3, "closed after \(String(describing: closedAfter)) s (idle timeout 6 s)")
        #expect(rig.handledCount == 1, "the complete request was handled")

        let (blankAnswer, blankClosedAfter) = await RawConnection.run { () -> (String, Double?) in
            guard let connection = try? RawConnection(port: port) else { return ("", nil) }
            connection.send(complete + "\r\n")
            connection.read(seconds: 5) { String(decoding: $0, as: UTF8.self).contains("got 2") }
            return (connection.text, Self.secondsUntilClosed(connection, limit: 20))
        }
        #expect(blankAnswer.hasPrefix("HTTP/1.1 200"), "\(blankAnswer)")
        #expect(blankClosedAfter != nil && blankClosedAfter! >= 4, "a blank line starts no request: \(String(describing: blankClosedAfter)) s")
        await rig.stop()
    }

    /// The framer that finds where pipelined requests start: heads to their blank line, bodies by their
    /// length, split anywhere across reads; a chunked body loses track until the request's end.
    @Test func theRequestFramerCountsRequestStartsAcrossReads() {
        let two = Array("POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET /b HTTP/1.1\r\nHost: x\r\n\r\n\r\nPO".utf8)
        for split in 0...two.count {
            var framer = RequestFramer()
            var started = framer.feed(Array(two[..<split]))
            started += framer.feed(Array(two[split...]))
            #expect(started == 3, "split at \(split)")
            #expect(framer.state == .head)
        }
        var chunked = RequestFramer()
        #expect(chunked.feed(Array("POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /".utf8)) == 1)
        #expect(chunked.state == .lost)
        chunked.ended()
        #expect(chunked.feed(Array("GET / HTTP/1.1\r\n\r\n".utf8)) == 1 && chunked.state == .between)
    }

    /// `allowedSources`: a connection from outside the networks is closed unread; from inside, answered.
    @Test func aConnectionFromOutsideTheAllowedNetworksIsClosedUnread() async throws {
        let request = "POST /x HTTP/1.1\r\nHost: x\r\nX-Secret: s3cret\r\nContent-Length: 2\r\n\r\nhi"
        for (networks, answered) in [(["10.0.0.0/8", "::1"], false), (["10.0.0.0/8", "127.0.0.0/8"], true), ([], true)] {
            var limits = Self.short
            limits.allowedSources = networks.compactMap(SourceNetwork.init)
            let rig = Rig(limits: limits)
            try await rig.start()
            let port = rig.port
            let answer = await RawConnection.run { () -> String in
                guard let connection = try? RawConnection(port: port) else { return "" }
                connection.send(request)
                connection.read(seconds: 5) { String(decoding: $0, as: UTF8.self).contains("got 2") }
                return connection.text
            }
            #expect(answer.hasPrefix("HTTP/1.1 200") == answered, "\(networks): \(answer)")
            #expect(rig.handledCount == (answered ? 1 : 0))
            await rig.stop()
        }
    }

    @Test func sourceNetworksMatchByPrefix() throws {
        let v4 = try #require(SourceNetwork("10.20.0.0/16"))
        #expect(v4.contains(ip: "10.20.255.1"))
        #expect(!v4.contains(ip: "10.21.0.1"))
        #expect(v4.contains(ip: "::ffff:10.20.1.2"), "IPv4-mapped IPv6")
        let host = try #require(SourceNetwork("192.0.2.7"))
        #expect(host.contains(ip: "192.0.2.7") && !host.contains(ip: "192.0.2.6"))
        let v6 = try #require(SourceNetwork("2001:db8::/33"))
        #expect(v6.contains(ip: "2001:db8:7fff::1"))
        #expect(!v6.contains(ip: "2001:db8:8000::1"))
        #expect(!v6.contains(ip: "10.20.1.2"))
        for bad in ["10.0.0.0/33", "10.0.0", "::/129", "host.example", "10.0.0.0/-1", ""] { #expect(SourceNetwork(bad) == nil, "\(bad)") }
        #expect(SourceNetwork.allows([], nil) && !SourceNetwork.allows([v4], nil))
    }

    @Test func beyondTheConnectionCapNewConnectionsWaitUntilOneCloses() async throws {
        let rig = Rig(limits: ListenerLimits(headerTimeout: .seconds(30), bodyTimeout: .seconds(30), idleTimeout: .seconds(30), maxConnections: 2))
        try await rig.start()
        let port = rig.port
        let (waitingAnswer, afterRelease) = await RawConnection.run { () -> (String, String) in
            guard let holder1 = try? RawConnection(port: port), let holder2 = try? RawConnection(port: port) else { return ("", "") }
            // Both holders accepted (a request on each is answered), and they stay open.
            for holder in [holder1, holder2] {
                holder.send("POST /x HTTP/1.1\r\nHost: x\r\nX-Secret: s3cret\r\nContent-Length: 1\r\n\r\nz")
                holder.read(seconds: 5) { String(decoding: $0, as: UTF8.self).contains("got 1") }
            }
            // The third connects (the kernel's backlog) but is not served while two are open.
            guard let third = try? RawConnection(port: port) else { return ("", "") }
            third.send("POST /x HTTP/1.1\r\nHost: x\r\nX-Secret: s3cret\r\nContent-Length: 1\r\n\r\ny")
            third.read(seconds: 1.5) { !$0.isEmpty }
            let waiting = third.text
            holder1.shutdown()
            third.read(seconds: 10) { String(decoding: $0, as: UTF8.self).contains("got 1") }
            _ = holder2
            return (waiting, third.text)
        }
        #expect(waitingAnswer.isEmpty, "served beyond the cap: \(waitingAnswer)")
        #expect(afterRelease.contains("got 1"), "\(afterRelease)")
        await rig.stop()
    }
}
#endif
