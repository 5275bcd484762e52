import Foundation
import IMCore
import IMHTTP
import IMSandbox
import Synchronization
import Testing

/// A toy vendor: `POST /send` with a form `text` stores a message; errors use `{"err":N}`.
final class EchoVendor: SandboxVendor {
    let stored = Mutex<[SandboxMessageRecord]>([])
    let clock: SandboxClock
    init(clock: SandboxClock) { self.clock = clock }

    func handle(_ request: HTTPRequestData) async -> HTTPResponseData {
        guard request.normalizedPath == "/send", let text = request.form["text"] else { return .json(["err": 404], status: 404) }
        let record = stored.withLock { list in
            let record = SandboxMessageRecord(id: "e\(list.count + 1)", conversationType: "group", conversationID: "g", from: "u",
                                              to: "g", sentAtMs: clock.nowMs(), kind: "text", text: text, raw: ["text": .string(text)])
            list.append(record)
            return record
        }
        return .json(["id": record.id])
    }
    func messages() async -> [SandboxMessageRecord] { stored.withLock { $0 } }
    func users() async -> [JSONValue] { [["id": "u"]] }
    func reset() async { stored.withLock { $0.removeAll() } }
    func faultResponse(status: Int, vendorCode: Int?) -> HTTPResponseData { .json(["err": vendorCode ?? status], status: status) }
}

@Suite struct SandboxPlumbingTests {
    let http = HTTPClientWrapper(timeoutSeconds: 5)

    func post(_ url: String, form: [(String, String)] = [], json: String? = nil, method: String = "POST") async throws -> HTTPResponseData {
        if let json { return try await http.send(.json(url, Data(json.utf8))) }
        var request = OutboundRequest.form(url, FormBody(items: form))
        request.method = method
        return try await http.send(request)
    }

