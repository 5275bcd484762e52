import IMAdapterKit
import IMHTTP
import IMCore
import IMTesting
import Testing
@testable import RongCloud

/// The routing callback receiver through `handle(_:sink:)`: verification first, then parsing; refusals
/// yield no event and are told to the sink; the answers are RongCloud's (200 `ok`, 401, 400, 503).
struct RongCloudInboundTests {
    static let now: Int64 = 1_795_258_879_000
    let backend = RongCloudBackend(id: "rc", settings: .init(appKey: "K", appSecret: "S", apiURLs: ["http://127.0.0.1:9"]),
                                   clock: TestClock(startMs: Self.now))
    var inbound: RongCloudInbound { backend.inbound }

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
    func request(query: FormBody, headers: [(name: String, value: String)], body: FormBody) -> HTTPRequestData {
        HTTPRequestData(method: "POST", path: "/rongcloud", rawQuery: query.encoded, headers: headers, body: Array(body.encoded.utf8))
    }

    /// `admit`'s decision as (status of an early answer, or nil; the cap when the body is to be read).
    static func decision(_ admission: BodyAdmission) -> (answer: Int?, cap: Int?) {
        switch admission {
        case .answer(let response): (response.status, nil)
        case .read(let cap): (nil, cap)
        }
    }

    /// The signature covers only query values: checked from the head (docs/adapters/rongcloud.md, "Callback limits").
    @Test func theHeadIsCheckedBeforeTheBody() async {
        let sink = CollectingSink()
        let good = request(query: signedQuery(), headers: [], body: FormBody())
        #expect(Self.decision(await backend.admit(good, sink: sink)).cap == RongCloudInbound.maxBodyBytes)
        #expect(sink.refusals.isEmpty)
        let forged = request(query: signedQuery(secret: "wrong"), headers: [], body: FormBody())
        let stale = request(query: signedQuery(timestamp: "1000000000"), headers: [], body: FormBody())
        let unsigned = request(query: FormBody(), headers: [], body: FormBody())
        for head in [forged, stale, unsigned] {
            #expect(Self.decision(await backend.admit(head, sink: sink)).answer == 401)
        }
        #expect(sink.refusals.count == 3)
    }

    /// One exchange through `handle`: the answer and what the sink got.
    func exchange(query: FormBody, headers: [(name: String, value: String)] = [], body: FormBody,
                  sink: CollectingSink = CollectingSink()) async -> (response: HTTPResponseData, sink: CollectingSink) {
        (await backend.handle(request(query: query, headers: headers, body: body), sink: sink), sink)
    }

    /// The events of an accepted callback (200 `ok`); records an issue for any other answer.
    func events(query: FormBody, headers: [(name: String, value: String)] = [], body: FormBody) async -> [IMEvent] {
        let (response, sink) = await exchange(query: query, headers: headers, body: body)
        #expect(response.status == 200 && response.bodyString == "ok", "\(response.status) \(response.bodyString)")
        #expect(sink.refusals.isEmpty)
        return sink.events
    }

    /// The refusal of a callback: its answer's status and body prefix, no event, one refusal told to the sink.
    func refusal(query: FormBody, headers: [(name: String, value: String)] = [], body: FormBody,
                 status: Int) async -> IMError? {
        let (response, sink) = await exchange(query: query, headers: headers, body: body)
        #expect(response.status == status)
        #expect(response.bodyString.hasPrefix(status == 401 ? "unauthorized: " : "bad request: "), "\(response.bodyString)")
        #expect(sink.events.isEmpty && sink.refusals.count == 1)
        return sink.refusals.first
    }

    func routed(_ objectName: String, _ content: String, uid: String = "BRGM-DEN2-01E4-BN66", channel: String = "PERSON",
                at time: Int64 = 1_795_258_878_000) -> FormBody {
        RCRoutedMessage(fromUserId: "u1", toUserId: "u2", objectName: objectName, content: content, channelType: channel,
                          msgTimestamp: time, msgUID: uid, source: "Android").form
    }

