import BridgeTestSupport
import Foundation
import IMCore
import IMHTTP
import IMLab
import Synchronization
import Testing

/// `tracing:` on the real binary (docs/operations.md, "Tracing"). With the package's `OTLP` trait (as
/// `make test` builds): one message relayed RongCloud → WuKong through a real `imbridge run` is one trace
/// at an OTLP/HTTP receiver in this test, with the spans of its hops, and WuKong's sandbox received the
/// send with that trace's `traceparent`, naming the vendor call's span. The same relay over the default
/// protocol, `http/protobuf`, posts protobuf to `/v1/traces` carrying the trace's id and every hop's span.
/// Without the trait the binary refuses `tracing.otlp_endpoint` and says how to build the exporter.
@Suite(.serialized) struct OTLPTraceTests {
    #if OTLP
    /// One text relayed RongCloud → WuKong through a real `imbridge run` exporting to a receiver of this
    /// test (`tracing` given the receiver's URL): what the test looks at, and the message's trace id as
    /// `imbridge trace` derives it.
    struct Relayed: Sendable {
        let receiver: OTLPReceiver
        let server: HTTPServer
        let rig: BridgeRig
        let bridge: BridgeProcess
        let traceID: String

        func stop() async {
            bridge.killWithoutWaiting()
            await rig.stop()
            await server.stop()
        }
    }