    @Test func servesTheVendorAndTheSandboxNamespace() async throws {
        let clock = SandboxClock()
        let server = SandboxServer(vendor: EchoVendor(clock: clock), clock: clock)
        let port = try await server.start()
        #expect(port > 0 && server.baseURL == "http://127.0.0.1:\(port)")
        let base = server.baseURL
        let sent = try await post(base + "/send/", form: [("text", "你好 world")])
        #expect(sent.status == 200 && sent.bodyString == #"{"id":"e1"}"#)
        let listed = try await http.send(OutboundRequest(method: "GET", url: base + "/_sandbox/messages"))
        let messages = try JSONValue.parse(Data(listed.body))["messages"]?.arrayValue
        #expect(messages?.count == 1)
        #expect(messages?.first?["text"] == "你好 world" && messages?.first?["conversation_type"] == "group")
        #expect(messages?.first?["recalled"] == false && messages?.first?["expansion"] == .object([:]))

        #expect(try await post(base + "/_sandbox/faults", json: #"{"status":429,"vendor_code":1008,"count":2,"path_prefix":"/send"}"#).status == 200)
        let first = try await post(base + "/send", form: [("text", "x")])
        let second = try await post(base + "/send", form: [("text", "x")])
        let third = try await post(base + "/send", form: [("text", "x")])
        #expect([first.status, second.status, third.status] == [429, 429, 200] as [Int])
        #expect(first.bodyString == #"{"err":1008}"#)
        #expect(server.faults.injectedCount == 2)
        #expect(try await post(base + "/_sandbox/faults", json: #"{"count":2}"#).status == 400)
        // `?from=N` leaves out the first N stored messages (a reader asks only for what is new).
        let rest = try await http.send(OutboundRequest(method: "GET", url: base + "/_sandbox/messages?from=1"))
        #expect(try JSONValue.parse(Data(rest.body))["messages"]?.arrayValue?.map { $0["text"] } == ["x"])
        let none = try await http.send(OutboundRequest(method: "GET", url: base + "/_sandbox/messages?from=5"))
        #expect(none.bodyString == #"{"messages":[]}"#)

        let before = clock.nowMs()
        let moved = try await post(base + "/_sandbox/clock", json: #"{"advance_ms":180000}"#)
        #expect(moved.status == 200 && clock.nowMs() - before >= 180_000)
        // A skew moves the clock either way (a vendor clock behind the bridge's); `advance_ms` stays forward only.
        let skewed = try await post(base + "/_sandbox/clock", json: #"{"skew_ms":-600000}"#)
        #expect(skewed.status == 200 && clock.nowMs() - before < -400_000)
        #expect(try await post(base + "/_sandbox/clock", json: #"{"advance_ms":-1}"#).status == 400)
        // A sandbox that sends no callbacks has nothing to arm.
        #expect(try await post(base + "/_sandbox/callbacks", json: #"{"redeliver":1}"#).status == 404)
        #expect(try await post(base + "/_sandbox/reset").status == 200)
        let empty = try await http.send(OutboundRequest(method: "GET", url: base + "/_sandbox/messages"))
        #expect(empty.bodyString == #"{"messages":[]}"#)
        #expect(try await http.send(OutboundRequest(method: "GET", url: base + "/_sandbox/nothing")).status == 404)
        await server.stop()
    }

    /// `body_contains` limits a rule to requests whose body holds the text, as sent or form-decoded (an
    /// edit's notice among the sends of one path).
    @Test func aRuleCanBeLimitedToBodiesHoldingAText() async throws {
        let clock = SandboxClock()
        let server = SandboxServer(vendor: EchoVendor(clock: clock), clock: clock)
        _ = try await server.start()
        let base = server.baseURL
        #expect(try await post(base + "/_sandbox/faults", json: #"{"status":503,"count":2,"body_contains":"✎ "}"#).status == 200)
        let plain = try await post(base + "/send", form: [("text", "a text")])
        let notice = try await post(base + "/send", form: [("text", "✎ an edit")])
        let json = try await http.send(.json(base + "/send", Data(#"{"text":"✎ as JSON"}"#.utf8)))
        let after = try await post(base + "/send", form: [("text", "✎ another edit")])
        let again = try await post(base + "/send", form: [("text", "✎ the last edit")])
        #expect([plain.status, notice.status, json.status, after.status, again.status] == [200, 503, 503, 200, 200] as [Int])
        #expect(await server.vendor.messages().map(\.text) == ["a text", "✎ another edit", "✎ the last edit"])
        #expect(server.faults.injectedCount == 2)
        await server.stop()
    }

    /// `retry_after` sets or removes the fault answer's `Retry-After`; `refuseConnections` takes the
    /// server off its port (connections refused) and `acceptConnections` puts it back with its state.
    @Test func retryAfterAndRefusedConnections() async throws {
        let clock = SandboxClock()
        let server = SandboxServer(vendor: EchoVendor(clock: clock), clock: clock)
        let port = try await server.start()
        let base = server.baseURL
        #expect(try await post(base + "/_sandbox/faults", json: #"{"status":429,"retry_after":3}"#).status == 200)
        let waited = try await post(base + "/send", form: [("text", "x")])
        #expect(waited.status == 429 && waited.headers.filter { $0.name.lowercased() == "retry-after" }.map(\.value) == ["3"])
        #expect(try await post(base + "/_sandbox/faults", json: #"{"status":429,"retry_after":-1}"#).status == 400)
        #expect(try await post(base + "/_sandbox/faults", json: #"{"status":503,"retry_after":0}"#).status == 200)
        let bare = try await post(base + "/send", form: [("text", "x")])
        #expect(bare.status == 503 && !bare.headers.contains { $0.name.lowercased() == "retry-after" })

        _ = try await post(base + "/send", form: [("text", "before")])
        await server.refuseConnections()
        do {
            _ = try await post(base + "/send", form: [("text", "while down")])
            Issue.record("a refusing sandbox answered")
        } catch let error as IMError {
            #expect(error.isRetryable && error.code == .unavailable, "\(error)")
        }
        try await server.acceptConnections()
        #expect(server.port == port && server.baseURL == base)
        #expect(try await post(base + "/send", form: [("text", "after")]).status == 200)
        let texts = await server.vendor.messages().map(\.text)
        #expect(texts == ["before", "after"], "the faulted and the refused requests never reached the vendor")
        await server.stop()
    }

    /// A port handed out is not handed out again before its taker binds it: a test that asks for two (a
    /// bridge's and a sandbox's) never gets one twice. Twenty from forty ports would repeat one almost
    /// surely if they were drawn independently.
    @Test func noPortIsHandedOutTwice() async throws {
        var ports: [Int] = []
        for _ in 0..<20 { ports.append(try await LoopbackPorts.unused(in: 25_900..<25_940)) }
        #expect(Set(ports).count == ports.count, "handed out twice: \(ports.sorted())")
    }

    @Test func transportFailuresAreRetryableErrors() async throws {
        let port = try await LoopbackPorts.unused(in: LoopbackPorts.dead)
        do {
            _ = try await http.send(OutboundRequest(method: "GET", url: "http://127.0.0.1:\(port)/"))
            Issue.record("a stopped server answered")
        } catch let error as IMError {
            #expect(error.isRetryable && (error.code == .unavailable || error.code == .timeout))
        }
    }
}

@Suite struct CallbackDelivererTests {
    @Test func retriesUntilTwoHundredInOrderAndBatches() async throws {
        let seen = Mutex<[String]>([])
        let attempts = Mutex(0)
        let receiver = HTTPServer { request in
            let n = attempts.withLock { count -> Int in
                count += 1
                return count
            }
            seen.withLock { $0.append(request.bodyString) }
            return n <= 2 ? .text("no", status: 500) : .text("ok")
        }
        let port = try await receiver.start()
        let deliverer = CallbackDeliverer<Int>(maxBatch: 3, intervalMs: 20, retryBaseMs: 5, retryMaxMs: 20) { batch in
            .json("http://127.0.0.1:\(port)/hook", Data("\(batch)".utf8))
        }
        await deliverer.enqueue([1, 2, 3, 4, 5])
        // A bound against a hang, not a speed claim: a loaded machine took over 5 s for these four posts.
        #expect(await deliverer.waitUntilIdle(timeoutMs: 60_000))
        let bodies = seen.withLock { $0 }
        #expect(bodies == ["[1, 2, 3]", "[1, 2, 3]", "[1, 2, 3]", "[4, 5]"], "the refused batch is sent again before later items")
        let stats = await deliverer.currentStats
        #expect(stats.delivered == 5 && stats.failures == 2 && stats.attempts == 4 && stats.pending == 0)
        await deliverer.stop()
        await receiver.stop()
    }

    @Test func aPolicyWithAttemptsDropsTheBatchAndGoesOn() async throws {
        let attempts = Mutex<[String]>([])
        let receiver = HTTPServer { request in
            attempts.withLock { $0.append(request.bodyString) }
            return request.bodyString == "[1]" ? .text("no", status: 500) : .text("ok")
        }
        let port = try await receiver.start()
        let policy = try CallbackPolicy(maxAttempts: 3, retryMs: 10).applying(["callback_retry_max_ms": "40"])
        #expect(policy.maxAttempts == 3 && policy.retryMs == 10 && policy.retryMaxMs == 40)
        let deliverer = CallbackDeliverer<Int>(policy: policy) { batch in .json("http://127.0.0.1:\(port)/hook", Data("\(batch)".utf8)) }
        await deliverer.enqueue([1, 2])
        // A deadline for a condition, not a timing claim: four requests spaced 10–40 ms apart, given the
        // time a busy machine needs (this failed at 5 s with the whole suite at once beside a build).
        #expect(await deliverer.waitUntilIdle(timeoutMs: 30_000))
        #expect(attempts.withLock { $0 } == ["[1]", "[1]", "[1]", "[2]"], "3 attempts in total, then the next item")
        let stats = await deliverer.currentStats
        #expect(stats.dropped == 1 && stats.delivered == 1 && stats.failures == 3 && stats.pending == 0)
        #expect(throws: IMError.self) { try policy.applying(["callback_attempts": "many"]) }
        #expect(try policy.applying(["callback_attempts": "0"]).maxAttempts == nil, "0 retries until delivered")
        await deliverer.stop()
        await receiver.stop()
    }

    /// Items handed over under the callers' own lock (`submit`, as a sandbox does under its store's lock)
    /// leave in that lock's order, however the callers then reach the actor (Finding 12: a sandbox that
    /// awaited `enqueue` after its store's lock was released called two concurrent publishes back the other
    /// way round).
    @Test func submittedItemsLeaveInTheOrderTheyWereSubmitted() async throws {
        let seen = Mutex<[String]>([])
        let receiver = HTTPServer { request in
            seen.withLock { $0.append(request.bodyString) }
            return .text("ok")
        }
        let port = try await receiver.start()
        let deliverer = CallbackDeliverer<Int>(retryBaseMs: 5, retryMaxMs: 20) { batch in
            .json("http://127.0.0.1:\(port)/hook", Data("\(batch)".utf8))
        }
        let counter = SubmitOrder()
        await withTaskGroup(of: Void.self) { group in
            for caller in 0..<16 {
                group.addTask(priority: caller.isMultiple(of: 2) ? .low : .high) {
                    for _ in 0..<6 {
                        counter.next.withLock { next in
                            deliverer.submit([next])
                            next += 1
                        }
                        await deliverer.takeSubmitted()
                    }
                }
            }
        }
        // One POST per item; its worker may run at the low priority a caller had, which a busy machine
        // serves last (a full `make test` took over 20 s for 75 items): the wait is long, the count small.
        #expect(await deliverer.waitUntilIdle(timeoutMs: 120_000))
        #expect(seen.withLock { $0 } == (0..<96).map { "[\($0)]" })
        await deliverer.stop()
        await receiver.stop()
    }

    /// The campaign's callback faults (`CallbackMisbehaviour`): a batch delivered again after its success, a
    /// batch sent as two requests at once, and a batch held back behind the next — each on the armed count
    /// of batches only.
    @Test func armedMisbehaviourRedeliversDoublesAndSwapsBatches() async throws {
        let seen = Mutex<[String]>([])
        let receiver = HTTPServer { request in
            seen.withLock { $0.append(request.bodyString) }
            return .text("ok")
        }
        let port = try await receiver.start()
        let deliverer = CallbackDeliverer<Int>(retryBaseMs: 5, retryMaxMs: 20) { batch in
            .json("http://127.0.0.1:\(port)/hook", Data("\(batch)".utf8))
        }
        try deliverer.misbehaviour.arm(JSONValue.parse(Data(#"{"redeliver":1}"#.utf8)))
        await deliverer.enqueue([1, 2])
        #expect(await deliverer.waitUntilIdle(timeoutMs: 60_000))
        #expect(seen.withLock { $0 } == ["[1]", "[1]", "[2]"], "the first batch again after its success, the next once")

        deliverer.misbehaviour.arm(.init(twice: 1))
        await deliverer.enqueue(3)
        #expect(await deliverer.waitUntilIdle(timeoutMs: 60_000))
        #expect(seen.withLock { Array($0.dropFirst(3)) } == ["[3]", "[3]"], "two requests for one batch")

        deliverer.misbehaviour.arm(.init(swap: 1))
        await deliverer.enqueue([4, 5, 6])
        #expect(await deliverer.waitUntilIdle(timeoutMs: 60_000))
        #expect(seen.withLock { Array($0.dropFirst(5)) } == ["[5]", "[4]", "[6]"], "the held batch goes after the one behind it")
        #expect(deliverer.misbehaviour.armed == .init() && deliverer.misbehaviour.applied == .init(redeliver: 1, twice: 1, swap: 1))
        let stats = await deliverer.currentStats
        #expect(stats.delivered == 6 && stats.pending == 0 && stats.dropped == 0)
        #expect(throws: IMError.self) { try deliverer.misbehaviour.arm(JSONValue.parse(Data(#"{"swap":-1}"#.utf8))) }
        await deliverer.stop()
        await receiver.stop()
    }

    /// The late and lost callbacks: a delayed batch holds the ones behind it back (none overtakes it), and
    /// for `drop_ms` every batch that comes up is lost unsent, counted as dropped; after it, batches go again.
    @Test func armedMisbehaviourDelaysAndDropsBatches() async throws {
        let seen = Mutex<[(String, ContinuousClock.Instant)]>([])
        let receiver = HTTPServer { request in
            seen.withLock { $0.append((request.bodyString, .now)) }
            return .text("ok")
        }
        let port = try await receiver.start()
        let deliverer = CallbackDeliverer<Int>(retryBaseMs: 5, retryMaxMs: 20) { batch in
            .json("http://127.0.0.1:\(port)/hook", Data("\(batch)".utf8))
        }
        let start = ContinuousClock.now
        try deliverer.misbehaviour.arm(JSONValue.parse(Data(#"{"delay":1,"delay_ms":400}"#.utf8)))
        await deliverer.enqueue([1, 2])
        #expect(await deliverer.waitUntilIdle(timeoutMs: 60_000))
        let delayed = seen.withLock { $0 }
        #expect(delayed.map(\.0) == ["[1]", "[2]"], "in order")
        #expect(delayed.allSatisfy { $0.1 - start >= .milliseconds(400) }, "neither before the delay")

        try deliverer.misbehaviour.arm(JSONValue.parse(Data(#"{"drop_ms":60000}"#.utf8)))
        await deliverer.enqueue([3, 4])
        #expect(await deliverer.waitUntilIdle(timeoutMs: 60_000))
        try deliverer.misbehaviour.arm(JSONValue.parse(Data(#"{"drop_ms":0}"#.utf8)))
        await deliverer.enqueue(5)
        #expect(await deliverer.waitUntilIdle(timeoutMs: 60_000))
        #expect(seen.withLock { $0.map(\.0) } == ["[1]", "[2]", "[5]"], "the batches that came up while dropping were lost")
        let stats = await deliverer.currentStats
        #expect(stats.delivered == 3 && stats.dropped == 2 && stats.pending == 0)
        #expect(deliverer.misbehaviour.applied.delay == 1)
        #expect(throws: IMError.self) { try deliverer.misbehaviour.arm(JSONValue.parse(Data(#"{"drop_ms":-1}"#.utf8))) }
        await deliverer.stop()
        await receiver.stop()
    }

    @Test func anUnreachableReceiverKeepsItemsPending() async throws {
        // Each refused connection is one failed attempt; retried for ever, the item stays pending.
        let deliverer = CallbackDeliverer<Int>(retryBaseMs: 5, retryMaxMs: 10, timeoutSeconds: 1) { _ in
            .json("http://127.0.0.1:9/hook", Data("[]".utf8))
        }
        await deliverer.enqueue(1)
        #expect(await !deliverer.waitUntilIdle(timeoutMs: 2500))
        let stats = await deliverer.currentStats
        #expect(stats.pending == 1 && stats.delivered == 0 && stats.failures >= 1)
        await deliverer.stop()
    }
}

/// The order in which the callers of `submittedItemsLeaveInTheOrderTheyWereSubmitted` take their turn.
private final class SubmitOrder: Sendable {
    let next = Mutex(0)
}
