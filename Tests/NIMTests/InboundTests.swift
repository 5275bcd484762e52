import IMAdapterKit
import IMCore
import IMHTTP
import NIM
import Testing

/// Message copies through the one inbound entry point, `handle(_:sink:)`: NIM's answers (status and
/// body) and the events the sink gets.
@Suite struct NIMInboundTests {
    static let secret = "0123456789ab"
    static let docBody = #"{"eventType":"1","convType":"PERSON","to":"222","fromAccount":"111","msgType":"TEXT","body":"hello","msgTimestamp":"1441977355557","msgidClient":"1234567","msgidServer":"3456789"}"#
    static let ok = #"{"code":200}"#
    let backend = NIMBackend(id: "nim", settings: NIMSettings(appKey: "key", appSecret: NIMInboundTests.secret))

    static func request(_ body: String, curTime: String = "1440570500855", md5: String? = nil, checkSum: String? = nil,
                        appKey: String = "key") -> HTTPRequestData {
        let bytes = Array(body.utf8)
        let digest = md5 ?? NIMSignature.md5Hex(bytes)
        let sum = checkSum ?? NIMSignature.callbackCheckSum(appSecret: secret, md5: digest, curTime: curTime)
        return HTTPRequestData(method: "POST", path: "/receiveMsg.action",
                               headers: [("appkey", appKey), ("CurTime", curTime), ("MD5", digest), ("CheckSum", sum),
                                         ("Content-Type", "application/json")], body: bytes)
    }

    /// One exchange with a fresh sink: NIM's answer and the sink.
    static func exchange(_ request: HTTPRequestData, with backend: NIMBackend) async -> (answer: HTTPResponseData, sink: CollectingSink) {
        let sink = CollectingSink()
        let answer = await backend.handle(request, sink: sink)
        return (answer, sink)
    }

    /// Events of a copy NIM must count as delivered (HTTP 200 `{"code":200}`, nothing refused).
    func accepted(_ request: HTTPRequestData, by backend: NIMBackend? = nil) async -> [IMEvent] {
        let (answer, sink) = await Self.exchange(request, with: backend ?? self.backend)
        #expect(answer.status == 200 && answer.bodyString == Self.ok, "answered \(answer.status) \(answer.bodyString)")
        #expect(sink.refusals.isEmpty)
        return sink.events
    }

    /// `admit`'s decision as (status of an early answer, or nil; the cap when the body is to be read).
    static func decision(_ admission: BodyAdmission) -> (answer: Int?, cap: Int?) {
        switch admission {
        case .answer(let response): (response.status, nil)
        case .read(let cap): (nil, cap)
        }
    }

