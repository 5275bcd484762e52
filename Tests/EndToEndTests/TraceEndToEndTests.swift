import BridgeTestSupport
import Foundation
import IMCore
import IMHTTP
import IMLab
import SandboxTestSupport
import Testing

/// `imbridge trace` on the real binary after a real relay (RongCloud → WuKong, WuKong's sandbox injecting
/// the faults): one message whose first send WuKong answers 503 (retried, then delivered) and one it
/// refuses with 400 (a dead letter). Both ways are read back hop by hop, as JSON, by the source id, by the
/// copy's id, and by conversation and time (docs/operations.md, "Where is my message"). The `received` hop
/// names the listener that took the callback and the instance (`ha.instance`) that recorded it.
@Suite(.serialized) struct TraceEndToEndTests {
    struct Hop {
        let fields: [String: Any]
        var hop: String { fields["hop"] as? String ?? "" }
        subscript(key: String) -> Any? { fields[key] }
        func text(_ key: String) -> String? { fields[key] as? String }
        func int(_ key: String) -> Int? { (fields[key] as? NSNumber)?.intValue }
    }

    struct Trace {
        let fields: [String: Any]
        var status: String { fields["status"] as? String ?? "" }
        var hops: [Hop] { (fields["hops"] as? [[String: Any]] ?? []).map(Hop.init) }
        func hops(_ name: String) -> [Hop] { hops.filter { $0.hop == name } }
    }

    static func trace(_ config: String, _ arguments: [String]) async throws -> [Trace] {
        let (status, output) = try await IMBridgeCLI.run(["trace", "--config", config, "--json"] + arguments)
        #expect(status == 0, "\(output)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any], "\(output)")
        return (json["messages"] as? [[String: Any]] ?? []).map(Trace.init)
    }