    @Test func signedMessageBecomesOneMessageEventAndRedeliveryKeepsItsID() async throws {
        let body = routed("RC:TxtMsg", #"{"content":"hi"}"#)
        let first = await events(query: signedQuery(), body: body)
        let again = await events(query: signedQuery(nonce: "other", timestamp: "1795258880000"), body: body)
        #expect(first.count == 1 && again.count == 1)
        #expect(first[0].eventID == "msg:BRGM-DEN2-01E4-BN66" && again[0].eventID == first[0].eventID)
        guard case .message(let message) = first[0].kind else { Issue.record("not a message"); return }
        #expect(message.content == .text("hi") && message.conversation == .direct("u1", "u2") && first[0].backend == "rc")
        let parsed = try inbound.batch(from: request(query: signedQuery(), headers: [], body: body))
        #expect(parsed.events == first && parsed.setAside.isEmpty, "handle gives the sink what the pure parser returns")
    }

    /// The signature covers no byte of the body: a signature is taken for one body only
    /// (docs/adapters/rongcloud.md, "Callback limits"). The same body again is a redelivery (200; the
    /// ledger keeps its events once), another body with the same signature is refused 401, whether the
    /// signature came in the query or in `RC-*` headers.
    @Test func aCapturedSignatureCarriesNoOtherBody() async {
        let sink = CollectingSink()
        let genuine = routed("RC:TxtMsg", #"{"content":"hi"}"#)
        let forged = RCRoutedMessage(fromUserId: "mallory", toUserId: "u2", objectName: "RC:TxtMsg", content: #"{"content":"pay me"}"#,
                                     channelType: "PERSON", msgTimestamp: 1_795_258_878_000, msgUID: "FORGED-0001", source: "Android").form
        #expect(await exchange(query: signedQuery(), body: genuine, sink: sink).response.status == 200)
        #expect(await exchange(query: signedQuery(), body: genuine, sink: sink).response.status == 200, "a redelivery is taken")
        let replay = await exchange(query: signedQuery(), body: forged, sink: sink).response
        #expect(replay.status == 401 && replay.bodyString.contains("already used with another body"), "\(replay.status) \(replay.bodyString)")
        let headers: [(name: String, value: String)] = [("RC-Nonce", "0.7940742792184153"), ("RC-Timestamp", "1795258879"),
            ("RC-Signature", RongCloudSignature.sign(secret: "S", nonce: "0.7940742792184153", timestamp: "1795258879").uppercased())]
        #expect(await exchange(query: FormBody(), headers: headers, body: forged, sink: sink).response.status == 401,
                "the same signature in headers, in capitals")
        #expect(sink.events.allSatisfy { $0.eventID == "msg:BRGM-DEN2-01E4-BN66" } && sink.events.count == 2)
        #expect(sink.refusals.count == 2 && sink.refusals.allSatisfy { $0.details["refusal"] == "replayed" })
        // A new signature (the vendor signs every request afresh) takes the other body.
        #expect(await exchange(query: signedQuery(nonce: "n2"), body: forged, sink: sink).response.status == 200)
    }

    /// A sink that keeps marks decides (the bridge's store); one that fails makes the vendor redeliver.
    @Test func theSinksMarksDecideAndAFailingSinkIsARetry() async {
        final class MarkingSink: EventSink, @unchecked Sendable {
            var outcome: CallbackMark.Outcome?
            var failing = false
            var marks: [CallbackMark] = []
            var unrecorded: [IMEvent] = []
            func accept(_ events: [IMEvent]) async throws {}
            func unrecorded(_ events: [IMEvent]) { unrecorded += events }
            func remember(_ mark: CallbackMark) async throws -> CallbackMark.Outcome? {
                if failing { throw IMError(.unavailable, "store down") }
                marks.append(mark)
                return outcome
            }
        }
        let sink = MarkingSink()
        let body = routed("RC:TxtMsg", #"{"content":"hi"}"#)
        sink.outcome = .reused
        #expect(await backend.handle(request(query: signedQuery(), headers: [], body: body), sink: sink).status == 401)
        sink.outcome = .first
        #expect(await backend.handle(request(query: signedQuery(), headers: [], body: body), sink: sink).status == 200,
                "the sink's answer wins over this process's memory")
        #expect(sink.unrecorded.isEmpty, "a refused replay is no lost message")
        sink.failing = true
        #expect(await backend.handle(request(query: signedQuery(), headers: [], body: body), sink: sink).status == 503)
        #expect(sink.unrecorded.map(\.eventID) == ["msg:BRGM-DEN2-01E4-BN66"], "the sink hears of the message the retry answer may lose")
        let mark = sink.marks[0]
        #expect(mark.backend == "rc" && mark.key == RongCloudSignature.sign(secret: "S", nonce: "0.7940742792184153", timestamp: "1795258879"))
        #expect(mark.expiresAt == 1_795_258_879_000 + 300_000, "remembered until the timestamp leaves the window")
        #expect(mark.bodyDigest == Hashing.sha256Hex(Array(body.encoded.utf8)))
    }

    @Test func signatureInRCHeadersIsAccepted() async {
        let headers: [(name: String, value: String)] = [("RC-Nonce", "n1"), ("rc-timestamp", "1795258879"),
                       ("RC-Signature", RongCloudSignature.sign(secret: "S", nonce: "n1", timestamp: "1795258879"))]
        #expect(await events(query: FormBody(), headers: headers, body: routed("RC:TxtMsg", #"{"content":"hi"}"#)).count == 1)
    }

    @Test(arguments: [
        ("forged signature", "S2", "K", "1795258879"),
        ("another app", "S", "K2", "1795258879"),
        ("stale timestamp", "S", "K", "1795250000"),
    ])
    func forgedOrStaleCallbacksAreRefused(_ why: String, secret: String, appKey: String, timestamp: String) async {
        let error = await refusal(query: signedQuery(timestamp: timestamp, secret: secret, appKey: appKey),
                                  body: routed("RC:TxtMsg", #"{"content":"hi"}"#), status: 401)
        #expect(error?.code == .authenticationFailed, "\(why)")
    }

    /// Near miss: a full-length signature differing only in its last character is refused
    /// (a comparison of the first bytes only would pass it).
    @Test func aSignatureWrongOnlyInItsLastCharacterIsRefused() async {
        var query = signedQuery()
        let good = RongCloudSignature.sign(secret: "S", nonce: "0.7940742792184153", timestamp: "1795258879")
        #expect(good.count == 40)
        query.items.removeAll { $0.name == "signature" }
        query.append("signature", String(good.dropLast()) + (good.hasSuffix("0") ? "1" : "0"))
        let error = await refusal(query: query, body: routed("RC:TxtMsg", #"{"content":"hi"}"#), status: 401)
        #expect(error?.code == .authenticationFailed)
        // The control: the same request with the right signature is taken.
        #expect(await events(query: signedQuery(), body: routed("RC:TxtMsg", #"{"content":"hi"}"#)).count == 1)
    }

    /// Near miss: a callback stamped two hours in the future is as stale as one two hours
    /// old (the skew check is on the absolute distance).
    @Test func aCallbackStampedInTheFutureIsRefused() async {
        for timestamp in ["1795266079", "1795266079000", "1795251679"] {
            let error = await refusal(query: signedQuery(timestamp: timestamp), body: routed("RC:TxtMsg", #"{"content":"hi"}"#), status: 401)
            #expect(error?.code == .authenticationFailed, "\(timestamp)")
        }
        #expect(await events(query: signedQuery(timestamp: "1795259119"), body: routed("RC:TxtMsg", #"{"content":"hi"}"#)).count == 1,
                "4 minutes ahead is within the five-minute window")
        let error = await refusal(query: signedQuery(timestamp: "1795259239"), body: routed("RC:TxtMsg", #"{"content":"hi"}"#), status: 401)
        #expect(error?.code == .authenticationFailed, "6 minutes ahead is not")
    }

    @Test func unsignedCallbackIsRefused() async {
        let error = await refusal(query: FormBody(), body: routed("RC:TxtMsg", #"{"content":"hi"}"#), status: 401)
        #expect(error?.code == .authenticationFailed)
    }

    @Test func malformedBodiesAreRefusedWithoutEvents() async {
        var missing = routed("RC:TxtMsg", #"{"content":"hi"}"#)
        missing.items.removeAll { $0.name == "msgUID" }
        let error = await refusal(query: signedQuery(), body: missing, status: 400)
        #expect(error?.code == .malformedPayload && error?.details["field"] == "msgUID")
    }

    /// A signed routed message whose content does not convert is a poison message: acknowledged
    /// (RongCloud moves on), no event, set aside with its form body and the reason — not refused.
    @Test func unconvertibleContentIsSetAsideNotRefused() async throws {
        for (n, body) in [routed("RC:RcCmd", "{}", uid: "P-1"), routed("RC:MsgExMsg", #"{"put":{}}"#, uid: "P-2"),
                          routed("RC:TxtMsg", "nope", uid: "P-3"), routed("RC:ImgMsg", #"{"content":"aGk="}"#, uid: "P-4")].enumerated() {
            // A fresh signature for each body, as the vendor signs each request (`CallbackMarks`).
            let (response, sink) = await exchange(query: signedQuery(nonce: "poison-\(n)"), body: body)
            #expect(response.status == 200 && response.bodyString == "ok")
            #expect(sink.events.isEmpty && sink.refusals.isEmpty)
            let item = try #require(sink.setAside.first)
            #expect(sink.setAside.count == 1 && item.key == "msg:P-\(n + 1)" && item.format == RongCloudInbound.setAsideFormat)
            #expect(item.raw == Array(body.encoded.utf8), "the form body as received")
            #expect(item.reason.hasPrefix("malformed_payload"), "\(item.reason)")
            // Replayed (the mapping unchanged) it is still set aside, with the same key.
            let replayed = try await backend.replay(item)
            #expect(replayed.events.isEmpty && replayed.setAside.map(\.key) == [item.key])
        }
    }

    @Test func aGetIsRefusedAsMalformed() async {
        let get = HTTPRequestData(method: "GET", path: "/rongcloud", rawQuery: signedQuery().encoded, headers: [], body: [])
        let sink = CollectingSink()
        let response = await backend.handle(get, sink: sink)
        #expect(response.status == 400 && sink.events.isEmpty && sink.refusals.map(\.code) == [.malformedPayload])
    }

    @Test func aFailingSinkGetsTheRetryAnswerAndNothingIsPublished() async {
        let stream = backend.events()
        let sink = CollectingSink()
        sink.fail(with: IMError(.unavailable, "store down"))
        let body = routed("RC:TxtMsg", #"{"content":"hi"}"#)
        let (failed, _) = await exchange(query: signedQuery(), body: body, sink: sink)
        #expect(failed.status == 503, "RongCloud redelivers on a 5xx")
        #expect(sink.events.isEmpty && sink.refusals.isEmpty, "a store failure is no refusal")
        sink.fail(with: nil)
        let (accepted, _) = await exchange(query: signedQuery(), body: body, sink: sink)
        #expect(accepted.status == 200 && accepted.bodyString == "ok")
        #expect(sink.events.map(\.eventID) == ["msg:BRGM-DEN2-01E4-BN66"])
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next()?.eventID == "msg:BRGM-DEN2-01E4-BN66", "events() sees only what the sink accepted")
    }

    @Test func recallCommandBecomesRecalled() async {
        let body = routed("RC:RcCmd", #"{"messageUId":"AAAA-BBBB-CCCC-DDDD","conversationType":1,"targetId":"u2","sentTime":1,"isAdmin":0,"isDelete":0}"#,
                          uid: "RCMD-0000-0000-0001")
        let events = await events(query: signedQuery(), body: body)
        #expect(events.map(\.eventID) == ["recall:AAAA-BBBB-CCCC-DDDD"])
        #expect(events.first?.kind == .recalled(messageID: "AAAA-BBBB-CCCC-DDDD", conversation: .direct("u1", "u2"), by: "u1",
                                                at: 1_795_258_878_000))
    }

    /// A recall command that carries no `isDelete` at all is a recall, not a deletion.
    @Test func recallCommandWithoutIsDeleteIsARecall() async {
        let body = routed("RC:RcCmd", #"{"messageUId":"AAAA-BBBB-CCCC-DDDE","conversationType":1,"targetId":"u2","sentTime":1,"isAdmin":0}"#,
                          uid: "RCMD-0000-0000-0002")
        let events = await events(query: signedQuery(), body: body)
        #expect(events.map(\.eventID) == ["recall:AAAA-BBBB-CCCC-DDDE"])
    }

    @Test func expansionSignalBecomesExpansionChangedWithTheRoutedTimeAsVersion() async {
        let body = routed("RC:MsgExMsg", #"{"mid":"AAAA-BBBB-CCCC-DDDD","put":{"votes":"3"},"del":["old"]}"#,
                          uid: "EXPN-0000-0000-0001", channel: "GROUP", at: 1_795_258_878_500)
        let events = await events(query: signedQuery(), body: body)
        #expect(events.map(\.eventID) == ["exp:EXPN-0000-0000-0001"])
        #expect(events.first?.kind == .expansionChanged(
            messageID: "AAAA-BBBB-CCCC-DDDD", conversation: .group("u2"), by: "u1",
            delta: ExpansionDelta(version: 1_795_258_878_500, set: ["votes": "3"], removed: ["old"])))
    }

    @Test func ignoredSignalsAreAcknowledgedWithoutEvents() async {
        #expect(await events(query: signedQuery(), body: routed("RC:TypSts", #"{"typingContentType":"RC:TxtMsg"}"#)).isEmpty)
    }

    /// An already verified routed form, as `batch(from:)` parses it after the signature check.
    func parsed(_ form: FormBody) throws -> [IMEvent] {
        let batch = try inbound.batch(fromBody: Array(form.encoded.utf8))
        #expect(batch.setAside.isEmpty, "\(batch.setAside)")
        return batch.events
    }

    @Test func commandsAndReadsAndIgnoredSignals() throws {
        let command = try parsed(routed("RC:CmdMsg", #"{"name":"ping","data":"1"}"#, uid: "CMDS-1"))
        #expect(command.first?.kind == .command(conversation: .direct("u1", "u2"), sender: "u1",
                                                content: CommandContent(name: "ping", data: "1"), at: 1_795_258_878_000))
        #expect(command.first?.eventID == "cmd:CMDS-1")
        let read = try parsed(routed("RC:ReadNtf", #"{"lastMessageSendTime":1,"messageUId":"M9","type":1}"#, uid: "READ-1"))
        #expect(read.first?.kind == .read(conversation: .direct("u1", "u2"), user: "u1", upTo: "M9", at: 1_795_258_878_000))
        #expect(try parsed(routed("RC:TypSts", #"{"typingContentType":"RC:TxtMsg"}"#)).isEmpty)
    }
}
