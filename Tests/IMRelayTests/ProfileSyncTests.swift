import Foundation
import IMBridgeApp
import IMCore
@_spi(Testing) import IMRelay
import IMStore
import IMTesting
import Synchronization
import Testing
import IMOutbox

/// A RongCloud-like target for profiles: its provisioning call overwrites name and avatar (as RongCloud's
/// token call does), profile writes are counted, and can be made to fail.
final class ProfileTarget: IMBackend, UserDirectory {
    let inner: MemoryBackend
    let saves = Mutex(0)
    /// The failure every `saveUser` throws while set.
    let saveFailure = Mutex<IMError?>(nil)
    init(_ inner: MemoryBackend) { self.inner = inner }
    var id: BackendID { inner.id }
    var capabilities: Capabilities { inner.capabilities }
    func events() -> AsyncStream<IMEvent> { inner.events() }
    func send(_ message: OutgoingMessage) async throws -> Message { try await inner.send(message) }
    func history(_ query: HistoryQuery) async throws -> HistoryPage { try await inner.history(query) }
    func ensureUser(_ profile: UserProfile) async throws { try await inner.saveUser(profile) }
    func users(_ ids: [UserID]) async throws -> [UserProfile] { try await inner.users(ids) }
    func saveUser(_ profile: UserProfile) async throws {
        if let failure = saveFailure.withLock({ $0 }) { throw failure }
        saves.withLock { $0 += 1 }
        try await inner.saveUser(profile)
    }
    func allUsers() async throws -> [UserID] { try await inner.allUsers() }
}

@Suite struct ProfileSyncTests {
    static let group = ConversationRef.group("g1")

    struct Rig {
        let harness: RelayHarness
        let target: ProfileTarget

        init() throws {
            var made: ProfileTarget?
            harness = try RelayHarness(rcWrapper: { memory in
                let target = ProfileTarget(memory)
                made = target
                return target
            })
            target = try #require(made)
        }

        func say(_ text: String, as user: UserID = "ann") async throws {
            _ = try await harness.wk.send(OutgoingMessage(conversation: ProfileSyncTests.group, sender: user, content: .text(text)))
        }

        func puppet(_ id: UserID = "wk_ann") async throws -> UserProfile? {
            try await harness.rcMemory.users([id]).first
        }

        func relayed() async throws -> [String] {
            try await harness.history(harness.rcMemory, "g1").compactMap { message -> String? in
                if case .text(let text) = message.currentContent { return text.text }
                return nil
            }
        }
    }

    @Test func aPuppetGetsItsSourceProfileAtFirstSightOnce() async throws {
        let rig = try Rig()
        try await rig.harness.wk.saveUser(UserProfile(id: "ann", name: "安娜", avatar: "https://cdn.example/ann.png"))
        let engine = rig.harness.engine()
        try await engine.start(feeding: [rig.harness.wk])
        try await rig.say("one")
        try await rig.say("two")
        #expect(try await eventually { try await rig.relayed() == ["one", "two"] })
        #expect(try await eventually { try await rig.puppet()?.name == "安娜" })
        #expect(try await rig.puppet()?.avatar == "https://cdn.example/ann.png")
        #expect(try await eventually { engine.metrics.value("imbridge_relayed_total", ["target": "rc", "action": "profile"]) == 1 })
        // The second message queued no second profile entry, and nothing was written twice.
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(engine.metrics.value("imbridge_relayed_total", ["target": "rc", "action": "profile"]) == 1)
        #expect(rig.target.saves.withLock { $0 } == 1)
        await engine.stop()
    }

    @Test func aChangedNameIsCarriedByTheNextRoundAndAnUnchangedOneIsNotWritten() async throws {
        let rig = try Rig()
        try await rig.harness.wk.saveUser(UserProfile(id: "ann", name: "安娜"))
        let engine = rig.harness.engine()
        try await engine.start(feeding: [rig.harness.wk])
        try await rig.say("hello")
        #expect(try await eventually { try await rig.puppet()?.name == "安娜" })
        #expect(try await eventually { engine.metrics.value("imbridge_relayed_total", ["target": "rc", "action": "profile"]) == 1 })

        // Unchanged: the round reads and compares, and writes nothing.
        #expect(try await engine.refreshProfiles() == 1)
        #expect(try await eventually { engine.metrics.value("imbridge_relayed_total", ["target": "rc", "action": "profile"]) == 2 })
        #expect(rig.target.saves.withLock { $0 } == 1)
        // No sender was active since: the next round queues nothing.
        #expect(try await engine.refreshProfiles() == 0)

        try await rig.harness.wk.saveUser(UserProfile(id: "ann", name: "Anna Li", avatar: "https://cdn.example/new.png"))
        try await rig.say("again")
        #expect(try await eventually { try await rig.relayed() == ["hello", "again"] })
        #expect(try await engine.refreshProfiles() == 1)
        #expect(try await eventually { try await rig.puppet()?.name == "Anna Li" })
        #expect(try await rig.puppet()?.avatar == "https://cdn.example/new.png")
        #expect(rig.target.saves.withLock { $0 } == 2)
        await engine.stop()
    }

