import Foundation
import IMCore
import IMHTTP
import RongCloud

/// `/user/checkOnline.json`'s answer: `status` is a string, "1" online, "0" offline.
public struct RCOnlineStatusResponse: Codable, Hashable, Sendable {
    public var code = 200
    public var status: String
}

/// `/message/history.json`'s answer: the hourly log's URL (empty when there is none) and the hour asked for.
public struct RCHistoryLogResponse: Codable, Hashable, Sendable {
    public var code = 200
    public var url: String
    public var date: String
}

extension RongCloudSandboxStore {
    /// `/user/getToken.json` and `/user/refresh.json`: `name` ≤ 64 characters, `portraitUri` ≤ 1024 bytes
    /// (docs/adapters/rongcloud.md §6).
    static let maxNameLength = RCUserLimits.maxNameLength
    static let maxPortraitBytes = RCUserLimits.maxPortraitBytes

    /// 1002 for a `name` over 64 characters or a `portraitUri` over 1024 bytes (nil: not given).
    static func checkProfile(name: String?, portrait: String?) throws(RongCloudSandboxError) {
        if let name, name.count > maxNameLength { throw .parameter("name must be at most \(maxNameLength) characters") }
        if let portrait, portrait.utf8.count > maxPortraitBytes {
            throw .parameter("portraitUri must be at most \(maxPortraitBytes) bytes")
        }
    }

    /// `/user/info.json`: the registered user's name, portrait ("" when none) and registration time.
    /// An unknown user is 1002 `user not found` (the vendor's answer is UNCONFIRMED; docs/adapters/rongcloud.md §6).
    public func userInfo(_ form: FormBody) throws(RongCloudSandboxError) -> RCUserInfoResponse {
        let userId = try Self.required(form, "userId")
        guard let user = state.withLock({ $0.users[userId] }) else { throw .parameter("user not found: \(userId)") }
        return RCUserInfoResponse(userName: user.name, userPortrait: user.portrait ?? "",
                                  createTime: Self.beijingTime(user.createdAt ?? 0))
    }

    /// `/user/refresh.json`: replaces the name and/or portrait of a registered user; an absent or empty
    /// field is left as it was (the Go SDK always sends both fields, empty ones included).
    public func refreshUser(_ form: FormBody) throws(RongCloudSandboxError) {
        let userId = try Self.required(form, "userId")
        let name = form["name"].flatMap { $0.isEmpty ? nil : $0 }
        let portrait = form["portraitUri"].flatMap { $0.isEmpty ? nil : $0 }
        try Self.checkProfile(name: name, portrait: portrait)
        try mutate { (state: inout State) throws(RongCloudSandboxError) in
            guard var user = state.users[userId] else { throw .parameter("user not found: \(userId)") }
            if let name { user.name = name }
            if let portrait { user.portrait = portrait }
            state.users[userId] = user
        }
    }

    /// `/user/checkOnline.json`: no client ever connects to the sandbox, so every user is offline ("0").
    public func checkOnline(_ form: FormBody) throws(RongCloudSandboxError) -> RCOnlineStatusResponse {
        _ = try Self.required(form, "userId")
        return RCOnlineStatusResponse(status: "0")
    }

    /// `/message/history.json`: `date` is an hour `YYYYMMDDHH`; the sandbox writes no hourly log files, so
    /// the answer is the vendor's "no file" form, `url` "" (docs/adapters/rongcloud.md §6).
    public func historyLog(_ form: FormBody) throws(RongCloudSandboxError) -> RCHistoryLogResponse {
        let date = try Self.required(form, "date")
        guard date.utf8.count == 10, date.allSatisfy(\.isASCII), date.allSatisfy(\.isNumber),
              let month = Int(date.dropFirst(4).prefix(2)), (1...12).contains(month),
              let day = Int(date.dropFirst(6).prefix(2)), (1...31).contains(day),
              let hour = Int(date.suffix(2)), (0...23).contains(hour) else {
            throw .parameter("date must be an hour written YYYYMMDDHH")
        }
        return RCHistoryLogResponse(url: "", date: date)
    }

    /// `yyyy-MM-dd HH:mm:ss` in UTC+8.
    static func beijingTime(_ ms: Int64) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(secondsFromGMT: 8 * 3600)
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }
}
