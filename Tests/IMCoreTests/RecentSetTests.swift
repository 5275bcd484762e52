import IMCore
import Testing

@Suite struct RecentSetTests {
    @Test func remembersOnlyTheLastCapacityInsertions() {
        var set = RecentSet<Int>(capacity: 3)
        #expect(set.insert(1) == (true, nil))
        #expect(set.insert(2) == (true, nil))
        #expect(set.insert(1) == (false, nil))
        #expect(set.insert(3) == (true, nil))
        #expect(set.insert(4) == (true, 1))
        #expect(!set.contains(1))
        #expect(set.contains(2) && set.contains(3) && set.contains(4))
        #expect(set.count == 3)
        #expect(set.insert(5) == (true, 2))
        #expect(set.insert(1) == (true, 3))
        #expect(Set([4, 5, 1].filter(set.contains)) == [4, 5, 1])
    }

    @Test func aRepeatDoesNotRefreshOrEvict() {
        var set = RecentSet<String>(capacity: 2)
        set.insert("a")
        set.insert("b")
        #expect(set.insert("a").inserted == false)
        #expect(set.insert("c").evicted == "a")
    }
}
