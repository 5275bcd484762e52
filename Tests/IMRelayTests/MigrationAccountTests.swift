import Foundation
import IMCore
import IMRelay
import IMStore
import IMTesting
import Synchronization
import Testing
import IMMigration
import IMOutbox

/// Whole-account migration in memory: users, then groups, then history (docs/migration.md).
@Suite struct MigrationAccountTests {
    /// A WuKong-rules account: 10 users with names and avatars, 3 groups with owners and members, two direct
    /// conversations and every group's history. Its directory lists users and a user's groups (WuKong's
    /// adapter lists neither; `aSourceThatCannotListIsToldAndDiscoversThroughWhatItCan` covers that):
    /// what these tests follow is the whole account once listed.
    struct Account {
        static let listing: Capabilities = { var caps = Capabilities.wukong; caps.directory = .all; return caps }()
        let wk = MemoryBackend(id: "wk", capabilities: listing, clock: SystemClock())
        let users = (1...10).map { UserID("user\($0)") }
        var groups: [GroupID] = ["team", "family", "club"]
        var directs: [ConversationRef] { [.direct(users[0], users[1]), .direct(users[2], users[3])] }

        func fill() async throws {
            for (n, user) in users.enumerated() {
                try await wk.saveUser(UserProfile(id: user, name: "User \(n + 1) 用户", avatar: "https://img.example/\(user).png",
                                                  extra: ["sign": .string("hi \(n)")]))
            }
            for (n, group) in groups.enumerated() {
                // Groups that exist on the source under their ids (WuKong's business server assigns ids to new ones).
                wk.world.seedGroup(GroupProfile(id: group, name: "Group \(group)", avatar: "https://img.example/\(group).png",
                                                owner: users[n], members: Array(users[n..<(n + 4)]), announcement: "rules of \(group)"))
                for m in 1...6 {
                    _ = try await wk.send(OutgoingMessage(conversation: .group(group), sender: users[n + m % 4], content: .text("\(group) \(m)")))
                }
            }
            for direct in directs {
                for m in 1...5 {
                    _ = try await wk.send(OutgoingMessage(conversation: direct, sender: direct.participants[m % 2], content: .text("\(direct.id) \(m)")))
                }
            }
        }

        func scope() async throws -> AccountScope {
            try await AccountScope.discover(wk, given: AccountScope(), everything: true)
        }
    }

    func store() throws -> BridgeStore {
        try BridgeStore(path: FileManager.default.temporaryDirectory.appendingPathComponent("acct-\(UUID().uuidString).sqlite").path)
    }

    func plan(_ scope: AccountScope, target: BackendID, users: UserMode? = nil, parallel: Int = 4) -> MigrationPlan {
        let mode = users ?? .puppet(prefix: "")
        return MigrationPlan(source: "wk", target: target,
                             conversations: scope.conversations.map { ($0, MigrationPlan.targetConversation(for: $0, users: mode)) },
                             users: mode, pageSize: 4, extraUsers: scope.users, extraGroups: scope.groups, parallel: parallel)
    }

    func texts(_ backend: any IMBackend, _ conversation: ConversationRef) async throws -> [String] {
        try await backend.history(HistoryQuery(conversation: conversation, anchor: .oldest, limit: 1000)).messages.map { $0.content.digest }
    }

    /// The target group a source group was migrated to, from the store's group map.
    func mappedGroup(_ store: BridgeStore, _ group: GroupID, to target: BackendID) throws -> GroupID? {
        try store.read { try $0.checkpoint(PortalMap.key(source: "wk", conversation: .group(group), target: target)) }.map { GroupID($0) }
    }

