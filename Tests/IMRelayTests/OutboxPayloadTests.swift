import Foundation
import IMCore
@testable import IMRelay
import Testing

/// The outbox row's JSON is spliced from the payload's fields and the route's cached JSON: it must be
/// the object `JSONEncoder` writes for the whole payload, and decode back to it.
@Suite struct OutboxPayloadTests {
    static let route = Route(from: try! RouteEndpoint(parsing: "wk:group:*"), to: try! RouteEndpoint(parsing: "rc:group:*"),
                             direction: .both, fallbacks: [.edit: .drop, .reactions: .notice])

    static let payloads: [OutboxPayload] = {
        let group = ConversationRef.group("g1")
        let outgoing = OutgoingMessage(conversation: group, sender: "wk_alice", content: .text("你好 \"quoted\" \\ /"),
                                       clientMessageID: ClientMessageID("imbridge-7"), expansion: ["k": "v"], sentAt: 5,
                                       vendorExtras: ["x": .object(["n": .int(1)])])
        var requeued = OutboxPayload(action: .send(outgoing: outgoing, source: "wk-1", replyToSource: nil), route: route,
                                     eventTimeMs: 42, sourceConversation: group)
        requeued.requeues = 3
        return [
            OutboxPayload(action: .send(outgoing: outgoing, source: "wk-1", replyToSource: nil), route: route, eventTimeMs: 1),
            requeued,
            OutboxPayload(action: .recall(source: "wk-1", by: "wk_alice"), route: Route(from: try! RouteEndpoint(parsing: "rc:group:*"),
                                                                                      to: try! RouteEndpoint(parsing: "wk:group:*")),
                          eventTimeMs: 2, migration: MigrationMark(run: "m", tally: "copied", kind: "text", senderMigrated: true)),
        ]
    }()

    @Test func theSplicedRowIsTheWholePayloadsJSON() throws {
        for payload in Self.payloads {
            let spliced = try payload.encoded()
            let whole = try JSONEncoder().encode(payload)
            #expect(try JSONValue.parse(spliced) == JSONValue.parse(whole), "\(String(decoding: spliced, as: UTF8.self))")
            let back = try OutboxPayload.decode(spliced)
            #expect(back.action == payload.action && back.route == payload.route && back.eventTimeMs == payload.eventTimeMs
                    && back.sourceConversation == payload.sourceConversation && back.requeues == payload.requeues
                    && back.migration == payload.migration, "decodes back to the same payload")
            // (Key order is not stable between two encodings: JSONEncoder's objects follow dictionary order.)
            #expect(try JSONValue.parse(payload.encoded()) == JSONValue.parse(whole), "the route's cached JSON the second time")
        }
    }
}
