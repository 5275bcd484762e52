import Foundation
import IMCore
import IMHTTP
import Testing
@testable import WuKong

/// `WKMessage(parsed:)`, the webhook's read of a message from its parsed JSON, gives what `JSONDecoder`
/// gives, and nil (the caller then decodes with `JSONDecoder`) for every shape it does not read itself.
@Suite struct WuKongParsedMessageTests {
    static let usual = WuKongMessageCodecTests.notifyJSON

    static let elements: [String] = [
        usual,
        #"{"message_id":5,"from_uid":"a","channel_id":"g","channel_type":2,"timestamp":1,"payload":""}"#,
        #"{"message_idstr":"77","payload":null,"header":null,"topic":"t","to_uids":["x","y"],"compress":"gzip","compress_to_uids":"AAE=","source_id":9}"#,
        #"{"message_id":1,"message_idstr":"one","client_msg_no":42,"message_seq":-3,"setting":300,"channel_type":258,"expire":-1}"#,
        #"{"message_id":1,"header":{"no_persist":1,"red_dot":null},"to_uids":[],"extra":{"a":[1,2.5,true]}}"#,
        // Shapes read by JSONDecoder only (nil here), some of which it refuses.
        #"{"message_id":"12","payload":"aGk="}"#,
        #"{"message_id":1,"header":{"red_dot":true}}"#,
        #"{"message_id":1,"header":[]}"#,
        #"{"message_id":1,"payload":"not base64!"}"#,
        #"{"message_id":1,"to_uids":["a",null]}"#,
        #"{"message_id":1,"to_uids":"a"}"#,
        #"{"message_id":1,"topic":true}"#,
        #"{"message_id":1,"timestamp":"170"}"#,
        #"{"message_id":1,"message_seq":18446744073709551615}"#,
        #"{"from_uid":"a"}"#,
        #"[1]"#,
    ]

    /// Read either way, the same.
    static let either = [#"{"message_id":1.0,"payload":"aGk="}"#, #"{"message_id":2,"expire":1e3}"#]

    @Test(arguments: elements + either)
    func readsWhatJSONDecoderReads(_ element: String) throws {
        let decoded = try? WuKongJSON.decode(WKMessage.self, from: Data(element.utf8))
        guard let parsed = WKMessage(parsed: try JSONValue.parse(element)) else { return }
        #expect(parsed == decoded)
    }

    @Test func readsTheUsualShapes() throws {
        for element in Self.elements.prefix(5) {
            #expect(WKMessage(parsed: try JSONValue.parse(element)) != nil, "\(element)")
        }
        for element in Self.elements.dropFirst(5) {
            #expect(WKMessage(parsed: try JSONValue.parse(element)) == nil, "\(element)")
        }
    }
}
