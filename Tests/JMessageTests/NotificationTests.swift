import Foundation
import IMCore
import JMessage
import Testing

/// The custom notification (`notification: {title, alert}`) was written on send and never read: a
/// record that carries it now decodes to the push text and the title, and writes back the same object.
@Suite struct JMessageNotificationTests {
    let codec = JMessageCodec(identity: identity)

    @Test func notificationRoundTrips() throws {
        let json = reportMessage().replacingOccurrences(of: #""set_from_name":1}"#,
                                                        with: #""set_from_name":1,"notification":{"title":"订单","alert":"您有新订单"}}"#)
        let wire = try JSONDecoder().decode(JMHistoryMessage.self, from: Data(json.utf8))
        #expect(wire.notification == JMNotification(title: "订单", alert: "您有新订单"))
        let message = try codec.decode(wire)
        #expect(message.options.pushText == "您有新订单")
        #expect(message.vendorExtras[JMessageCodec.notificationTitleKey] == "订单")
        let outgoing = OutgoingMessage(conversation: message.conversation, sender: message.sender, content: message.content,
                                       options: message.options, vendorExtras: message.vendorExtras)
        #expect(try codec.encode(outgoing).notification == JMNotification(title: "订单", alert: "您有新订单"))
    }

    @Test func recordsWithoutOneStayAsTheyWere() throws {
        let wire = try JSONDecoder().decode(JMHistoryMessage.self, from: Data(reportMessage().utf8))
        #expect(wire.notification == nil)
        #expect(try codec.decode(wire).options.pushText == nil)
        let encoded = try JSONEncoder().encode(wire)
        #expect(!String(decoding: encoded, as: UTF8.self).contains("notification"), "absent stays absent in the sandbox's output")
    }
}
