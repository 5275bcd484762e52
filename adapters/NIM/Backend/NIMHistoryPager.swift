import IMCore

/// A position in NIM history: send time (ms) and msgid. The cursor text is `"<ms>:<msgid>"`.
public struct NIMHistoryKey: Hashable, Sendable, Comparable {
    public var time: Int64
    public var msgid: Int64

    public init(time: Int64, msgid: Int64) {
        self.time = time
        self.msgid = msgid
    }

    public init?(_ cursor: HistoryCursor) {
        let parts = cursor.rawValue.split(separator: ":")
        guard parts.count == 2, let time = Int64(parts[0]), let msgid = Int64(parts[1]) else { return nil }
        self.init(time: time, msgid: msgid)
    }

    public var cursor: HistoryCursor { HistoryCursor("\(time):\(msgid)") }

    public static func < (a: Self, b: Self) -> Bool { (a.time, a.msgid) < (b.time, b.msgid) }
}

/// The WuKongIM SDK guide's paging anchors over NIM's time-window history API.
///
/// NIM has no cursor: a call names a time window (inclusive bounds), a direction, a limit ≤ 100 and one
/// `excludeMsgid`. Messages sharing a millisecond make a time bound ambiguous, so the pager orders by
/// (time, msgid), asks again from the last key it got (excluding that msgid) and drops everything not
/// strictly beyond the anchor or already seen. UNCONFIRMED: that NIM orders equal times by msgid;
/// more than 100 messages in one millisecond end a walk early.
struct NIMHistoryPager: Sendable {
    typealias Fetch = @Sendable (_ begin: Int64, _ end: Int64, _ limit: Int, _ ascending: Bool, _ exclude: Int64?) async throws
        -> [NIMHistoryMessage]

    let fetch: Fetch
    /// The latest time any query may name (now plus slack).
    let horizon: Int64

    static let batch = 100

    /// Up to `count` entries strictly older than `key` (nil: from the newest), newest first.
    func older(than key: NIMHistoryKey?, count: Int) async throws -> [NIMHistoryMessage] {
        var result: [NIMHistoryMessage] = [], seen: Set<Int64> = []
        var bound = key ?? NIMHistoryKey(time: horizon, msgid: .max)
        var exclude = key?.msgid
        while result.count < count, bound.time > 0 {
            let got = try await fetch(0, bound.time, Self.batch, false, exclude)
            let fresh = got.filter { NIMHistoryKey(time: $0.sendtime, msgid: $0.msgid) < bound && !seen.contains($0.msgid) }
                .sorted { NIMHistoryKey(time: $0.sendtime, msgid: $0.msgid) > NIMHistoryKey(time: $1.sendtime, msgid: $1.msgid) }
            for entry in fresh.prefix(count - result.count) { result.append(entry); seen.insert(entry.msgid) }
            guard got.count == Self.batch, let last = fresh.last else { break }
            bound = NIMHistoryKey(time: last.sendtime, msgid: last.msgid)
            exclude = last.msgid
        }
        return result
    }

    /// Up to `count` entries strictly newer than `key` (nil: from the oldest), oldest first.
    func newer(than key: NIMHistoryKey?, count: Int) async throws -> [NIMHistoryMessage] {
        var result: [NIMHistoryMessage] = [], seen: Set<Int64> = []
        var bound = key ?? NIMHistoryKey(time: 0, msgid: .min)
        var exclude = key?.msgid
        while result.count < count {
            let got = try await fetch(bound.time, max(horizon, bound.time + 1), Self.batch, true, exclude)
            let fresh = got.filter { NIMHistoryKey(time: $0.sendtime, msgid: $0.msgid) > bound && !seen.contains($0.msgid) }
                .sorted { NIMHistoryKey(time: $0.sendtime, msgid: $0.msgid) < NIMHistoryKey(time: $1.sendtime, msgid: $1.msgid) }
            for entry in fresh.prefix(count - result.count) { result.append(entry); seen.insert(entry.msgid) }
            guard got.count == Self.batch, let last = fresh.last else { break }
            bound = NIMHistoryKey(time: last.sendtime, msgid: last.msgid)
            exclude = last.msgid
        }
        return result
    }

    /// One page, oldest → newest, with `hasOlder`/`hasNewer` known by asking for one more entry.
    func page(_ anchor: HistoryAnchor, limit: Int) async throws -> (entries: [NIMHistoryMessage], hasOlder: Bool, hasNewer: Bool) {
        func key(_ cursor: HistoryCursor) throws -> NIMHistoryKey {
            guard let key = NIMHistoryKey(cursor) else {
                throw Capabilities.nim.history.refusal(cursor)
            }
            return key
        }
        switch anchor {
        case .latest:
            let got = try await older(than: nil, count: limit + 1)
            return (Array(got.prefix(limit).reversed()), got.count > limit, false)
        case .before(let cursor):
            let got = try await older(than: try key(cursor), count: limit + 1)
            return (Array(got.prefix(limit).reversed()), got.count > limit, true)
        case .oldest:
            let got = try await newer(than: nil, count: limit + 1)
            return (Array(got.prefix(limit)), false, got.count > limit)
        case .after(let cursor):
            let got = try await newer(than: try key(cursor), count: limit + 1)
            return (Array(got.prefix(limit)), true, got.count > limit)
        case .around(let cursor):
            let center = try key(cursor)
            let before = try await older(than: center, count: limit)
            let from = try await newer(than: NIMHistoryKey(time: center.time, msgid: center.msgid - 1), count: limit)
            let all = Array(before.reversed()) + from
            var lower = max(0, before.count - (limit - 1) / 2)
            let upper = min(all.count, lower + limit)
            lower = max(0, upper - limit)
            return (Array(all[lower..<upper]), lower > 0 || before.count == limit, upper < all.count || from.count == limit)
        }
    }
}