    @Test(arguments: [("rc", Capabilities.rongCloud), ("nim", .nim), ("jm", .jMessage)] as [(BackendID, Capabilities)])
    func anAccountMovesUsersGroupsMembersAndHistory(target name: BackendID, capabilities: Capabilities) async throws {
        let account = Account()
        try await account.fill()
        let target = MemoryBackend(id: name, capabilities: capabilities, clock: SystemClock())
        let store = try store()
        let report = try await Migrator(store: store, source: account.wk, target: target, sendsPerSecond: 100_000)
            .run(plan(try await account.scope(), target: name))

        #expect(report.account?.usersCreated == 10 && report.account?.usersUpdated == 0, "\(report.summary)")
        #expect(report.account?.groupsCreated == 3 && report.account?.failures == [], "\(report.summary)")
        #expect(report.total.failedTotal == 0 && report.total.sentTotal == 3 * 6 + 2 * 5, "\(report.summary)")
        for user in account.users {
            let want = try await account.wk.users([user]).first
            #expect(try await target.users([user]).first == want, "user \(user) record by record")
        }
        #expect(try await target.allGroups().count == 3, "exactly three groups")
        for group in account.groups {
            let want = try #require(try await account.wk.group(group))
            let targetID = try #require(try mappedGroup(store, group, to: name), "group \(group) mapped in the store")
            if ["nim", "jm"].contains(name.rawValue) { #expect(targetID != group, "\(name) gives groups ids of its own") }
            let got = try #require(try await target.group(targetID))
            #expect(got.name == want.name && got.avatar == want.avatar && got.announcement == want.announcement)
            #expect(got.owner == want.owner && got.members == want.members, "owner and members of \(group)")
            #expect(try await texts(target, .group(targetID)) == texts(account.wk, .group(group)), "history of \(group) in its group")
        }
        for direct in account.directs {
            #expect(try await texts(target, direct) == texts(account.wk, direct))
        }
    }

    @Test func aRerunDoublesNothingUpdatesChangesAndAddsMissingMembers() async throws {
        let account = Account()
        try await account.fill()
        let nim = MemoryBackend(id: "nim", capabilities: .nim, clock: SystemClock())
        let store = try store()
        _ = try await Migrator(store: store, source: account.wk, target: nim, sendsPerSecond: 100_000).run(plan(try await account.scope(), target: "nim"))

        try await account.wk.saveUser(UserProfile(id: account.users[0], name: "Renamed", avatar: "https://img.example/new.png"))
        try await account.wk.updateGroup(GroupProfile(id: "club", members: [account.users[9]]))
        _ = try await account.wk.send(OutgoingMessage(conversation: .group("club"), sender: account.users[9], content: .text("club new")))
        let again = try await Migrator(store: store, source: account.wk, target: nim, sendsPerSecond: 100_000)
            .run(plan(try await account.scope(), target: "nim"))

        let counts = try #require(again.account)
        #expect(counts.usersCreated == 0 && counts.usersUpdated == 1 && counts.usersSkipped == 9, "\(again.summary)")
        #expect(counts.groupsCreated == 0 && counts.groupsUpdated == 1 && counts.groupsSkipped == 2 && counts.membersAdded == 1, "\(again.summary)")
        #expect(again.total.sentTotal == 1 && again.total.failedTotal == 0, "only the new message: \(again.summary)")
        #expect(nim.world.allMessages.count == 29)
        let (groupCount, userCount) = (try await nim.allGroups().count, nim.world.allUsers().count)
        #expect(groupCount == 3 && userCount == 10, "no group or user twice")
        #expect(try await nim.users([account.users[0]]).first?.name == "Renamed")
        let club = try #require(try mappedGroup(store, "club", to: "nim"))
        #expect(try await nim.group(club)?.members.contains(account.users[9]) == true)
        #expect(try await texts(nim, .group(club)).last == "club new")
    }

    /// A direct conversation with no options copies every message, because users
    /// keep their ids (before, senders became `wk_a` while the conversation stayed `a,b`: all refused).
    @Test func withNoOptionsADirectConversationCopiesEveryMessage() async throws {
        let wk = MemoryBackend(id: "wk", capabilities: .wukong, clock: SystemClock())
        let ab = ConversationRef.direct("a", "b")
        for n in 1...500 { _ = try await wk.send(OutgoingMessage(conversation: ab, sender: n.isMultiple(of: 2) ? "a" : "b", content: .text("m\(n)"))) }
        let nim = MemoryBackend(id: "nim", capabilities: .nim, clock: SystemClock())
        let report = try await Migrator(store: try store(), source: wk, target: nim, sendsPerSecond: 100_000)
            .run(MigrationPlan(source: "wk", target: "nim", conversations: [(ab, MigrationPlan.targetConversation(for: ab, users: .puppet(prefix: "")))]))
        #expect(report.total.copied == 500 && report.total.failedTotal == 0, "\(report.summary)")
        #expect(try await texts(nim, ab) == texts(wk, ab))
    }

    @Test func withAPrefixDirectConversationsGoToThePuppetsPairAndGroupsHavePuppetMembers() async throws {
        let account = Account()
        try await account.fill()
        let rc = MemoryBackend(id: "rc", capabilities: .rongCloud, clock: SystemClock())
        let mode = UserMode.puppet(prefix: "wk_")
        #expect(MigrationPlan.targetConversation(for: .direct("a", "b"), users: mode) == .direct("wk_a", "wk_b"))
        let report = try await Migrator(store: try store(), source: account.wk, target: rc, sendsPerSecond: 100_000)
            .run(plan(try await account.scope(), target: "rc", users: mode))
        #expect(report.total.failedTotal == 0 && report.total.sentTotal == 28, "\(report.summary)")
        let direct = account.directs[0]
        let puppets = ConversationRef.direct(UserID("wk_\(direct.participants[0])"), UserID("wk_\(direct.participants[1])"))
        let copies = try await rc.history(HistoryQuery(conversation: puppets, anchor: .oldest, limit: 100)).messages
        #expect(copies.count == 5 && copies.allSatisfy { $0.sender.rawValue.hasPrefix("wk_") })
        #expect(try await rc.group("team")?.members == account.users[0..<4].map { UserID("wk_\($0)") })
        #expect(try await rc.users([UserID("wk_user1")]).first?.name == "User 1 用户")
        #expect(try await rc.users([account.users[0]]).isEmpty, "no unprefixed user")
    }

    /// A target that answers slowly and counts the sends in flight: lanes overlap up to `parallel`, and
    /// each conversation keeps its order.
    @Test func conversationsRunInParallelLanesInOrderInsideEach() async throws {
        let wk = MemoryBackend(id: "wk", capabilities: .wukong, clock: SystemClock())
        let conversations = (1...6).map { ConversationRef.direct(UserID("a\($0)"), UserID("b\($0)")) }
        for conversation in conversations {
            for n in 1...15 { _ = try await wk.send(OutgoingMessage(conversation: conversation, sender: conversation.participants[n % 2], content: .text("\(n)"))) }
        }
        let inner = MemoryBackend(id: "rc", capabilities: .rongCloud, clock: SystemClock())
        let slow = SlowBackend(inner)
        let report = try await Migrator(store: try store(), source: wk, target: slow, sendsPerSecond: 100_000)
            .run(MigrationPlan(source: "wk", target: "rc", conversations: conversations.map { ($0, $0) }, pageSize: 4, parallel: 3))
        #expect(report.total.sentTotal == 90 && report.conversations.map(\.source) == conversations.map { "wk:\($0)" })
        let most = slow.inFlight.withLock { $0.most }
        #expect(most >= 2 && most <= 3, "lanes overlap, at most 3 at once: \(most)")
        for conversation in conversations {
            #expect(try await texts(inner, conversation) == (1...15).map { "\($0)" })
        }
    }

    /// The target created the group but the answer was lost (the process died, or a timeout after the
    /// commit): the rerun finds the group among the owner's by name instead of creating a second one.
    @Test func aGroupCreatedButNotRecordedIsFoundNotCreatedAgain() async throws {
        var account = Account()
        account.groups = ["team"]
        try await account.fill()
        let inner = MemoryBackend(id: "nim", capabilities: .nim, clock: SystemClock())
        let lossy = LostAnswerBackend(inner)
        let store = try store()
        let scope = AccountScope(users: account.users, groups: ["team"], conversations: [.group("team")])
        let first = try await Migrator(store: store, source: account.wk, target: lossy, sendsPerSecond: 100_000)
            .run(plan(scope, target: "nim"))
        #expect(first.account?.failures.count == 1, "the lost answer is reported: \(first.summary)")
        let dead = try store.read { try $0.deadLetters() }
        // (In the portal's lane: the lane live relay sets the same group up in, one after the other.)
        #expect(dead.map(\.kind) == ["group"] && dead.first?.lane == PortalMap.lane(target: "nim", source: "wk", group: "team"),
                "the group's creation was an outbox entry, a dead letter now: \(dead.map(\.lane))")
        #expect(first.total.failed["group_missing"] == 1, "its history waits for the group: \(first.summary)")
        let kept = try await inner.allGroups()
        #expect(kept.count == 1 && inner.world.allMessages.isEmpty, "the vendor kept the group, no history elsewhere")
        let second = try await Migrator(store: store, source: account.wk, target: lossy, sendsPerSecond: 100_000)
            .run(plan(scope, target: "nim"))
        #expect(second.account?.groupsCreated == 0 && second.account?.failures == [], "\(second.summary)")
        #expect(try await inner.allGroups().count == 1, "not created twice")
        let team = try #require(try mappedGroup(store, "team", to: "nim"))
        #expect(try await texts(inner, .group(team)) == texts(account.wk, .group("team")))
    }