    /// The CheckSum (over the MD5 header) is checked from the head; the body's MD5 once it is read
    /// (docs/adapters/nim.md, "Callback limits").
    @Test func theHeadIsCheckedBeforeTheBody() async {
        let sink = CollectingSink()
        var head = Self.request(Self.docBody)
        head.body = []
        #expect(Self.decision(await backend.admit(head, sink: sink)).cap == NIMInbound.maxBodyBytes)
        #expect(sink.refusals.isEmpty)
        var forged = Self.request(Self.docBody, checkSum: String(repeating: "0", count: 40))
        forged.body = []
        var foreign = Self.request(Self.docBody, appKey: "other")
        foreign.body = []
        let unsigned = HTTPRequestData(method: "POST", path: "/callbacks/yx", headers: [("Content-Type", "application/json")])
        for request in [forged, foreign, unsigned] {
            #expect(Self.decision(await backend.admit(request, sink: sink)).answer == 401)
        }
        #expect(sink.refusals.count == 3)
        // A signed head with another body: admitted, then refused once the body's MD5 is compared.
        var swapped = Self.request(Self.docBody)
        swapped.body = Array(#"{"eventType":"1"}"#.utf8)
        let (answer, _) = await Self.exchange(swapped, with: backend)
        #expect(answer.status == 401)
    }

    @Test func theDocExampleVerifiesAndParses() async throws {
        let events = await accepted(Self.request(Self.docBody, checkSum: "CA35845E3C6FE4FB7AA85C358FFA91BC75F70043"))
        #expect(events.count == 1)
        guard case .message(let message)? = events.first?.kind else { Issue.record("not a message"); return }
        #expect(events[0].eventID == "nim:msg:3456789")
        #expect(message.id == "3456789" && message.sender == "111" && message.conversation == .direct("111", "222"))
        #expect(message.content == .text("hello") && message.sentAt == 1441977355557)
        #expect(message.clientMessageID == "1234567")
    }

    @Test func redeliveryGivesTheSameEventID() async throws {
        let first = await accepted(Self.request(Self.docBody, curTime: "1440570500855"))
        let again = await accepted(Self.request(Self.docBody, curTime: "1440570999999"))
        #expect(!first.isEmpty && first.map(\.eventID) == again.map(\.eventID))
        #expect(first == again)
    }

    @Test func forgedAndTamperedRequestsAreRefused() async {
        var tampered = Self.request(Self.docBody)
        tampered.body = Array(Self.docBody.replacingOccurrences(of: "hello", with: "hellO").utf8)
        for (what, request) in [
            ("wrong checksum", Self.request(Self.docBody, checkSum: String(repeating: "0", count: 40))),
            ("md5 of other bytes", tampered),
            ("wrong app key", Self.request(Self.docBody, appKey: "other")),
            ("no headers", HTTPRequestData(method: "POST", path: "/receiveMsg.action", body: Array(Self.docBody.utf8))),
        ] {
            let (answer, sink) = await Self.exchange(request, with: backend)
            #expect(answer.status == 401 && answer.bodyString.hasPrefix("unauthorized: NIM callback refused"), "\(what)")
            #expect(sink.events.isEmpty, "\(what) was accepted")
            #expect(sink.refusals.count == 1, "\(what)")
            #expect(sink.refusals.first?.code == .authenticationFailed, "\(what)")
            #expect(sink.refusals.first?.details["http_status"] == "403", "\(what)")
        }
    }

    /// Near miss: a full-length CheckSum (or MD5) differing only in its last character is
    /// refused (a comparison of the first bytes only would pass it).
    @Test func aCheckSumOrMD5WrongOnlyInItsLastCharacterIsRefused() async {
        func flipLast(_ hex: String) -> String { String(hex.dropLast()) + (hex.hasSuffix("0") ? "1" : "0") }
        let digest = NIMSignature.md5Hex(Array(Self.docBody.utf8))
        let sum = NIMSignature.callbackCheckSum(appSecret: Self.secret, md5: digest, curTime: "1440570500855")
        #expect(sum.count == 40 && digest.count == 32)
        for request in [Self.request(Self.docBody, checkSum: flipLast(sum)),
                        Self.request(Self.docBody, md5: flipLast(digest),
                                     checkSum: NIMSignature.callbackCheckSum(appSecret: Self.secret, md5: flipLast(digest), curTime: "1440570500855"))] {
            let (answer, sink) = await Self.exchange(request, with: backend)
            #expect(answer.status == 401 && sink.events.isEmpty && sink.refusals.first?.code == .authenticationFailed)
        }
        #expect(await accepted(Self.request(Self.docBody, checkSum: sum)).count == 1)
    }

    @Test func signedGarbageIsMalformedNotAnEvent() async {
        let (answer, sink) = await Self.exchange(Self.request("[1,2"), with: backend)
        #expect(answer.status == 400 && answer.bodyString.hasPrefix("bad request: "))
        #expect(sink.events.isEmpty)
        #expect(sink.refusals.first?.code == .malformedPayload && sink.refusals.first?.details["http_status"] == "400")
        // A signed JSON object that is not a convertible copy is a poison message: acknowledged, set aside.
        let noType = await Self.exchange(Self.request(#"{"convType":"PERSON"}"#), with: backend)
        #expect(noType.answer.status == 200 && noType.answer.bodyString == Self.ok && noType.sink.refusals.isEmpty)
        #expect(noType.sink.setAside.count == 1 && noType.sink.setAside.first?.format == NIMInbound.setAsideFormat)
        #expect(noType.sink.setAside.first?.raw == Array(#"{"convType":"PERSON"}"#.utf8))
    }

    /// A PICTURE copy without `url` and a registered custom type failing validate(): set aside, answered
    /// 200 (NIM moves on), keyed by msgidServer; a sink that keeps no set-aside messages gets a retry answer.
    @Test func unconvertibleCopiesAreSetAside() async throws {
        let picture = #"{"eventType":"1","convType":"PERSON","to":"222","fromAccount":"111","msgType":"PICTURE","attach":"{\"name\":\"a.png\",\"ext\":\"png\"}","msgTimestamp":"1441977355557","msgidServer":"777"}"#
        let (answer, sink) = await Self.exchange(Self.request(picture), with: backend)
        #expect(answer.status == 200 && sink.events.isEmpty && sink.refusals.isEmpty)
        #expect(sink.setAside.map(\.key) == ["nim:777"])
        #expect(sink.setAside.first?.reason.contains("url") == true, "\(sink.setAside)")
        struct NoSetAside: EventSink { func accept(_ events: [IMEvent]) async throws {} }
        let refused = await backend.handle(Self.request(picture), sink: NoSetAside())
        #expect(refused.status == 503, "a sink that cannot keep it makes NIM redeliver, nothing is dropped")
    }

    @Test func aSinkThatCannotTakeTheEventsMakesNIMRetry() async {
        let sink = CollectingSink()
        sink.fail(with: IMError(.unavailable, "store down"))
        let answer = await backend.handle(Self.request(Self.docBody), sink: sink)
        #expect(answer.status == 503 && answer.bodyString == "error: store down", "NIM counts 200 and 500 as delivered")
        #expect(sink.events.isEmpty && sink.refusals.isEmpty)
        sink.fail(with: nil)
        #expect(await backend.handle(Self.request(Self.docBody), sink: sink).status == 200)
        #expect(sink.events.map(\.eventID) == ["nim:msg:3456789"])
    }

    @Test func acceptedEventsArePublishedOnEvents() async {
        let stream = backend.events()
        let forged = await Self.exchange(Self.request(Self.docBody, checkSum: String(repeating: "0", count: 40)), with: backend)
        #expect(forged.answer.status == 401)
        let events = await accepted(Self.request(Self.docBody))
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next() == events.first)
    }

    @Test func numbersObjectsAndTeamCopiesAreAccepted() async throws {
        let body = #"{"eventType":1,"convType":"TEAM","to":123456,"fromAccount":"alice","msgType":"PICTURE","body":"","attach":{"url":"http://nos/a.jpg","ext":"jpg","w":10,"h":20,"size":99,"md5":"m"},"msgTimestamp":1441977355557,"msgidServer":987,"fromClientType":"IOS","fromNick":"A"}"#
        let events = await accepted(Self.request(body))
        guard case .message(let message) = events.first?.kind else { Issue.record("no message"); return }
        #expect(message.conversation == .group("123456") && message.id == "987")
        #expect(message.content.attachments.first?.remoteURL == "http://nos/a.jpg")
        #expect(message.content.attachments.first?.width == 10)
        #expect(message.vendorExtras["fromNick"] == "A" && message.vendorExtras["fromClientType"] == "IOS")
    }

    @Test func recallCopiesBecomeRecalledEvents() async throws {
        let body = #"{"clientId":"9e54","deleteTime":"1487308054709","eventType":"7","from":"zhangsan","fromClientType":"IOS","msgId":"11555996","selfMsg":"撤回了一条消息","sendTime":"1487308046652","to":"lisi"}"#
        let events = await accepted(Self.request(body))
        #expect(events.first?.eventID == "nim:recall:11555996")
        #expect(events.first?.kind == .recalled(messageID: "11555996", conversation: .direct("lisi", "zhangsan"), by: "zhangsan",
                                               at: 1487308054709))
        let team = await accepted(Self.request(body.replacingOccurrences(of: #""eventType":"7""#, with: #""eventType":"8""#)))
        #expect(team.first?.conversation == .group("lisi"))
    }

    @Test func otherEventTypesAreAcknowledgedWithoutEvents() async throws {
        let login = #"{"eventType":"2","accid":"a","clientType":"IOS","code":200,"timestamp":1487308054709}"#
        #expect(await accepted(Self.request(login)).isEmpty)
        let friend = #"{"eventType":"1","convType":"CUSTOM_PERSON","msgType":"FRIEND_ADD","to":"b","fromAccount":"a","msgTimestamp":"1"}"#
        #expect(await accepted(Self.request(friend)).isEmpty)
    }

    /// A team operation in the copy (a kick: `NOTIFICATION` with the team-notification attach) gives no
    /// `membersChanged`: the adapter does not read team operations, and the preset says so
    /// (`reportsMembershipChanges`, which the testing kit's memory world follows; docs/adapters/nim.md).
    @Test func teamOperationCopiesReportNoMembershipChangeAsThePresetSays() async throws {
        let body = #"{"eventType":"1","convType":"TEAM","to":"123456","fromAccount":"alice","msgType":"NOTIFICATION","attach":"{\"data\":{\"ids\":[\"bob\"],\"tinfo\":{\"tid\":123456}},\"id\":1}","msgTimestamp":"1700000000000","msgidServer":"555"}"#
        let events = await accepted(Self.request(body))
        let reported = events.contains { if case .membersChanged = $0.kind { true } else { false } }
        #expect(reported == Capabilities.nim.reportsMembershipChanges, "\(events)")
    }

    @Test func customNotificationsBecomeCommands() async throws {
        let body = #"{"eventType":"1","convType":"CUSTOM_PERSON","msgType":"CUSTOM_P2P_MSG","to":"b","fromAccount":"a","attach":"{\"name\":\"typing\",\"data\":{\"on\":true}}","msgTimestamp":"1700000000000"}"#
        let events = await accepted(Self.request(body))
        #expect(events.first?.kind == .command(conversation: .direct("a", "b"), sender: "a",
                                              content: CommandContent(name: "typing", data: ["on": true]), at: 1700000000000))
    }

    @Test func expansionCarriersBecomeExpansionEvents() async throws {
        let payload = #"{\"type\":\"imbridge.expansion\",\"data\":{\"msgid\":\"55\",\"version\":2,\"set\":{\"k\":\"v\"},\"removed\":[],\"cleared\":false}}"#
        let body = #"{"eventType":"1","convType":"PERSON","msgType":"CUSTOM","to":"b","fromAccount":"a","attach":"\#(payload)","msgTimestamp":"5","msgidServer":"77"}"#
        let events = await accepted(Self.request(body))
        #expect(events.first?.eventID == "nim:exp:77")
        // Versioned by the copy's msgTimestamp (5), not by the carrier's JSON version (2).
        #expect(events.first?.kind == .expansionChanged(messageID: "55", conversation: .direct("a", "b"), by: "a",
                                                       delta: ExpansionDelta(version: 5, set: ["k": "v"])))
    }

    @Test func freshnessIsCheckedOnlyWhenConfigured() async throws {
        var strictSettings = NIMSettings(appKey: "key", appSecret: Self.secret)
        strictSettings.callbackMaxSkew = .seconds(60)
        let strict = NIMBackend(id: "nim", settings: strictSettings)
        let stale = await Self.exchange(Self.request(Self.docBody), with: strict)
        #expect(stale.answer.status == 401 && stale.sink.events.isEmpty && stale.sink.refusals.first?.code == .authenticationFailed)
        let now = String(SystemClock().nowMs())
        #expect(await accepted(Self.request(Self.docBody, curTime: now), by: strict).count == 1)
    }

    /// The pure half of `handle`: the same events without a sink.
    @Test func eventsFromARequestArePure() throws {
        let inbound = NIMInbound(backend: "nim", appKey: "key", appSecret: Self.secret)
        let batch = try inbound.batch(from: Self.request(Self.docBody))
        #expect(batch.events.map(\.eventID) == ["nim:msg:3456789"] && batch.setAside.isEmpty)
        #expect(throws: IMError.self) { try inbound.batch(from: Self.request(Self.docBody, appKey: "other")) }
    }
}
