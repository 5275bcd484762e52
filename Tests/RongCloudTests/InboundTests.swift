import IMHTTP
import IMCore
import IMTesting
import Testing
@testable import RongCloud

/// The routing callback receiver: verification first, then parsing; refusals yield no event.
struct InboundTests {
    static let now: Int64 = 1_795_258_879_000
    let inbound = RongCloudInbound(backend: "rc", appKey: "K", appSecret: "S", clock: TestClock(startMs: Self.now))

    func signedQuery(nonce: String = "0.7940742792184153", timestamp: String = "1795258879", secret: String = "S",
                     appKey: String? = "K") -> FormBody {
        var query = FormBody()
        query.append("appKey", appKey)
        query.append("nonce", nonce)
        query.append("timestamp", timestamp)
        query.append("signature", RongCloudSignature.sign(secret: secret, nonce: nonce, timestamp: timestamp))
        return query
    }

    /// The callback as the HTTP request the receiver gets.
    func events(query: FormBody, headers: [(name: String, value: String)], body: FormBody) throws -> [IMEvent] {
        try inbound.events(from: HTTPRequestData(method: "POST", path: "/rongcloud", rawQuery: query.encoded, headers: headers,
                                                 body: Array(body.encoded.utf8)))
    }

    func routed(_ objectName: String, _ content: String, uid: String = "BRGM-DEN2-01E4-BN66", channel: String = "PERSON",
                at time: Int64 = 1_795_258_878_000) -> FormBody {
        WireRoutedMessage(fromUserId: "u1", toUserId: "u2", objectName: objectName, content: content, channelType: channel,
                          msgTimestamp: time, msgUID: uid, source: "Android").form
    }

    @Test func signedMessageBecomesOneMessageEventAndRedeliveryKeepsItsID() throws {
        let body = routed("RC:TxtMsg", #"{"content":"hi"}"#)
        let first = try events(query: signedQuery(), headers: [], body: body)
        let again = try events(query: signedQuery(nonce: "other", timestamp: "1795258880000"), headers: [], body: body)
        #expect(first.count == 1 && again.count == 1)
        #expect(first[0].eventID == "msg:BRGM-DEN2-01E4-BN66" && again[0].eventID == first[0].eventID)
        guard case .message(let message) = first[0].kind else { Issue.record("not a message"); return }
        #expect(message.content == .text("hi") && message.conversation == .direct("u1", "u2") && first[0].backend == "rc")
    }

    @Test func signatureInRCHeadersIsAccepted() throws {
        let headers: [(name: String, value: String)] = [("RC-Nonce", "n1"), ("rc-timestamp", "1795258879"),
                       ("RC-Signature", RongCloudSignature.sign(secret: "S", nonce: "n1", timestamp: "1795258879"))]
        #expect(try events(query: FormBody(), headers: headers, body: routed("RC:TxtMsg", #"{"content":"hi"}"#)).count == 1)
    }

    @Test(arguments: [
        ("forged signature", "S2", "K", "1795258879"),
        ("another app", "S", "K2", "1795258879"),
        ("stale timestamp", "S", "K", "1795250000"),
    ])
    func forgedOrStaleCallbacksAreRefused(_ why: String, secret: String, appKey: String, timestamp: String) {
        let error = #expect(throws: IMError.self, "\(why)") {
            try events(query: signedQuery(timestamp: timestamp, secret: secret, appKey: appKey), headers: [],
                               body: routed("RC:TxtMsg", #"{"content":"hi"}"#))
        }
        #expect(error?.code == .authenticationFailed)
    }

    @Test func unsignedCallbackIsRefused() {
        #expect(throws: IMError.self) { try events(query: FormBody(), headers: [], body: routed("RC:TxtMsg", #"{"content":"hi"}"#)) }
    }

    @Test func malformedBodiesAreRefusedWithoutEvents() {
        var missing = routed("RC:TxtMsg", #"{"content":"hi"}"#)
        missing.items.removeAll { $0.name == "msgUID" }
        let error = #expect(throws: IMError.self) { try events(query: signedQuery(), headers: [], body: missing) }
        #expect(error?.code == .malformedPayload && error?.details["field"] == "msgUID")
        #expect(throws: IMError.self) { try events(query: signedQuery(), headers: [], body: routed("RC:RcCmd", "{}")) }
        #expect(throws: IMError.self) { try events(query: signedQuery(), headers: [], body: routed("RC:MsgExMsg", #"{"put":{}}"#)) }
        #expect(throws: IMError.self) { try events(query: signedQuery(), headers: [], body: routed("RC:TxtMsg", "nope")) }
    }

    @Test func recallCommandBecomesRecalled() throws {
        let body = routed("RC:RcCmd", #"{"messageUId":"AAAA-BBBB-CCCC-DDDD","conversationType":1,"targetId":"u2","sentTime":1,"isAdmin":0,"isDelete":0}"#,
                          uid: "RCMD-0000-0000-0001")
        let events = try events(query: signedQuery(), headers: [], body: body)
        #expect(events.map(\.eventID) == ["recall:AAAA-BBBB-CCCC-DDDD"])
        #expect(events.first?.kind == .recalled(messageID: "AAAA-BBBB-CCCC-DDDD", conversation: .direct("u1", "u2"), by: "u1",
                                                at: 1_795_258_878_000))
    }

    @Test func expansionSignalBecomesExpansionChangedWithTheRoutedTimeAsVersion() throws {
        let body = routed("RC:MsgExMsg", #"{"mid":"AAAA-BBBB-CCCC-DDDD","put":{"votes":"3"},"del":["old"]}"#,
                          uid: "EXPN-0000-0000-0001", channel: "GROUP", at: 1_795_258_878_500)
        let events = try events(query: signedQuery(), headers: [], body: body)
        #expect(events.map(\.eventID) == ["exp:EXPN-0000-0000-0001"])
        #expect(events.first?.kind == .expansionChanged(
            messageID: "AAAA-BBBB-CCCC-DDDD", conversation: .group("u2"), by: "u1",
            delta: ExpansionDelta(version: 1_795_258_878_500, set: ["votes": "3"], removed: ["old"])))
    }

    @Test func commandsAndReadsAndIgnoredSignals() throws {
        let command = try inbound.events(from: routed("RC:CmdMsg", #"{"name":"ping","data":"1"}"#, uid: "CMDS-1"))
        #expect(command.first?.kind == .command(conversation: .direct("u1", "u2"), sender: "u1",
                                                content: CommandContent(name: "ping", data: "1"), at: 1_795_258_878_000))
        #expect(command.first?.eventID == "cmd:CMDS-1")
        let read = try inbound.events(from: routed("RC:ReadNtf", #"{"lastMessageSendTime":1,"messageUId":"M9","type":1}"#, uid: "READ-1"))
        #expect(read.first?.kind == .read(conversation: .direct("u1", "u2"), user: "u1", upTo: "M9", at: 1_795_258_878_000))
        #expect(try inbound.events(from: routed("RC:TypSts", #"{"typingContentType":"RC:TxtMsg"}"#)).isEmpty)
    }
}
