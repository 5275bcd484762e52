import Foundation
import IMBridgeApp
import IMCore
import IMLab
import IMOutbox
import IMStore
import Testing

/// A deletion whose message the bridge never recorded, from a source whose history drops deleted messages
/// (RongCloud): the message was sent and deleted while its callback could not reach the bridge, so no read
/// finds it. Once the deletion has waited its whole time for a copy (`RelayEngine.maxRequeues`), it is done
/// with nothing written and the message counts as withheld — not a dead letter nobody can act on
/// (docs/architecture.md, "Callbacks behind the catch-up position"; seed 66 in docs/reliability.md). A
/// deletion of a message the bridge did record, whose copy never came, stays a dead letter.
@Suite struct NeverRecordedChangeTests {
    /// Queues, on the RongCloud → WuKong lane of `group`, a deletion of `message` that has used up its waits.
    static func queueExhaustedDeletion(_ env: InProcessBridge, of message: MessageID, in group: ConversationRef, id: String) throws {
        let route = try #require(env.bridge.config.routes.first)
        var payload = OutboxPayload(action: .delete(source: message, by: "wk_ann", forUser: nil), route: route, eventTimeMs: 0,
                                    sourceConversation: group)
        payload.requeues = 80
        let encoded = try payload.encoded()
        try env.bridge.store.transaction { tx in
            _ = try tx.enqueue(lane: LaneKey(backend: "wk", conversation: group), sourceBackend: "rc", sourceEventID: EventID("delete:\(id)"),
                               kind: payload.action.kindName, payload: encoded, at: 0)
        }
        env.bridge.engine.wake()
    }

    @Test func aDeletionOfAMessageNeverRecordedIsDoneWithNothingWritten() async throws {
        let env = try await InProcessBridge.start([BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member("wk", "wukong")],
                                                  routes: route("rc:group:nr1", "wk:group:nr1", direction: "forward"))
        defer { Task { await env.stop() } }
        let group = ConversationRef.group("nr1")
        let store = env.bridge.store
        try Self.queueExhaustedDeletion(env, of: "0NEVER-SEEN-0001", in: group, id: "0NEVER-SEEN-0001")
        #expect(await env.bridge.engine.waitUntilIdle())
        let dead = try store.read { try $0.deadLetters() }
        #expect(dead.isEmpty, "no dead letter: \(dead.map { $0.lastError ?? "" })")
        #expect(try store.read { try $0.hasEvent("rc", "withheld:0NEVER-SEEN-0001") }, "counted as withheld")
        #expect(try store.read { try $0.hasEvent("rc", "msg:0NEVER-SEEN-0001") }, "a late callback of it is a duplicate")

        // The same deletion of a message the bridge recorded (its copy failed for good): a dead letter still.
        try store.transaction { tx in
            _ = try tx.recordEvents([.init(backend: "rc", eventID: "msg:0RECORDED-0002", kind: "message", message: "0RECORDED-0002")],
                                    at: 0, origin: nil)
        }
        try Self.queueExhaustedDeletion(env, of: "0RECORDED-0002", in: group, id: "0RECORDED-0002")
        #expect(await env.bridge.engine.waitUntilIdle())
        let buried = try store.read { try $0.deadLetters() }.compactMap(\.lastError)
        #expect(buried.count == 1 && buried[0].contains("0RECORDED-0002"), "\(buried)")
        #expect(!(try store.read { try $0.hasEvent("rc", "withheld:0RECORDED-0002") }))
    }
}
