import Foundation
import IMAdapterKit
import IMCore

/// Pure translation of WuKongIM's message object ⇄ neutral `Message`.
///
/// - id ⇄ `message_id` (decimal string); `client_msg_no` ⇄ `clientMessageID` (empty = none);
///   `message_seq` ⇄ `seq` (0 = none); `timestamp` seconds ⇄ `sentAt` milliseconds.
/// - `from_uid` "" (the system uid as rendered) ⇄ sender `____system`.
/// - Person channels: `direct(from_uid, channel_id)` on the way in (the rendered `channel_id` is the
///   recipient, so an incoming message's `channel_id` is the reader's own uid); on the way out the
///   `channel_id` is the peer of the sender, as the server renders it.
/// - `header.no_persist` ⇄ `!options.persist`, `header.red_dot` ⇄ `options.countUnread`, setting bit
///   0x80 ⇄ `options.receiptRequested`; `sync_once`, `expire`, `topic` and other setting bits are kept
///   in `vendorExtras`, with the payload's own (see `WuKongContentCodec`).
/// - A payload that is not JSON (E2E-encrypted, broken) becomes `.unsupported` with vendorType
///   `binary` and the base64 bytes, written back unchanged.
public struct WuKongMessageCodec: Sendable {
    public let content: WuKongContentCodec

    public init(content: WuKongContentCodec = WuKongContentCodec()) {
        self.content = content
    }

    public func decode(_ wire: WKMessage) throws -> Message {
        let decoded: CodedContent
        do {
            decoded = try content.decode(payload: wire.payload)
        } catch let error as IMError where error.code == .malformedPayload {
            decoded = CodedContent(.unsupported(UnsupportedContent(vendor: "wukong", vendorType: "binary",
                                                                   raw: wire.payload.base64EncodedString())))
        }
        let sender = wire.fromUID.isEmpty ? UserID(WuKongChannel.systemUID) : UserID(wire.fromUID)
        var vendorExtras = decoded.vendorExtras
        if wire.header.syncOnce != 0 { vendorExtras["sync_once"] = 1 }
        if wire.expire != 0 { vendorExtras["expire"] = .int(Int64(wire.expire)) }
        if let topic = wire.topic, !topic.isEmpty { vendorExtras["topic"] = .string(topic) }
        let otherBits = wire.setting & ~WKSetting.receipt
        if otherBits != 0 { vendorExtras["setting"] = .int(Int64(otherBits)) }
        let options = MessageOptions(persist: wire.header.noPersist == 0, countUnread: wire.header.redDot != 0,
                                     receiptRequested: wire.setting & WKSetting.receipt != 0)
        return Message(
            id: MessageID(wire.messageIDStr.isEmpty ? String(wire.messageID) : wire.messageIDStr),
            clientMessageID: wire.clientMsgNo.isEmpty ? nil : ClientMessageID(wire.clientMsgNo),
            conversation: WuKongChannel.conversation(channelID: wire.channelID, channelType: wire.channelType,
                                                     fromUID: sender.rawValue),
            sender: sender, sentAt: wire.timestamp * 1000, seq: wire.messageSeq > 0 ? Int64(wire.messageSeq) : nil,
            content: decoded.content, mentions: decoded.mentions, reply: decoded.reply, options: options,
            vendorExtras: vendorExtras)
    }

    public func encode(_ message: Message) throws -> WKMessage {
        guard let id = Int64(message.id.rawValue) else {
            throw IMError(.invalidArgument, "WuKong message ids are 64-bit integers; '\(message.id)' is not")
        }
        let address = try WuKongChannel.address(message.conversation, sender: message.sender)
        var setting = UInt8(truncatingIfNeeded: message.vendorExtras["setting"]?.int64Value ?? 0)
        if message.options.receiptRequested { setting |= WKSetting.receipt }
        let header = WKHeader(noPersist: message.options.persist ? 0 : 1, redDot: message.options.countUnread ? 1 : 0,
                              syncOnce: Int(message.vendorExtras["sync_once"]?.int64Value ?? 0))
        return WKMessage(
            header: header, setting: setting, messageID: id, clientMsgNo: message.clientMessageID?.rawValue ?? "",
            messageSeq: UInt64(max(0, message.seq ?? 0)),
            fromUID: message.sender.rawValue == WuKongChannel.systemUID ? "" : message.sender.rawValue,
            channelID: address.id, channelType: address.type, topic: message.vendorExtras["topic"]?.stringValue,
            expire: UInt32(truncatingIfNeeded: message.vendorExtras["expire"]?.int64Value ?? 0),
            timestamp: message.sentAt / 1000, payload: try payload(for: message.content, mentions: message.mentions,
                                                                   reply: message.reply, vendorExtras: message.vendorExtras))
    }

    /// The base64-able payload bytes of a content (binary unsupported payloads are restored as received).
    public func payload(for content: MessageContent, mentions: Mentions, reply: ReplyRef?,
                        vendorExtras: [String: JSONValue]) throws -> Data {
        if case .unsupported(let raw) = content, raw.vendor == "wukong", raw.vendorType == "binary" {
            guard let data = Data(base64Encoded: raw.raw) else { throw IMError(.malformedPayload, "bad stored binary payload") }
            return data
        }
        return try self.content.encodePayload(content, mentions: mentions, reply: reply, vendorExtras: vendorExtras)
    }
}
