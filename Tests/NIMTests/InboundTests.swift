import IMCore
import IMHTTP
import NIM
import Testing

@Suite struct InboundTests {
    static let secret = "0123456789ab"
    static let docBody = #"{"eventType":"1","convType":"PERSON","to":"222","fromAccount":"111","msgType":"TEXT","body":"hello","msgTimestamp":"1441977355557","msgidClient":"1234567","msgidServer":"3456789"}"#
    let inbound = NIMInbound(backend: "nim", appKey: "key", appSecret: InboundTests.secret)

    static func request(_ body: String, curTime: String = "1440570500855", md5: String? = nil, checkSum: String? = nil,
                        appKey: String = "key") -> NIMInboundRequest {
        let bytes = Array(body.utf8)
        let digest = md5 ?? NIMSignature.md5Hex(bytes)
        let sum = checkSum ?? NIMSignature.callbackCheckSum(appSecret: secret, md5: digest, curTime: curTime)
        return NIMInboundRequest(headers: [("appkey", appKey), ("CurTime", curTime), ("MD5", digest), ("CheckSum", sum),
                                           ("Content-Type", "application/json")], body: bytes)
    }

    @Test func theDocExampleVerifiesAndParses() throws {
        let request = Self.request(Self.docBody, checkSum: "CA35845E3C6FE4FB7AA85C358FFA91BC75F70043")
        let events = try inbound.handle(request)
        #expect(events.count == 1)
        guard case .message(let message) = events[0].kind else { Issue.record("not a message"); return }
        #expect(events[0].eventID == "nim:msg:3456789")
        #expect(message.id == "3456789" && message.sender == "111" && message.conversation == .direct("111", "222"))
        #expect(message.content == .text("hello") && message.sentAt == 1441977355557)
        #expect(message.clientMessageID == "1234567")
    }

    @Test func redeliveryGivesTheSameEventID() throws {
        let first = try inbound.handle(Self.request(Self.docBody, curTime: "1440570500855"))
        let again = try inbound.handle(Self.request(Self.docBody, curTime: "1440570999999"))
        #expect(first.map(\.eventID) == again.map(\.eventID))
        #expect(first == again)
    }

    @Test func forgedAndTamperedRequestsAreRefused() {
        var tampered = Self.request(Self.docBody)
        tampered.body = Array(Self.docBody.replacingOccurrences(of: "hello", with: "hellO").utf8)
        for (what, request) in [
            ("wrong checksum", Self.request(Self.docBody, checkSum: String(repeating: "0", count: 40))),
            ("md5 of other bytes", tampered),
            ("wrong app key", Self.request(Self.docBody, appKey: "other")),
            ("no headers", NIMInboundRequest(headers: [], body: Array(Self.docBody.utf8))),
        ] {
            do {
                _ = try inbound.handle(request)
                Issue.record("\(what) was accepted")
            } catch let error as IMError {
                #expect(error.code == .authenticationFailed, "\(what)")
                #expect(error.details["http_status"] == "403")
            } catch {
                Issue.record("\(what): \(error)")
            }
        }
    }

    @Test func signedGarbageIsMalformedNotAnEvent() {
        do {
            _ = try inbound.handle(Self.request("[1,2"))
            Issue.record("accepted")
        } catch let error as IMError {
            #expect(error.code == .malformedPayload && error.details["http_status"] == "400")
        } catch { Issue.record("\(error)") }
    }

    @Test func numbersObjectsAndTeamCopiesAreAccepted() throws {
        let body = #"{"eventType":1,"convType":"TEAM","to":123456,"fromAccount":"alice","msgType":"PICTURE","body":"","attach":{"url":"http://nos/a.jpg","ext":"jpg","w":10,"h":20,"size":99,"md5":"m"},"msgTimestamp":1441977355557,"msgidServer":987,"fromClientType":"IOS","fromNick":"A"}"#
        let events = try inbound.handle(Self.request(body))
        guard case .message(let message) = events.first?.kind else { Issue.record("no message"); return }
        #expect(message.conversation == .group("123456") && message.id == "987")
        #expect(message.content.attachments.first?.remoteURL == "http://nos/a.jpg")
        #expect(message.content.attachments.first?.width == 10)
        #expect(message.vendorExtras["fromNick"] == "A" && message.vendorExtras["fromClientType"] == "IOS")
    }

