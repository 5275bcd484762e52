import Foundation
import IMCore
import IMHTTP
@testable import NIM
import Testing

/// A team's dismissal reaches the app server as a TEAM notification copy (`msgType` NOTIFICATION, attach
/// `id` 4): it becomes `groupDissolved`; the other team notifications are not read (docs/adapters/nim.md).
extension NIMInboundTests {
    static func notification(_ op: Int, id: String = "9001") -> String {
        let attach = JSONValue.object(["data": ["tinfo": ["tid": "42"]], "id": .int(Int64(op))]).jsonString()
        return JSONValue.object(["eventType": "1", "convType": "TEAM", "to": "42", "fromAccount": "alice", "msgType": "NOTIFICATION",
                                 "attach": .string(attach), "msgTimestamp": "1441977355557", "msgidServer": .string(id)]).jsonString()
    }

    @Test func aDismissalNotificationIsAGroupDissolvedEvent() async throws {
        let events = await accepted(Self.request(Self.notification(4)))
        #expect(events.count == 1)
        guard case .groupDissolved(let group, let by, let at)? = events.first?.kind else { Issue.record("\(events)"); return }
        #expect(group == "42" && by == "alice" && at == 1441977355557)
        #expect(events[0].eventID == "nim:dismiss:9001")
        #expect(await accepted(Self.request(Self.notification(4))).map(\.eventID) == ["nim:dismiss:9001"], "redelivery keeps the id")
        for op in [0, 1, 2, 3] {
            let other = await accepted(Self.request(Self.notification(op, id: "90\(op)")))
            #expect(!other.contains { if case .groupDissolved = $0.kind { true } else { false } }, "op \(op) is no dissolution")
        }
    }
}
