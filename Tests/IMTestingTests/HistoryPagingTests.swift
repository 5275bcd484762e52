import IMCore
import IMTesting
import Testing

/// The WuKongIM SDK guide's paging examples on a conversation of 200 messages (seq 1…200).
@Suite struct HistoryPagingTests {
    static func filled() async throws -> MemoryBackend {
        let im = MemoryBackend(id: "mem", capabilities: .wukong, clock: TestClock())
        for n in 1...200 {
            _ = try await im.send(OutgoingMessage(conversation: .group("g"), sender: "a", content: .text("\(n)")))
        }
        return im
    }

    func seqs(_ im: MemoryBackend, _ anchor: HistoryAnchor, limit: Int = 10) async throws -> [Int64] {
        try await im.history(HistoryQuery(conversation: .group("g"), anchor: anchor, limit: limit)).messages.compactMap(\.seq)
    }

    @Test func seedExamples() async throws {
        let im = try await Self.filled()
        #expect(try await seqs(im, .before(HistoryCursor(seq: 100))) == Array(90...99))
        #expect(try await seqs(im, .after(HistoryCursor(seq: 100))) == Array(101...110))
        #expect(try await seqs(im, .around(HistoryCursor(seq: 20))) == Array(16...25))
        #expect(try await seqs(im, .latest) == Array(191...200))
        #expect(try await seqs(im, .oldest) == Array(1...10))
    }

    @Test func edges() async throws {
        let im = try await Self.filled()
        #expect(try await seqs(im, .before(HistoryCursor(seq: 5))) == [1, 2, 3, 4])
        #expect(try await seqs(im, .before(HistoryCursor(seq: 1))) == [])
        #expect(try await seqs(im, .after(HistoryCursor(seq: 195))) == Array(196...200))
        #expect(try await seqs(im, .after(HistoryCursor(seq: 200))) == [])
        #expect(try await seqs(im, .around(HistoryCursor(seq: 2))) == Array(1...10), "short side is filled from the other")
        #expect(try await seqs(im, .around(HistoryCursor(seq: 199))) == Array(191...200))
        let page = try await im.history(HistoryQuery(conversation: .group("g"), anchor: .latest, limit: 10))
        #expect(page.hasOlder && !page.hasNewer && page.olderCursor == HistoryCursor(seq: 191))
        let empty = try await im.history(HistoryQuery(conversation: .group("none"), anchor: .latest, limit: 10))
        #expect(empty.messages.isEmpty && !empty.hasOlder && empty.olderCursor == nil)
        await #expect(throws: IMError.self) { _ = try await im.history(HistoryQuery(conversation: .group("g"), limit: 0)) }
    }

    @Test func walkingBackwardsVisitsEverythingOnce() async throws {
        let im = try await Self.filled()
        var seen: [Int64] = []
        var anchor = HistoryAnchor.latest
        while true {
            let page = try await im.history(HistoryQuery(conversation: .group("g"), anchor: anchor, limit: 30))
            seen.insert(contentsOf: page.messages.compactMap(\.seq), at: 0)
            guard page.hasOlder, let cursor = page.olderCursor else { break }
            anchor = .before(cursor)
        }
        #expect(seen == Array(1...200))
    }
}