    @Test func recallCopiesBecomeRecalledEvents() throws {
        let body = #"{"clientId":"9e54","deleteTime":"1487308054709","eventType":"7","from":"zhangsan","fromClientType":"IOS","msgId":"11555996","selfMsg":"撤回了一条消息","sendTime":"1487308046652","to":"lisi"}"#
        let events = try inbound.handle(Self.request(body))
        #expect(events.first?.eventID == "nim:recall:11555996")
        #expect(events.first?.kind == .recalled(messageID: "11555996", conversation: .direct("lisi", "zhangsan"), by: "zhangsan",
                                               at: 1487308054709))
        let team = try inbound.handle(Self.request(body.replacingOccurrences(of: #""eventType":"7""#, with: #""eventType":"8""#)))
        #expect(team.first?.conversation == .group("lisi"))
    }

    @Test func otherEventTypesAreAcknowledgedWithoutEvents() throws {
        let login = #"{"eventType":"2","accid":"a","clientType":"IOS","code":200,"timestamp":1487308054709}"#
        #expect(try inbound.handle(Self.request(login)).isEmpty)
        let friend = #"{"eventType":"1","convType":"CUSTOM_PERSON","msgType":"FRIEND_ADD","to":"b","fromAccount":"a","msgTimestamp":"1"}"#
        #expect(try inbound.handle(Self.request(friend)).isEmpty)
    }

    @Test func customNotificationsBecomeCommands() throws {
        let body = #"{"eventType":"1","convType":"CUSTOM_PERSON","msgType":"CUSTOM_P2P_MSG","to":"b","fromAccount":"a","attach":"{\"name\":\"typing\",\"data\":{\"on\":true}}","msgTimestamp":"1700000000000"}"#
        let events = try inbound.handle(Self.request(body))
        #expect(events.first?.kind == .command(conversation: .direct("a", "b"), sender: "a",
                                              content: CommandContent(name: "typing", data: ["on": true]), at: 1700000000000))
    }

    @Test func expansionCarriersBecomeExpansionEvents() throws {
        let payload = #"{\"type\":\"imbridge.expansion\",\"data\":{\"msgid\":\"55\",\"version\":2,\"set\":{\"k\":\"v\"},\"removed\":[],\"cleared\":false}}"#
        let body = #"{"eventType":"1","convType":"PERSON","msgType":"CUSTOM","to":"b","fromAccount":"a","attach":"\#(payload)","msgTimestamp":"5","msgidServer":"77"}"#
        let events = try inbound.handle(Self.request(body))
        #expect(events.first?.eventID == "nim:exp:77")
        #expect(events.first?.kind == .expansionChanged(messageID: "55", conversation: .direct("a", "b"), by: "a",
                                                       delta: ExpansionDelta(version: 2, set: ["k": "v"])))
    }

    @Test func freshnessIsCheckedOnlyWhenConfigured() throws {
        let strict = NIMInbound(backend: "nim", appKey: "key", appSecret: Self.secret, maxSkewMs: 60_000)
        #expect(throws: IMError.self) { _ = try strict.handle(Self.request(Self.docBody)) }
        let now = String(SystemClock().nowMs())
        #expect(try strict.handle(Self.request(Self.docBody, curTime: now)).count == 1)
    }
}

@Suite struct ErrorMappingTests {
    @Test(arguments: [
        (414, "checksum", IMError.Code.authenticationFailed, false),
        (414, "CurTime is expired", .authenticationFailed, false),
        (414, "already register", .conflict, false),
        (414, "body is too long", .invalidArgument, false),
        (403, "not allow!", .permissionDenied, false),
        (404, "msg not found", .notFound, false),
        (416, "frequency control", .rateLimited, true),
        (431, "duplicate request", .unavailable, true),
        (500, "server error", .unavailable, true),
        (508, "msg recall timeout", .recallWindowExpired, false),
        (999, "?", .vendorError, false),
    ])
    func codesMap(code: Int, desc: String, expected: IMError.Code, retryable: Bool) {
        let error = NIMErrorMapping.error(code: code, desc: desc)
        #expect(error.code == expected)
        #expect(error.isRetryable == retryable)
        #expect(error.vendorCode == String(code) && error.vendorMessage == desc)
        if code == 416 { #expect(error.retryAfterMs == 10_000) }
    }

    @Test func duplicateRecallIsAlreadyRecalled() {
        #expect(NIMErrorMapping.error(code: 417, desc: "x", operation: .recall).code == .alreadyRecalled)
        #expect(NIMErrorMapping.error(code: 417, desc: "x").code == .conflict)
    }
}
