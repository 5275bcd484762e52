import Foundation
import IMCore

/// `RC:RcCmd` content, the recall command (docs/adapters/rongcloud.md; Android `RecallCommandMessage`).
///
/// `{"messageUId":"BRGM-DEN2-01E4-BN66","conversationType":1,"targetId":"u2","sentTime":1700000000000,
/// "isAdmin":0,"isDelete":0}`. The Java SDK writes `conversationType` as a string (`"6"`), so numbers
/// decode from either form; flags decode from 0/1 or booleans.
public struct RCRecallCommand: Hashable, Sendable {
    public var messageUId: String
    public var conversationType: Int?
    public var targetId: String?
    public var sentTime: Int64?
    public var isAdmin: Bool?
    public var isDelete: Bool?

    public init(messageUId: String, conversationType: Int? = nil, targetId: String? = nil, sentTime: Int64? = nil,
                isAdmin: Bool? = nil, isDelete: Bool? = nil) {
        self.messageUId = messageUId
        self.conversationType = conversationType
        self.targetId = targetId
        self.sentTime = sentTime
        self.isAdmin = isAdmin
        self.isDelete = isDelete
    }

    /// Parses the content JSON text; nil when it is not an object with a non-empty `messageUId`.
    public init?(json text: String) {
        guard let object = (try? JSONValue.parse(text))?.objectValue,
              let uid = object["messageUId"]?.stringValue, !uid.isEmpty else { return nil }
        self.init(messageUId: uid, conversationType: object["conversationType"]?.int64Value.map { Int($0) },
                  targetId: object["targetId"]?.stringValue, sentTime: object["sentTime"]?.int64Value,
                  isAdmin: object["isAdmin"]?.int64Value.map { $0 != 0 }, isDelete: object["isDelete"]?.int64Value.map { $0 != 0 })
    }

    public var json: JSONValue {
        var object: [String: JSONValue] = ["messageUId": .string(messageUId)]
        if let conversationType { object["conversationType"] = .int(Int64(conversationType)) }
        if let targetId { object["targetId"] = .string(targetId) }
        if let sentTime { object["sentTime"] = .int(sentTime) }
        if let isAdmin { object["isAdmin"] = .int(isAdmin ? 1 : 0) }
        if let isDelete { object["isDelete"] = .int(isDelete ? 1 : 0) }
        return .object(object)
    }
}

/// `RC:MsgExMsg` content, the expansion signalling message (Android `MessageExpansionMessage`):
/// `{"mid":"<msgUID>","put":{"k":"v"},"del":["k2"],"clear":0}`. `put`, `del` and `clear` are each
/// optional; `clear` 1 means every key was removed before `put` applied.
public struct RCExpansionSignal: Hashable, Sendable {
    public var mid: String
    public var put: [String: String]
    public var del: [String]
    public var clear: Bool

    public init(mid: String, put: [String: String] = [:], del: [String] = [], clear: Bool = false) {
        self.mid = mid
        self.put = put
        self.del = del
        self.clear = clear
    }

    /// Parses the content JSON text; nil when `mid` is missing or `put`/`del` have the wrong shape.
    public init?(json text: String) {
        guard let object = (try? JSONValue.parse(text))?.objectValue,
              let mid = object["mid"]?.stringValue, !mid.isEmpty else { return nil }
        var put: [String: String] = [:]
        if let raw = object["put"], raw != .null {
            guard let values = raw.objectValue else { return nil }
            for (key, value) in values {
                guard let text = value.stringValue else { return nil }
                put[key] = text
            }
        }
        var del: [String] = []
        if let raw = object["del"], raw != .null {
            guard let keys = raw.arrayValue?.compactMap(\.stringValue), keys.count == raw.arrayValue?.count else { return nil }
            del = keys
        }
        self.init(mid: mid, put: put, del: del, clear: (object["clear"]?.int64Value ?? 0) != 0)
    }

    /// The content JSON the sandbox emits: `put` and `del` only when non-empty, `clear` only when set.
    public var json: JSONValue {
        var object: [String: JSONValue] = ["mid": .string(mid)]
        if !put.isEmpty { object["put"] = .object(put.mapValues { .string($0) }) }
        if !del.isEmpty { object["del"] = .array(del.map { .string($0) }) }
        if clear { object["clear"] = .int(1) }
        return .object(object)
    }
}