    @Test func aFailingProfileWriteNeverHoldsAMessageBack() async throws {
        let rig = try Rig()
        try await rig.harness.wk.saveUser(UserProfile(id: "ann", name: "安娜"))
        rig.target.saveFailure.withLock { $0 = IMError(.unavailable, "profile service down", isRetryable: true) }
        let engine = rig.harness.engine()
        try await engine.start(feeding: [rig.harness.wk])
        for n in 1...5 { try await rig.say("m\(n)") }
        #expect(try await eventually { try await rig.relayed() == ["m1", "m2", "m3", "m4", "m5"] })
        // The profile entry waits in its own lane, retrying; once the target takes it the name shows.
        // (A send the target took is marked done a moment after it shows there.)
        let pendingEntries = { try rig.harness.store.read { try $0.entries(ids: Array(1...20)) }.filter { $0.state == .pending } }
        let onlyProfile = try await eventually(30) { try pendingEntries().map(\.kind) == ["profile"] }
        let pending = try pendingEntries()
        #expect(onlyProfile, "\(pending.map { "\($0.kind) \($0.lane) \($0.lastError ?? "")" })")
        #expect(try await rig.puppet()?.name != "安娜")
        rig.target.saveFailure.withLock { $0 = nil }
        #expect(try await eventually { try await rig.puppet()?.name == "安娜" })
        #expect(try rig.harness.store.read { try $0.count(state: .dead) } == 0)
        await engine.stop()
    }

    @Test func aPermanentlyRefusedProfileIsADeadLetterAndMessagesFlow() async throws {
        let rig = try Rig()
        try await rig.harness.wk.saveUser(UserProfile(id: "ann", name: String(repeating: "x", count: 300)))
        rig.target.saveFailure.withLock { $0 = IMError(.invalidArgument, "name longer than 64 characters", isRetryable: false) }
        let engine = rig.harness.engine()
        try await engine.start(feeding: [rig.harness.wk])
        try await rig.say("first")
        try await rig.say("second")
        #expect(try await eventually { try await rig.relayed() == ["first", "second"] })
        #expect(try await eventually { try rig.harness.store.read { try $0.count(state: .dead) } == 1 })
        await engine.stop()
    }

    /// After a restart the target is provisioned again (a fresh `Delivery`): with the profile the bridge
    /// wrote, not the bare id that would reset the name on a RongCloud-like target.
    @Test func provisioningAfterARestartKeepsTheWrittenProfile() async throws {
        let rig = try Rig()
        try await rig.harness.wk.saveUser(UserProfile(id: "ann", name: "安娜", avatar: "https://cdn.example/ann.png"))
        let first = rig.harness.engine()
        try await first.start(feeding: [rig.harness.wk])
        try await rig.say("before")
        #expect(try await eventually { try await rig.puppet()?.name == "安娜" })
        #expect(try await eventually { try rig.harness.store.read { try $0.count(state: .pending) } == 0 })
        await first.stop()

        let second = rig.harness.engine()
        try await second.start(feeding: [rig.harness.wk])
        try await rig.say("after")
        #expect(try await eventually { try await rig.relayed() == ["before", "after"] })
        #expect(try await rig.puppet() == UserProfile(id: "wk_ann", name: "安娜", avatar: "https://cdn.example/ann.png"))
        // First sight is remembered in the store: the restart queued no second profile entry.
        #expect(second.metrics.value("imbridge_relayed_total", ["target": "rc", "action": "profile"]) == 0)
        await second.stop()
    }

    @Test func aRelayAccountRouteQueuesNoProfiles() async throws {
        let routes = [Route(from: try RouteEndpoint(parsing: "wk:group:*"), to: try RouteEndpoint(parsing: "rc:group:*"),
                            usersOnTarget: .relay(account: "bridge", nameFormat: "{user}: "))]
        let harness = try RelayHarness(routes: routes)
        try await harness.wk.saveUser(UserProfile(id: "ann", name: "安娜"))
        let message = Message(id: "m1", conversation: Self.group, sender: "ann", sentAt: 1, content: .text("hi"))
        let result = try harness.engine().ingest([IMEvent(eventID: "e1", backend: "wk", kind: .message(message))])
        #expect(result.queued == 1 && result.profilesQueued == 0)
    }

    @Test func settingsParse() throws {
        func parsed(_ block: String) throws -> ProfileSettings {
            let yaml = BridgeConfigTests.valid + "\n" + block
            return try BridgeConfig.parse(yaml, environment: ["WK_TOKEN": "t", "RC_SECRET": "s"]).profiles
        }
        #expect(try parsed("").refreshMs == 3_600_000)
        #expect(try parsed("profiles:\n  refresh_minutes: 0.5").refreshMs == 30_000)
        #expect(try parsed("profiles:\n  refresh_minutes: 0").refreshMs == nil)
        for bad in ["-1", "ten", "20000", "0.001"] {
            let error = #expect(throws: IMError.self) { try parsed("profiles:\n  refresh_minutes: \(bad)") }
            #expect(error?.message.contains("refresh_minutes") == true, "\(bad): \(error?.message ?? "")")
        }
        #expect(throws: IMError.self) { try parsed("profiles:\n  refresh_seconds: 5") }
    }
}