    func relay(_ text: String, in group: GroupID, tracing: (String) -> String) async throws -> Relayed {
        let receiver = OTLPReceiver()
        let server = HTTPServer { request in await receiver.take(request) }
        try await server.start()
        let rig = try await BridgeRig.make([BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member("wk", "wukong")],
                                           routes: "  - from: \"rc:group:*\"\n    to: \"wk:group:*\"\n    direction: forward\n    group_ids: same\n",
                                           extra: tracing(server.baseURL))
        let bridge = try await rig.start()
        do {
            let rc = try await rig.lab.userBackend("rc", registry: ContentRegistry())
            let sent = try await rc.send(OutgoingMessage(conversation: .group(group), sender: "alice", content: .text(text)))
            #expect(try await eventually(60) {
                try await rig.lab.messages("wk").contains { $0["kind"] == "text" && $0["text"]?.stringValue == text }
            }, "\(bridge.output.suffix(3000))")
            let traced = try #require(try await TraceEndToEndTests.trace(rig.config, ["--message", sent.id.rawValue]).first)
            let traceID = try #require(traced.hops("planned").first { $0.text("action") == "send" }?.text("trace_id"), "\(traced.fields)")
            return Relayed(receiver: receiver, server: server, rig: rig, bridge: bridge, traceID: traceID)
        } catch {
            await Relayed(receiver: receiver, server: server, rig: rig, bridge: bridge, traceID: "").stop()
            throw error
        }
    }

    @Test func oneRelayedMessageIsOneTraceAtAnOTLPReceiver() async throws {
        let relayed = try await relay("otlp-traced", in: "ot") {
            "tracing:\n  otlp_endpoint: \($0)\n  protocol: http/json\n  service_name: imbridge-otlp-test\n"
        }
        defer { Task { await relayed.stop() } }
        let (receiver, rig, traceID) = (relayed.receiver, relayed.rig, relayed.traceID)
        #expect(relayed.bridge.output.contains("spans exported over OTLP"))

        // Its spans at the receiver: every hop, all in that one trace (the batch goes out within ~5 s).
        let names = ["imbridge.callback", "imbridge.record", "imbridge.lane", "imbridge.vendor_call", "imbridge.complete"]
        let spans = try await eventuallyValue(60) { () -> [OTLPReceiver.Span]? in
            let spans = receiver.spans.filter { $0.traceID == traceID }
            let sends = spans.filter { $0.name == "imbridge.lane" && $0.attributes["imbridge.action"] == "send" }
            return Set(names).isSubset(of: Set(spans.map(\.name))) && !sends.isEmpty ? spans : nil
        }
        #expect(receiver.serviceNames == ["imbridge-otlp-test"])
        #expect(receiver.paths == ["/v1/traces"])
        func one(_ name: String, _ pick: (OTLPReceiver.Span) -> Bool = { _ in true }) throws -> OTLPReceiver.Span {
            try #require(spans.first { $0.name == name && pick($0) }, "\(name) in \(spans.map(\.name))")
        }
        let callback = try one("imbridge.callback")
        #expect(callback.kind == 2 && callback.attributes["imbridge.backend"] == "rc", "a server span: \(callback)")
        #expect(callback.attributes["imbridge.listener"]?.hasPrefix("http://127.0.0.1:") == true)
        #expect(callback.attributes["imbridge.instance"]?.isEmpty == false)
        let record = try one("imbridge.record")
        #expect(record.parentSpanID == callback.spanID)
        let lane = try one("imbridge.lane") { $0.attributes["imbridge.action"] == "send" }
        #expect(lane.attributes["imbridge.lane"] == "wk/group:ot" && lane.attributes["imbridge.attempt"] == "1")
        let call = try one("imbridge.vendor_call") { $0.parentSpanID == lane.spanID }
        #expect(call.kind == 3 && call.attributes["imbridge.target"] == "wk", "a client span: \(call)")
        let complete = try one("imbridge.complete") { $0.parentSpanID == lane.spanID }
        #expect(complete.attributes["imbridge.outcome"] == "delivered")
        // Intake and lane ran apart: both hang off the trace's one derived root.
        #expect(callback.parentSpanID == lane.parentSpanID && callback.parentSpanID?.count == 16)
        // In the order of the way (the lane may claim the entry before the intake task takes its clock again).
        #expect(callback.start <= record.start && record.start <= lane.start && lane.start <= call.start && call.end <= complete.start)

        // WuKong's sandbox got the send with the vendor call span's context.
        let http = HTTPClientWrapper(timeoutSeconds: 5)
        let answer = try await http.send(OutboundRequest(method: "GET", url: rig.lab.url(of: "wk") + "/_sandbox/traceparents"))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any])
        let sends = (json["requests"] as? [[String: Any]] ?? []).filter { ($0["path"] as? String)?.hasPrefix("/message/send") == true }
        let headers = sends.compactMap { $0["traceparent"] as? String }
        #expect(headers.contains("00-\(traceID)-\(call.spanID)-01"), "\(headers) vs span \(call.spanID)")
    }

    /// No `protocol:`: the default, `http/protobuf`. The receiver does not decode protobuf: a protobuf
    /// message carries its strings and bytes verbatim, so the bodies that hold the trace id's 16 raw bytes
    /// hold each hop's span name, and the service name, as bytes.
    @Test func theDefaultProtocolExportsProtobufToTheTracesPath() async throws {
        let relayed = try await relay("otlp-protobuf", in: "op") { "tracing:\n  otlp_endpoint: \($0)\n  service_name: imbridge-otlp-protobuf\n" }
        defer { Task { await relayed.stop() } }
        let (receiver, traceID) = (relayed.receiver, relayed.traceID)
        let rawTraceID = try #require(OTLPReceiver.bytes(hex: traceID))
        #expect(rawTraceID.count == 16)

        let names = ["imbridge.callback", "imbridge.record", "imbridge.lane", "imbridge.vendor_call", "imbridge.complete"]
        let body = try await eventuallyValue(60) { () -> Data? in
            let body = receiver.protobufBodies.filter { $0.range(of: rawTraceID) != nil }.reduce(Data(), +)
            return names.allSatisfy { body.range(of: Data($0.utf8)) != nil } ? body : nil
        }
        #expect(body.range(of: Data("imbridge-otlp-protobuf".utf8)) != nil, "the service name")
        #expect(receiver.contentTypes == ["application/x-protobuf"], "\(receiver.contentTypes)")
        #expect(receiver.contentEncodings.isEmpty, "not compressed: \(receiver.contentEncodings)")
        #expect(receiver.paths == ["/v1/traces"])
        #expect(receiver.spans.isEmpty, "no JSON was posted")
    }
    #else
    @Test func aBuildWithoutTheOTLPTraitRefusesAnOTLPEndpoint() async throws {
        let rig = try await BridgeRig.make([BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member("wk", "wukong")],
                                           routes: "  - from: \"rc:group:*\"\n    to: \"wk:group:*\"\n    direction: forward\n",
                                           extra: "tracing:\n  otlp_endpoint: http://127.0.0.1:4318\n")
        defer { Task { await rig.stop() } }
        let (status, output) = try await IMBridgeCLI.run(["check", "--config", rig.config])
        #expect(status != 0 && output.contains("tracing.otlp_endpoint") && output.contains("--traits OTLP"), "\(output)")
    }
    #endif
}