    /// The same with a retryable failure: the group's entry is tried again in its lane, finds the group
    /// its first attempt created (the pending mark), and the run ends with one group and its history.
    @Test func aLostCreationAnswerThatIsRetriedFindsItsGroupInTheSameRun() async throws {
        var account = Account()
        account.groups = ["team"]
        try await account.fill()
        let inner = MemoryBackend(id: "nim", capabilities: .nim, clock: SystemClock())
        let lossy = LostAnswerBackend(inner, failure: IMError(.timeout, "no answer", isRetryable: true))
        let store = try store()
        let scope = AccountScope(users: account.users, groups: ["team"], conversations: [.group("team")])
        let fast = RetryPolicy(baseMs: 10, maxMs: 20)
        let report = try await Migrator(store: store, source: account.wk, target: lossy, retry: fast, sendsPerSecond: 100_000)
            .run(plan(scope, target: "nim"))
        let groups = report.account.map { $0.groupsCreated + $0.groupsUpdated + $0.groupsSkipped }
        #expect(report.account?.failures == [] && groups == 1, "\(report.summary)")
        #expect(try await inner.allGroups().count == 1, "one group")
        let team = try #require(try mappedGroup(store, "team", to: "nim"))
        #expect(try await texts(inner, .group(team)) == texts(account.wk, .group("team")))
    }

