import IMCore
@testable import NIM
import Testing

/// The pager against an in-memory NIM whose `excludeMsgid` drops only that one message (the stricter
/// reading of the vendor doc): paging must still neither skip nor repeat, at equal timestamps too.
@Suite struct HistoryPagerTests {
    static func entries(times: [Int64]) -> [NIMHistoryMessage] {
        times.enumerated().map { NIMHistoryMessage(from: "a", msgid: Int64(100 + $0.offset), sendtime: $0.element, type: 0, body: #"{"msg":"x"}"#) }
    }

    static func pager(_ all: [NIMHistoryMessage]) -> NIMHistoryPager {
        NIMHistoryPager(fetch: { begin, end, limit, ascending, exclude in
            let inWindow = all.filter { $0.sendtime >= begin && $0.sendtime <= end && $0.msgid != exclude }
                .sorted { ($0.sendtime, $0.msgid) < ($1.sendtime, $1.msgid) }
            return Array((ascending ? inWindow : inWindow.reversed()).prefix(limit))
        }, horizon: 10_000)
    }

    static let sameMillisecond: [Int64] = Array(repeating: 7, count: 23)
    static let runsOfFour: [Int64] = (0..<23).map { (n: Int) -> Int64 in Int64(1 + n / 4) }
    static let distinct: [Int64] = (0..<23).map { (n: Int) -> Int64 in Int64(n + 1) }

    @Test(arguments: [sameMillisecond, runsOfFour, distinct])
    func walksBothWaysWithoutGapsOrRepeats(times: [Int64]) async throws {
        let all = Self.entries(times: times)
        let pager = Self.pager(all)
        var page = try await pager.page(.latest, limit: 5)
        var backward = page.entries.map(\.msgid)
        while page.hasOlder, let first = page.entries.first {
            page = try await pager.page(.before(NIMHistoryKey(time: first.sendtime, msgid: first.msgid).cursor), limit: 5)
            backward = page.entries.map(\.msgid) + backward
        }
        #expect(backward == all.map(\.msgid))
        page = try await pager.page(.oldest, limit: 5)
        var forward = page.entries.map(\.msgid)
        while page.hasNewer, let last = page.entries.last {
            page = try await pager.page(.after(NIMHistoryKey(time: last.sendtime, msgid: last.msgid).cursor), limit: 5)
            forward += page.entries.map(\.msgid)
        }
        #expect(forward == all.map(\.msgid))
        let middle = all[11]
        let around = try await pager.page(.around(NIMHistoryKey(time: middle.sendtime, msgid: middle.msgid).cursor), limit: 5)
        #expect(around.entries.map(\.msgid) == Array(all[9...13]).map(\.msgid))
        #expect(around.hasOlder && around.hasNewer)
    }

    @Test func cursorsParseAndRefuseGarbage() async {
        #expect(NIMHistoryKey(HistoryCursor("1700000000000:42")) == NIMHistoryKey(time: 1_700_000_000_000, msgid: 42))
        #expect(NIMHistoryKey(HistoryCursor("42")) == nil)
        await #expect(throws: IMError.self) { _ = try await Self.pager([]).page(.before(HistoryCursor("x")), limit: 5) }
    }
}