    @Test func traceShowsARetriedAndADeadLetteredMessageHopByHop() async throws {
        let rig = try await BridgeRig.make([BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member("wk", "wukong")],
                                           routes: "  - from: \"rc:group:*\"\n    to: \"wk:group:*\"\n    direction: forward\n    group_ids: same\n",
                                           instanceYAML: { _ in "ha:\n  instance: tracer\n" })
        defer { Task { await rig.stop() } }
        let bridge = try await rig.start()
        defer { bridge.killWithoutWaiting() }
        let http = HTTPClientWrapper(timeoutSeconds: 5)
        func fault(_ json: String) async throws {
            let response = try await http.send(.json(rig.lab.url(of: "wk") + "/_sandbox/faults", Data(json.utf8)))
            #expect(response.status == 200)
        }
        let rc = try await rig.lab.userBackend("rc", registry: ContentRegistry())
        func send(_ text: String) async throws -> Message {
            try await rc.send(OutgoingMessage(conversation: .group("tr"), sender: "alice", content: .text(text)))
        }
        func copies(_ text: String) async throws -> [JSONValue] {
            try await rig.lab.messages("wk").filter { $0["kind"] == "text" && $0["text"]?.stringValue == text }
        }
        let began = Int64(Date().timeIntervalSince1970 * 1000)

        // 1. WuKong answers the first send 503: retried, then delivered.
        try await fault(#"{"status":503,"count":1,"path_prefix":"/message/send"}"#)
        let retried = try await send("trace-retried")
        #expect(try await eventually(60) { try await copies("trace-retried").count == 1 }, "\(bridge.output.suffix(3000))")
        // 2. WuKong refuses the next send with 400: a dead letter.
        try await fault(#"{"status":400,"count":1,"path_prefix":"/message/send"}"#)
        let dead = try await send("trace-dead")
        let deadTrace = try await eventuallyValue(30) { () -> Trace? in
            let trace = try await Self.trace(rig.config, ["--message", dead.id.rawValue]).first
            return trace?.status == "dead_lettered" ? trace : nil
        }

        // The retried message, by its source id.
        let first = try #require(try await Self.trace(rig.config, ["--message", retried.id.rawValue]).first)
        #expect(first.status == "delivered" && first.fields["source_backend"] as? String == "rc", "\(first.fields)")
        #expect(first.hops.map(\.hop).prefix(3) == ["received", "recorded", "planned"], "\(first.hops.map(\.hop))")
        let received = try #require(first.hops("received").first)
        #expect(received.text("backend") == "rc" && received.text("event_id")?.hasSuffix(retried.id.rawValue) == true)
        // Besides the send, intake may plan the sender's profile on the target (entries of their own).
        let planned = try #require(first.hops("planned").first { $0.text("action") == "send" }, "\(first.fields)")
        #expect(planned.text("lane") == "wk/group:tr" && planned.text("action") == "send" && planned.text("route") == "rc:group:* -> wk:group:*")
        let attempts = first.hops("attempt")
        #expect(attempts.count == 1 && attempts.first?.int("outbox_id") == planned.int("outbox_id"), "one failed attempt: \(first.fields)")
        let attempt = try #require(attempts.first)
        #expect(attempt.text("outcome") == "retry" && attempt.text("error_class") == "http_5xx" && attempt.int("attempt") == 1)
        #expect(attempt.text("error")?.contains("503") == true && (attempt.int("retry_in_ms") ?? 0) > 0 && attempt.text("instance") != nil)
        // Received by a callback to the bridge's listener, recorded by this instance (its lease owner name).
        #expect(received.text("listener") == rig.baseURL(), "\(received.fields)")
        #expect(received.text("instance")?.hasPrefix("tracer-") == true && received.text("instance") == attempt.text("instance"), "\(received.fields)")
        // The event's trace id: the same on its hops, and in the bridge's log line about the failed attempt.
        let traceID = try #require(planned.text("trace_id"))
        #expect(traceID.count == 32 && received.text("trace_id") == traceID)
        #expect(bridge.output.contains(traceID), "the retry's log line names the trace: \(bridge.output.suffix(2000))")
        let delivered = try #require(first.hops("delivered").first { $0.int("outbox_id") == planned.int("outbox_id") })
        let copyID = try #require(delivered.text("target_message"))
        #expect(delivered.text("target_backend") == "wk" && delivered.int("attempts") == 2)
        #expect(delivered.text("client_id") == "imb-\(planned.int("outbox_id") ?? -1)" && delivered.text("target_conversation") == "group:tr")
        // Times run in the order of the way.
        let times = first.hops.compactMap { $0.int("at") }
        #expect(times == times.sorted() && times.first.map { $0 >= Int(began) - 1000 } == true)
        #expect(first.hops.last?.hop == "delivered" || first.hops.last?.hop == "echo_suppressed")

        // The same way, asked by the copy's id on WuKong.
        let byCopy = try #require(try await Self.trace(rig.config, ["--message", copyID]).first)
        #expect(byCopy.fields["source_message"] as? String == retried.id.rawValue && byCopy.fields["query"] as? String == copyID)
        #expect(byCopy.hops.map(\.hop) == first.hops.map(\.hop))

        // The dead letter: one attempt, buried with the vendor's answer.
        #expect(deadTrace.hops("attempt").map { $0.text("outcome") } == ["dead"], "\(deadTrace.fields)")
        #expect(deadTrace.hops("attempt").first?.text("error_class")?.isEmpty == false)
        let buried = try #require(deadTrace.hops("dead_lettered").first)
        #expect(buried.text("reason")?.contains("400") == true && buried.text("note")?.contains("imbridge deadletters retry --id") == true)
        #expect(deadTrace.hops("delivered").isEmpty)

        // By conversation and time: both messages of rc's group:tr around now, once each.
        let around = try await Self.trace(rig.config, ["--conversation", "rc:group:tr", "--at", "\(began)", "--window", "600"])
        #expect(Set(around.compactMap { $0.fields["source_message"] as? String }) == [retried.id.rawValue, dead.id.rawValue], "\(around.map(\.fields))")
        #expect(around.count == 2)

        // The table names the same hops; an unknown id is `not_found`.
        let (status, table) = try await IMBridgeCLI.run(["trace", "--config", rig.config, "--message", retried.id.rawValue])
        #expect(status == 0 && table.contains(": delivered") && table.contains("attempt") && table.contains("class=http_5xx"))
        #expect(table.contains("listener=\(rig.baseURL()) instance=tracer-"), "\(table)")
        #expect(try await Self.trace(rig.config, ["--message", "no-such-message"]).first?.status == "not_found")
    }
}

/// Polls `body` until it returns a value (at most `seconds`).
func eventuallyValue<T>(_ seconds: Double, _ body: () async throws -> T?) async throws -> T {
    let deadline = Date().addingTimeInterval(seconds)
    while true {
        if let value = try await body() { return value }
        guard Date() < deadline else { throw IMError(.timeout, "nothing within \(seconds) s") }
        try await Task.sleep(nanoseconds: 200_000_000)
    }
}