    /// A source that can list neither users nor groups (WuKongIM): the scope says so, takes the account
    /// file's users, finds their groups and conversations through what the source can list.
    @Test func aSourceThatCannotListIsToldAndDiscoversThroughWhatItCan() async throws {
        let account = Account()
        try await account.fill()
        let unlisting = UnlistingBackend(account.wk)
        let given = try AccountScope.parse("users: [user1]\n", file: "account.yaml")
        let scope = try await AccountScope.discover(unlisting, given: given, everything: true)
        #expect(scope.notes.contains { $0.contains("cannot list its users") }, "\(scope.notes)")
        #expect(scope.notes.contains { $0.contains("cannot list its groups") }, "\(scope.notes)")
        #expect(Set(scope.groups) == ["team"], "user1's groups")
        #expect(Set(scope.conversations) == [.group("team"), account.directs[0]], "\(scope.conversations)")
        #expect(throws: IMError.self) { try AccountScope.parse("user: [a]\n", file: "account.yaml") }
        #expect(throws: IMError.self) { try AccountScope.parse("conversations: [\"nonsense\"]\n", file: "account.yaml") }
    }

    /// Pacing follows the limit of the API a single send uses: NIM's batch API (120/min) does not slow
    /// single sends (100/s); RongCloud's group publish (20/s) does not slow direct conversations (100/s).
    @Test func eachSendIsPacedByTheLimitOfItsOwnAPI() {
        #expect(RateLimiter.sendRate(of: .nim, for: .direct) == 100)
        #expect(RateLimiter.sendRate(of: .rongCloud, for: .direct) == 100)
        #expect(RateLimiter.sendRate(of: .rongCloud, for: .group) == 20)
        #expect(RateLimiter.sendRate(of: .jMessage, for: .group) == 10)
        #expect(RateLimiter.sendRate(of: .wukong, for: .group) == nil)
    }

    @Test func aDryRunCountsTheAccountAndWritesNothing() async throws {
        let account = Account()
        try await account.fill()
        let rc = MemoryBackend(id: "rc", capabilities: .rongCloud, clock: SystemClock())
        var dry = plan(try await account.scope(), target: "rc")
        dry.dryRun = true
        let report = try await Migrator(store: try store(), source: account.wk, target: rc, sendsPerSecond: 100_000).run(dry)
        #expect(report.account?.usersCreated == 10 && report.account?.groupsCreated == 3, "\(report.summary)")
        let (users, groups) = (rc.world.allUsers(), try await rc.allGroups())
        #expect(users.isEmpty && groups.isEmpty && rc.world.allMessages.isEmpty)
        #expect(report.summary.contains("users: created 10"))
    }
}

