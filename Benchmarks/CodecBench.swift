import Foundation
import IMCore
import IMRelay
import JMessage
import NIM
import RongCloud
import WuKong
import IMOutbox

/// Encode + decode per second on one core, per vendor and payload kind: neutral content → the vendor's
/// wire bytes (the payload JSON/string the REST API carries) → neutral content again.
struct CodecBench {
    var seconds: Double

    static let samples: [(String, MessageContent)] = [
        ("text", .text(TextContent("你好，这是一条用于测量编解码速度的消息 #42 — hello from the benchmark"))),
        ("image", .image(ImageContent(MediaAttachment(remoteURL: "https://cdn.example.com/media/2026/11/a1b2c3d4.jpg", mimeType: "image/jpeg",
                                                      size: 482_113, width: 1280, height: 960)))),
        ("custom", .custom(CustomContent(raw: "order_card", payload: #"{"order_id":"A-10042","status":"paid","amount":12900,"items":3}"#))),
    ]

    /// One round trip for a vendor; returns the decoded content (checked once against the input).
    static func roundTrip(_ vendor: String) -> @Sendable (MessageContent) throws -> MessageContent {
        switch vendor {
        case "wukong":
            let codec = WuKongContentCodec(customTypes: [101: "order_card"])
            return { content in try codec.decode(payload: try codec.encodePayload(content)).content }
        case "rongcloud":
            let codec = RongCloudContentCodec(objectNames: ["order_card": "App:OrderMsg"])
            return { content in
                let wire = try codec.encode(content)
                return try codec.decode(objectName: wire.objectName, content: wire.content).content
            }
        case "nim":
            let codec = NIMContentCodec()
            return { content in
                let wire = try codec.encode(content)
                return try codec.decode(type: wire.type, body: wire.body)
            }
        default:
            let codec = JMessageContentCodec()
            return { content in
                let wire = try codec.encode(content)
                let bytes = wire.body.jsonData()
                return try codec.decode(msgType: wire.msgType, body: try JSONValue.parse(bytes)).content
            }
        }
    }

    func run() -> ScenarioResult {
        var result = ScenarioResult("codec")
        result.add("measure", "encode to wire bytes + decode, one thread, ≥ \(fmt(seconds, 1)) s per cell, messages per CPU-second of that thread", key: "seconds_per_cell", .double(seconds))
        var cells: [String: JSONValue] = [:]
        for vendor in ["wukong", "rongcloud", "nim", "jmessage"] {
            let trip = Self.roundTrip(vendor)
            var line: [String] = []
            var vendorJSON: [String: JSONValue] = [:]
            for (kind, content) in Self.samples {
                do {
                    let back = try trip(content)
                    let faithful = back.kind == content.kind
                    let (rate, wall) = try rates { _ = try trip(content) }
                    line.append("\(kind) \(fmt(rate))/s\(faithful ? "" : " (decoded as \(back.kind))")")
                    vendorJSON[kind] = .object(["per_cpu_second": .double(rate), "per_wall_second": .double(wall)])
                } catch {
                    line.append("\(kind) error: \(error)")
                    vendorJSON[kind] = .string("error: \(error)")
                }
            }
            result.rows.append((vendor, line.joined(separator: ", ")))
            cells[vendor] = .object(vendorJSON)
        }
        result.json["msgs_per_s"] = .object(cells)
        payloadCells(&result)
        return result
    }

    /// The outbox row of a relayed text message (what intake writes and a lane reads back when the payload
    /// cache does not hold it): `OutboxPayload`'s own writer and reader against `JSONEncoder`/`JSONDecoder`.
    func payloadCells(_ result: inout ScenarioResult) {
        let route = Route(from: RouteEndpoint(backend: "wk", kind: .group, id: nil), to: RouteEndpoint(backend: "rc", kind: .group, id: nil))
        let outgoing = OutgoingMessage(conversation: .group("bench-g7"), sender: "wk_user-7", content: Self.samples[0].1,
                                       clientMessageID: ClientMessageID("imbridge-wk-1234567"), sentAt: 1_764_200_000_123)
        let payload = OutboxPayload(action: .send(outgoing: outgoing, source: "wk-1234567", replyToSource: nil), route: route,
                                    eventTimeMs: 1_764_200_000_123, sourceConversation: .group("bench-g7"))
        let cells: [(String, () throws -> Void)] = [
            ("encode", { _ = try payload.encoded() }),
            ("encode by JSONEncoder", { _ = try JSONEncoder().encode(payload) }),
            ("decode", { _ = try OutboxPayload.decode(try payload.encoded()) }),
            ("decode by JSONDecoder", { _ = try JSONDecoder().decode(OutboxPayload.self, from: try JSONEncoder().encode(payload)) }),
        ]
        var line: [String] = []
        var json: [String: JSONValue] = [:]
        for (name, cell) in cells {
            do {
                let rate = try rates(cell).perCPUSecond
                line.append("\(name) \(fmt(rate))/s")
                json[name] = .double(rate)
            } catch {
                line.append("\(name) error: \(error)")
            }
        }
        result.rows.append(("outbox payload", line.joined(separator: ", ") + " (decode cells include their encode)"))
        result.json["outbox_payload_per_cpu_second"] = .object(json)
    }

    /// Runs `body` in rounds of 1,000 for at least `seconds`. Per CPU-second of this thread: what one
    /// core does, whatever else shares the machine.
    private func rates(_ body: () throws -> Void) throws -> (perCPUSecond: Double, perWallSecond: Double) {
        var count = 0
        let start = monotonicSeconds()
        let cpuStart = threadCPUSeconds()
        var elapsed = 0.0
        repeat {
            for _ in 0..<1000 { try body() }
            count += 1000
            elapsed = monotonicSeconds() - start
        } while elapsed < seconds
        return (Double(count) / max(1e-9, threadCPUSeconds() - cpuStart), Double(count) / elapsed)
    }
}

/// CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID).
func threadCPUSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}