#if OTLP
/// An OTLP/HTTP endpoint: keeps each span of each `http/json` `POST /v1/traces` it answers, and the body
/// of each `http/protobuf` one as it came (with every request's content type and encoding).
final class OTLPReceiver: Sendable {
    struct Span: CustomStringConvertible {
        let traceID: String
        let spanID: String
        let parentSpanID: String?
        let name: String
        let kind: Int
        let start: UInt64
        let end: UInt64
        let attributes: [String: String]
        var description: String { "\(name) \(spanID)<-\(parentSpanID ?? "-") kind=\(kind) \(attributes)" }
    }

    private let state = Mutex<(spans: [Span], services: Set<String>, paths: Set<String>)>(([], [], []))
    private let raw = Mutex<(bodies: [Data], types: Set<String>, encodings: Set<String>)>(([], [], []))
    var spans: [Span] { state.withLock { $0.spans } }
    var protobufBodies: [Data] { raw.withLock { $0.bodies } }
    var contentTypes: Set<String> { raw.withLock { $0.types } }
    var contentEncodings: Set<String> { raw.withLock { $0.encodings } }
    var serviceNames: Set<String> { state.withLock { $0.services } }
    var paths: Set<String> { state.withLock { $0.paths } }

    func take(_ request: HTTPRequestData) async -> HTTPResponseData {
        let type = request.header("Content-Type") ?? ""
        raw.withLock {
            $0.types.insert(type)
            if let encoding = request.header("Content-Encoding"), encoding != "identity" { $0.encodings.insert(encoding) }
        }
        if type.hasPrefix("application/x-protobuf") {
            raw.withLock { $0.bodies.append(Data(request.body)) }
            _ = state.withLock { $0.paths.insert(request.normalizedPath) }
            // An empty ExportTraceServiceResponse: all accepted.
            return HTTPResponseData(status: 200, headers: [("Content-Type", "application/x-protobuf")])
        }
        guard request.method == "POST", let json = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] else {
            return .text("expected a JSON ExportTraceServiceRequest", status: 400)
        }
        var spans: [Span] = []
        var services: Set<String> = []
        for resource in json["resourceSpans"] as? [[String: Any]] ?? [] {
            let resourceAttributes = Self.attributes((resource["resource"] as? [String: Any])?["attributes"])
            if let service = resourceAttributes["service.name"] { services.insert(service) }
            for scope in resource["scopeSpans"] as? [[String: Any]] ?? [] {
                for span in scope["spans"] as? [[String: Any]] ?? [] {
                    spans.append(Span(traceID: Self.hex(span["traceId"]) ?? "", spanID: Self.hex(span["spanId"]) ?? "",
                                      parentSpanID: Self.hex(span["parentSpanId"]), name: span["name"] as? String ?? "",
                                      kind: (span["kind"] as? NSNumber)?.intValue ?? 0, start: Self.nanos(span["startTimeUnixNano"]),
                                      end: Self.nanos(span["endTimeUnixNano"]), attributes: Self.attributes(span["attributes"])))
                }
            }
        }
        state.withLock {
            $0.spans += spans
            $0.services.formUnion(services)
            $0.paths.insert(request.normalizedPath)
        }
        return .json(Data("{}".utf8))
    }

    /// An id as lowercase hex: OTLP/JSON asks for hex, protobuf's JSON mapping writes bytes in base64.
    static func hex(_ value: Any?) -> String? {
        guard let text = value as? String, !text.isEmpty else { return nil }
        if (text.count == 32 || text.count == 16), text.allSatisfy(\.isHexDigit) { return text.lowercased() }
        guard let bytes = Data(base64Encoded: text) else { return nil }
        return bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// The bytes 32 hex digits name.
    static func bytes(hex: String) -> Data? {
        guard hex.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return Data(bytes)
    }

    static func nanos(_ value: Any?) -> UInt64 {
        (value as? String).flatMap { UInt64($0) } ?? (value as? NSNumber)?.uint64Value ?? 0
    }

    static func attributes(_ value: Any?) -> [String: String] {
        var result: [String: String] = [:]
        for item in value as? [[String: Any]] ?? [] {
            guard let key = item["key"] as? String, let any = item["value"] as? [String: Any] else { continue }
            if let text = any["stringValue"] as? String { result[key] = text }
            else if let number = any["intValue"] { result[key] = "\(number)" }
            else if let flag = any["boolValue"] as? Bool { result[key] = "\(flag)" }
        }
        return result
    }
}
#endif
