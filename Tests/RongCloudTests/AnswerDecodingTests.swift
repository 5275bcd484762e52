import Foundation
import IMCore
import IMHTTP
import Testing
@testable import RongCloud

/// `RongCloudClient.decode` reads the relay's answers (a publish, a plain success) from one parse of the
/// body; every body must give what decoding it with `JSONDecoder` gives — the same value, or the same
/// error code.
@Suite struct AnswerDecodingTests {
    let client = RongCloudClient(baseURLs: ["http://127.0.0.1:1"], appKey: "k", appSecret: "s")

    static let bodies = [
        #"{"code":200}"#, #"{"code":200,"errorMessage":null}"#, #"{"code":200,"msg":"ok"}"#, #"{"code":200,"errorMessage":7}"#,
        #"{"code":200.0}"#, #"{"code":"200"}"#, #"{"code":1008,"errorMessage":"slow down"}"#, #"{"code":1002,"msg":"bad"}"#,
        #"{"code":200,"messageUIDs":[{"userId":"u2","messageUID":"M1"}]}"#,
        #"{"code":200,"messageUIDs":[{"groupId":"g1","messageUID":"M2"},{"userId":null,"chatroomId":"r","messageUID":"M3"}]}"#,
        #"{"code":200,"messageUIDs":null}"#, #"{"code":200,"messageUIDs":[]}"#, #"{"code":200,"messageUIDs":{}}"#,
        #"{"code":200,"messageUIDs":[{"userId":"u2"}]}"#, #"{"code":200,"messageUIDs":[{"userId":3,"messageUID":"M"}]}"#,
        #"{"code":200,"messageUIDs":["M"]}"#, #"{"code":200,"extra":{"deep":[1,2,3]},"messageUIDs":[{"messageUID":"\u00e9"}]}"#,
        #"[]"#, #"null"#, #"not json"#, "", #"{"code":2000000000000}"#,
    ]

    func general<R: Decodable>(_ body: String, _ type: R.Type) -> Result<R, IMError> {
        let data = Data(body.utf8)
        guard let envelope = try? JSONDecoder().decode(RCErrorEnvelope.self, from: data) else { return .failure(IMError(.malformedPayload, "")) }
        guard envelope.code == 200 else { return .failure(IMError(.vendorError, "")) }
        do { return .success(try JSONDecoder().decode(R.self, from: data)) } catch { return .failure(IMError(.malformedPayload, "")) }
    }

    func decoded<R: Decodable>(_ body: String, _ type: R.Type) -> Result<R, IMError> {
        do {
            return .success(try client.decode(HTTPResponseData(status: 200, headers: [], body: Array(body.utf8)), "/p", as: R.self))
        } catch let error as IMError {
            return .failure(error)
        } catch {
            return .failure(IMError(.vendorError, "\(error)"))
        }
    }

    func agree<R: Decodable & Equatable>(_ type: R.Type) {
        for body in Self.bodies {
            switch (decoded(body, R.self), general(body, R.self)) {
            case (.success(let fast), .success(let slow)): #expect(fast == slow, "\(body)")
            case (.failure(let error), .failure(let expected)):
                if expected.code == .malformedPayload { #expect(error.code == .malformedPayload, "\(body): \(error)") }
                else { #expect(error.code != .malformedPayload, "\(body): \(error)") }
            case (let fast, let slow): Issue.record("\(body): \(fast) against JSONDecoder's \(slow)")
            }
        }
    }

    @Test func publishAnswersDecodeAsJSONDecoderDecodesThem() { agree(RCPublishResponse.self) }
    @Test func plainAnswersDecodeAsJSONDecoderDecodesThem() { agree(RCErrorEnvelope.self) }
    @Test func otherAnswersStillDecode() { agree(RCTokenResponse.self) }
}