/// Forwards to a memory backend with a pause in every send, counting the sends in flight.
final class SlowBackend: IMBackend, UserDirectory, GroupDirectory {
    let inner: MemoryBackend
    let inFlight = Mutex((now: 0, most: 0))
    init(_ inner: MemoryBackend) { self.inner = inner }
    var id: BackendID { inner.id }
    var capabilities: Capabilities { inner.capabilities }
    func send(_ message: OutgoingMessage) async throws -> Message {
        inFlight.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
        defer { inFlight.withLock { $0.now -= 1 } }
        try await Task.sleep(nanoseconds: 3_000_000)
        return try await inner.send(message)
    }
    func events() -> AsyncStream<IMEvent> { inner.events() }
    func history(_ query: HistoryQuery) async throws -> HistoryPage { try await inner.history(query) }
    func ensureUser(_ profile: UserProfile) async throws { try await inner.ensureUser(profile) }
    func users(_ ids: [UserID]) async throws -> [UserProfile] { try await inner.users(ids) }
    func saveUser(_ profile: UserProfile) async throws { try await inner.saveUser(profile) }
    func allUsers() async throws -> [UserID] { try await inner.allUsers() }
    func group(_ id: GroupID) async throws -> GroupProfile? { try await inner.group(id) }
    func createGroup(_ profile: GroupProfile) async throws -> GroupID { try await inner.createGroup(profile) }
    func updateGroup(_ profile: GroupProfile) async throws { try await inner.updateGroup(profile) }
    func allGroups() async throws -> [GroupID] { try await inner.allGroups() }
    func groups(of user: UserID) async throws -> [GroupID] { try await inner.groups(of: user) }
}

/// Creates the first group on the memory backend and then reports a failure that is not retried, as a
/// process killed after the vendor's commit would leave it.
final class LostAnswerBackend: IMBackend, UserDirectory, GroupDirectory {
    let inner: MemoryBackend
    let lose = Mutex(1)
    let failure: IMError
    init(_ inner: MemoryBackend, failure: IMError = IMError(.invalidArgument, "connection reset after commit", vendorCode: "reset")) {
        (self.inner, self.failure) = (inner, failure)
    }
    var id: BackendID { inner.id }
    var capabilities: Capabilities { inner.capabilities }
    func send(_ message: OutgoingMessage) async throws -> Message { try await inner.send(message) }
    func events() -> AsyncStream<IMEvent> { inner.events() }
    func history(_ query: HistoryQuery) async throws -> HistoryPage { try await inner.history(query) }
    func ensureUser(_ profile: UserProfile) async throws { try await inner.ensureUser(profile) }
    func users(_ ids: [UserID]) async throws -> [UserProfile] { try await inner.users(ids) }
    func saveUser(_ profile: UserProfile) async throws { try await inner.saveUser(profile) }
    func allUsers() async throws -> [UserID] { try await inner.allUsers() }
    func group(_ id: GroupID) async throws -> GroupProfile? { try await inner.group(id) }
    func createGroup(_ profile: GroupProfile) async throws -> GroupID {
        let id = try await inner.createGroup(profile)
        if lose.withLock({ left in defer { left = max(0, left - 1) }; return left > 0 }) { throw failure }
        return id
    }
    func updateGroup(_ profile: GroupProfile) async throws { try await inner.updateGroup(profile) }
    func allGroups() async throws -> [GroupID] { try await inner.allGroups() }
    func groups(of user: UserID) async throws -> [GroupID] { try await inner.groups(of: user) }
}

/// A memory backend that, like WuKongIM's server API, cannot list users, groups or every conversation,
/// but knows a user's groups and conversation list.
final class UnlistingBackend: MemoryWrapping, UserDirectory, GroupDirectory, ConversationListing {
    let inner: MemoryBackend
    init(_ inner: MemoryBackend) { self.inner = inner }
    func ensureUser(_ profile: UserProfile) async throws { try await inner.ensureUser(profile) }
    func users(_ ids: [UserID]) async throws -> [UserProfile] { try await inner.users(ids) }
    func saveUser(_ profile: UserProfile) async throws { try await inner.saveUser(profile) }
    func allUsers() async throws -> [UserID] { throw IMError(.unsupported, "no user list") }
    func group(_ id: GroupID) async throws -> GroupProfile? { try await inner.group(id) }
    func createGroup(_ profile: GroupProfile) async throws -> GroupID { try await inner.createGroup(profile) }
    func updateGroup(_ profile: GroupProfile) async throws { try await inner.updateGroup(profile) }
    func allGroups() async throws -> [GroupID] { throw IMError(.unsupported, "no channel list") }
    func groups(of user: UserID) async throws -> [GroupID] { try await inner.groups(of: user) }
    func conversations(for user: UserID) async throws -> [ConversationSummary] {
        inner.world.allMessages.filter { $0.conversation.kind == .direct && $0.conversation.participants.contains(user) }
            .map { ConversationSummary(conversation: $0.conversation, lastMessage: nil, unreadCount: 0, isMuted: false, updatedAt: 0) }
    }
    func unreadCount(in conversation: ConversationRef, for user: UserID) async throws -> Int { 0 }
    func totalUnread(for user: UserID) async throws -> Int { 0 }
    func setMuted(_ muted: Bool, conversation: ConversationRef, for user: UserID) async throws {}
}
