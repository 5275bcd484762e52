import Foundation
import IMCore
import IMHTTP
import JMessage
import Testing

@Suite struct JMessageInboundTests {
    let backend = JMessagePushBackend(JMessageBackend(id: "jm", config: JMessageConfig(
        appKey: appKey, masterSecret: masterSecret, apiBaseURL: "http://127.0.0.1:9", reportBaseURL: "http://127.0.0.1:9", admin: "bridge_admin")))

    func push(_ body: String, authorization: String? = "Basic " + Data("\(appKey):\(masterSecret)".utf8).base64EncodedString()) -> HTTPRequestData {
        HTTPRequestData(method: "POST", path: "/callbacks/jm", headers: authorization.map { [("Authorization", $0), ("Content-Type", "application/json; charset=utf-8")] } ?? [],
                        body: Array(body.utf8))
    }

    static let body = #"{"total":2,"messages":["# + reportMessage(msgid: 1001) + "," + reportMessage(msgid: 1002, targetType: "group", targetID: "10055201") + "]}"

    @Test func parsesTheRoutingPushAndAnswers200() async throws {
        let stream = backend.events()
        let outcome = try await backend.receiveCallback(push(Self.body))
        #expect(outcome.response.status == 200)
        #expect(outcome.events.map(\.eventID) == ["jmessage:msg:1001", "jmessage:msg:1002"])
        #expect(outcome.events.map(\.conversation) == [.direct("alice", "bobby"), .group("10055201")])
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next()?.eventID == "jmessage:msg:1001")

        let again = try await backend.receiveCallback(push(Self.body))
        #expect(again.events.map(\.eventID) == outcome.events.map(\.eventID), "a redelivery keeps the event ids")
    }

    @Test(arguments: [
        (nil, "authentication_failed", 401),
        ("Basic " + Data("\(appKey):wrong".utf8).base64EncodedString(), "authentication_failed", 401),
        ("Basic " + Data("otherapp:\(masterSecret)".utf8).base64EncodedString(), "authentication_failed", 401),
        ("Bearer abc", "authentication_failed", 401),
    ] as [(String?, String, Int)])
    func refusesForgedPushes(authorization: String?, code: String, status: Int) async throws {
        do {
            _ = try await backend.receiveCallback(push(Self.body, authorization: authorization))
            Issue.record("a forged push was accepted")
        } catch let error as IMError {
            #expect(error.code.rawValue == code)
            #expect(backend.callbackFailureResponse(for: error).status == status)
        }
    }

    @Test func refusesMalformedBodies() async throws {
        for body in ["not json", #"{"total":1}"#, #"{"total":1,"messages":[{"msgid":1}]}"#] {
            await #expect { _ = try await backend.receiveCallback(push(body)) } throws: {
                ($0 as? IMError)?.code == .malformedPayload && backend.callbackFailureResponse(for: $0 as! IMError).status == 400
            }
        }
    }
}
