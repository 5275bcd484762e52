import Foundation
import IMCore

extension WKMessage {
    /// The message `init(from:)` decodes from `value` (`JSONValue.parse` of a `msg.notify` element, which
    /// reads what `JSONDecoder` reads), read from the parsed members when each has its usual type: numbers
    /// as integers (an id or text also as a string), the payload as base64 text, `to_uids` as strings, the
    /// header as an object of integers, any of them absent or null. Nil for anything else — another type
    /// (a number with a fraction, a flag as a boolean, an integer as text), a message without an id, base64
    /// that does not decode — which `JSONDecoder` then decodes as before. `JSONDecoder` with its keyed
    /// containers was most of a webhook's cost (docs/performance.md, "Columns by position, text by bytes").
    init?(parsed value: JSONValue) {
        guard case .object(let members) = value else { return nil }
        var read = ParsedMembers(members)
        var header = WKHeader()
        switch members["header"] {
        case nil, .null?: break
        case .object(let flags)?:
            var flags = ParsedMembers(flags)
            header = WKHeader(noPersist: Int(flags.int("no_persist") ?? 0), redDot: Int(flags.int("red_dot") ?? 0),
                              syncOnce: Int(flags.int("sync_once") ?? 0))
            guard !flags.refused else { return nil }
        default: return nil
        }
        let setting = UInt8(truncatingIfNeeded: read.int("setting") ?? 0)
        let idText = read.string("message_idstr")
        guard let id = read.int("message_id") ?? idText.flatMap({ Int64($0) }) else { return nil }
        self.init(header: header, setting: setting, messageID: id, clientMsgNo: read.string("client_msg_no") ?? "",
                  messageSeq: UInt64(max(0, read.int("message_seq") ?? 0)), fromUID: read.string("from_uid") ?? "",
                  channelID: read.string("channel_id") ?? "", channelType: UInt8(truncatingIfNeeded: read.int("channel_type") ?? 0),
                  topic: read.string("topic"), expire: UInt32(truncatingIfNeeded: read.int("expire") ?? 0),
                  timestamp: read.int("timestamp") ?? 0, payload: read.data("payload") ?? Data(), toUIDs: read.strings("to_uids"))
        messageIDStr = idText ?? String(id)
        compress = read.string("compress")
        compressToUIDs = read.data("compress_to_uids")
        sourceID = read.int("source_id")
        guard !read.refused else { return nil }
    }
}

/// The members of a parsed object read as `WKLenient`'s `lenientInt64` / `lenientString` and
/// `decodeIfPresent` read them, for the usual types only: any other sets `refused`.
private struct ParsedMembers {
    let members: [String: JSONValue]
    var refused = false

    init(_ members: [String: JSONValue]) { self.members = members }

    mutating func int(_ key: String) -> Int64? {
        switch members[key] {
        case nil, .null?: return nil
        case .int(let value)?: return value
        default: refused = true; return nil
        }
    }

    mutating func string(_ key: String) -> String? {
        switch members[key] {
        case nil, .null?: return nil
        case .string(let text)?: return text
        case .int(let value)?: return String(value)
        default: refused = true; return nil
        }
    }

    /// `Data` as `JSONDecoder`'s `.base64` strategy reads it.
    mutating func data(_ key: String) -> Data? {
        switch members[key] {
        case nil, .null?: return nil
        case .string(let text)?:
            if let data = Data(base64Encoded: text) { return data }
            refused = true
            return nil
        default: refused = true; return nil
        }
    }

    mutating func strings(_ key: String) -> [String]? {
        switch members[key] {
        case nil, .null?: return nil
        case .array(let elements)?:
            var texts: [String] = []
            texts.reserveCapacity(elements.count)
            for element in elements {
                guard case .string(let text) = element else { refused = true; return nil }
                texts.append(text)
            }
            return texts
        default: refused = true; return nil
        }
    }
}
