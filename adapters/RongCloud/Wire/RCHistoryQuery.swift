import IMCore

/// The JSON body of `/v3/message/{private,group}/query.json` (docs/adapters/rongcloud.md).
///
/// The Java SDK sends typed values, the Go SDK sends every value as a string
/// (`"startTime":"1700…","includeStart":"true"`): decoding accepts both; encoding writes typed values.
/// Times are milliseconds; `pageSize` is 1…100 (default 10).
public struct RCHistoryQuery: Codable, Hashable, Sendable {
    public var userId: String
    public var targetId: String
    public var startTime: Int64
    public var endTime: Int64
    public var pageSize: Int
    public var includeStart: Bool

    public static let maxPageSize = 100

    public init(userId: String, targetId: String, startTime: Int64, endTime: Int64, pageSize: Int = 10,
                includeStart: Bool = true) {
        self.userId = userId
        self.targetId = targetId
        self.startTime = startTime
        self.endTime = endTime
        self.pageSize = pageSize
        self.includeStart = includeStart
    }

    private enum CodingKeys: String, CodingKey { case userId, targetId, startTime, endTime, pageSize, includeStart }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func string(_ key: CodingKeys) throws -> String {
            guard let value = try container.decodeIfPresent(JSONValue.self, forKey: key)?.stringValue, !value.isEmpty else {
                throw IMError(.invalidArgument, "\(key.stringValue) is required")
            }
            return value
        }
        func int(_ key: CodingKeys) throws -> Int64? {
            guard let raw = try container.decodeIfPresent(JSONValue.self, forKey: key), raw != .null else { return nil }
            guard let value = raw.int64Value else { throw IMError(.invalidArgument, "\(key.stringValue) must be a number") }
            return value
        }
        userId = try string(.userId)
        targetId = try string(.targetId)
        guard let start = try int(.startTime), let end = try int(.endTime) else {
            throw IMError(.invalidArgument, "startTime and endTime are required")
        }
        startTime = start
        endTime = end
        pageSize = Int(try int(.pageSize) ?? 10)
        let include = try container.decodeIfPresent(JSONValue.self, forKey: .includeStart)
        switch include {
        case .bool(let value): includeStart = value
        case .string(let text): includeStart = ["true", "1"].contains(text.lowercased())
        case .int(let value): includeStart = value != 0
        default: includeStart = true
        }
    }
}
