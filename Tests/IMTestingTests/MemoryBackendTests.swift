import Foundation
import IMCore
import IMTesting
import Testing

@Suite struct MemoryBackendTests {
    let clock = TestClock()

    func backend(_ capabilities: Capabilities = .wukong) -> MemoryBackend {
        MemoryBackend(id: "mem", capabilities: capabilities, clock: clock)
    }

    func code(_ body: () async throws -> Void) async -> IMError.Code? {
        do { try await body(); return nil } catch { return (error as? IMError)?.code }
    }

    @Test func sendStoresWithPerConversationSeqAndIdempotentClientIDs() async throws {
        let im = backend()
        let dm = ConversationRef.direct("alice", "bob")
        let first = try await im.send(OutgoingMessage(conversation: dm, sender: "alice", content: .text("1"), clientMessageID: "c1"))
        let again = try await im.send(OutgoingMessage(conversation: dm, sender: "alice", content: .text("1"), clientMessageID: "c1"))
        let second = try await im.send(OutgoingMessage(conversation: .direct("bob", "alice"), sender: "bob", content: .text("2")))
        let other = try await im.send(OutgoingMessage(conversation: .group("g"), sender: "bob", content: .text("g1")))
        #expect(first.id == again.id)
        #expect([first.seq, second.seq, other.seq] == [nil, nil, nil], "WuKong's send reply carries no seq")
        let stored = try await im.history(HistoryQuery(conversation: dm)).messages + im.history(HistoryQuery(conversation: .group("g"))).messages
        #expect(stored.map(\.seq) == [1, 2, 1])
        #expect(first.sentAt == clock.nowMs())
        let page = try await im.history(HistoryQuery(conversation: dm))
        #expect(page.messages.map(\.id) == [first.id, second.id])
    }

    @Test func refusesSendersOutsideADirectConversation() async {
        let im = backend()
        #expect(await code { _ = try await im.send(OutgoingMessage(conversation: .direct("a", "b"), sender: "c", content: .text("x"))) }
                == .invalidArgument)
    }

    @Test func commandsAndUnpersistedMessagesAreDeliveredNotStored() async throws {
        let im = backend()
        let events = im.events()
        let dm = ConversationRef.direct("a", "b")
        _ = try await im.send(OutgoingMessage(conversation: dm, sender: "a", content: .command(CommandContent(name: "typing"))))
        _ = try await im.send(OutgoingMessage(conversation: dm, sender: "a", content: .text("ephemeral"), options: MessageOptions(persist: false)))
        var iterator = events.makeAsyncIterator()
        let kinds = [await iterator.next()?.kindName, await iterator.next()?.kindName]
        #expect(kinds == ["command", "message"])
        #expect(try await im.history(HistoryQuery(conversation: dm)).messages.isEmpty)
    }

    @Test func recallRules() async throws {
        let im = backend(.nim)
        let dm = ConversationRef.direct("a", "b")
        let message = try await im.send(OutgoingMessage(conversation: dm, sender: "a", content: .text("x")))
        #expect(await code { try await im.recall(message.id, in: dm, by: "b") } == .permissionDenied)
        clock.advance(bySeconds: 121)
        #expect(await code { try await im.recall(message.id, in: dm, by: "a") } == .recallWindowExpired)
        let fresh = try await im.send(OutgoingMessage(conversation: dm, sender: "a", content: .text("y")))
        clock.advance(bySeconds: 119)
        try await im.recall(fresh.id, in: dm, by: "a")
        #expect(await code { try await im.recall(fresh.id, in: dm, by: "a") } == .alreadyRecalled)
        #expect(await code { try await im.recall("nope", in: dm, by: "a") } == .notFound)
        let stored = try await im.history(HistoryQuery(conversation: dm)).messages
        #expect(stored.map(\.isRecalled) == [false, true])
    }

    @Test func jMessageRecallWindowIsThreeMinutes() async throws {
        let im = backend(.jMessage)
        let dm = ConversationRef.direct("a", "b")
        let message = try await im.send(OutgoingMessage(conversation: dm, sender: "a", content: .text("x")))
        clock.advance(bySeconds: 181)
        #expect(await code { try await im.recall(message.id, in: dm, by: "a") } == .recallWindowExpired)
    }

    @Test func editBySenderOnlyAndOnlyWhereSupported() async throws {
        let im = backend(.wukong)
        let dm = ConversationRef.direct("a", "b")
        let message = try await im.send(OutgoingMessage(conversation: dm, sender: "a", content: .text("typo")))
        #expect(await code { try await im.edit(message.id, in: dm, by: "b", content: .text("no")) } == .permissionDenied)
        try await im.edit(message.id, in: dm, by: "a", content: .text("fixed"))
        let stored = try await im.history(HistoryQuery(conversation: dm)).messages[0]
        #expect(stored.currentContent == .text("fixed") && stored.content == .text("typo"))
        let rc = backend(.rongCloud)
        let rcMessage = try await rc.send(OutgoingMessage(conversation: dm, sender: "a", content: .text("x")))
        #expect(await code { try await rc.edit(rcMessage.id, in: dm, by: "a", content: .text("y")) } == .unsupported)
    }

    @Test func expansionRules() async throws {
        let im = backend(.rongCloud)
        let events = im.events()
        let dm = ConversationRef.direct("a", "b")
        let plain = try await im.send(OutgoingMessage(conversation: dm, sender: "a", content: .text("plain")))
        #expect(await code { _ = try await im.updateExpansion(of: plain.id, in: dm, by: "a", .set(["k": "v"])) } == .expansionNotEnabled)
        let order = try await im.send(OutgoingMessage(conversation: dm, sender: "a", content: .text("order"), expansion: ["status": "new"]))
        #expect(try await im.expansion(of: order.id, in: dm).values == ["status": "new"])
        let delta = try await im.updateExpansion(of: order.id, in: dm, by: "b", .set(["status": "paid", "note": "ok"]))
        // Under the RongCloud preset a change's version is its time (`max(clock ms, version + 1)`), as the adapter's `ts`.
        #expect(delta.set == ["status": "paid", "note": "ok"] && delta.version == max(2, clock.nowMs()))
        let same = try await im.updateExpansion(of: order.id, in: dm, by: "b", .set(["status": "paid", "extra": "1"]))
        #expect(same.set == ["extra": "1"], "unchanged keys are left out")
        #expect(await code { _ = try await im.updateExpansion(of: order.id, in: dm, by: "b", .set(["bad key": "v", "fine": "v"])) }
                == .expansionLimitExceeded)
        let state = try await im.expansion(of: order.id, in: dm)
        #expect(state.values == ["status": "paid", "note": "ok", "extra": "1"], "refused change applied nothing")
        #expect(state.entries["status"]?.version == delta.version && state.entries["extra"]?.version == same.version)
        #expect(same.version > delta.version, "versions increase")
        var deltas: [ExpansionDelta] = []
        for await event in events {
            if case .expansionChanged(_, _, _, let delta) = event.kind { deltas.append(delta) }
            if deltas.count == 2 { break }
        }
        #expect(deltas.map(\.set) == [["status": "paid", "note": "ok"], ["extra": "1"]])

        // Under the WuKong preset the event's version is the clock's milliseconds when it is published (the
        // adapter's read time); its id keeps the message's own counter.
        let wk = backend(.wukong)
        let wkEvents = wk.events()
        let wkOrder = try await wk.send(OutgoingMessage(conversation: dm, sender: "a", content: .text("order"), expansion: ["status": "new"]))
        clock.advance(byMs: 5_000)
        let counted = try await wk.updateExpansion(of: wkOrder.id, in: dm, by: "b", .set(["status": "paid"]))
        for await event in wkEvents {
            guard case .expansionChanged(_, _, _, let published) = event.kind else { continue }
            #expect(published.version == clock.nowMs() && published.set == ["status": "paid"])
            #expect(event.eventID.rawValue == "exp:\(wkOrder.id):\(counted.version)" && counted.version < 1_000)
            break
        }
    }

    @Test func expansionCallerLimitsFollowTheCapabilities() async throws {
        var capabilities = Capabilities.rongCloud
        capabilities.expansionCaller = .client
        let im = backend(capabilities)
        let dm = ConversationRef.direct("a", "b")
        let message = try await im.send(OutgoingMessage(conversation: dm, sender: "a", content: .text("x"), expansion: [:]))
        let keys = Dictionary(uniqueKeysWithValues: (0..<21).map { ("k\($0)", "v") })
        #expect(await code { _ = try await im.updateExpansion(of: message.id, in: dm, by: "a", .set(keys)) } == .expansionLimitExceeded)
        #expect(await code {
            _ = try await im.send(OutgoingMessage(conversation: dm, sender: "a", content: .text("x"), expansion: ["含中文": "v"]))
        } == .expansionLimitExceeded)
    }

    @Test func reactionsToggle() async throws {
        let im = backend(.wukong)
        let group = ConversationRef.group("g")
        let message = try await im.send(OutgoingMessage(conversation: group, sender: "a", content: .text("x")))
        #expect(try await im.toggleReaction("👍", on: message.id, in: group, by: "b"))
        #expect(try await im.toggleReaction("❤️", on: message.id, in: group, by: "b"))
        #expect(try await im.toggleReaction("👍", on: message.id, in: group, by: "c"))
        #expect(try await !im.toggleReaction("👍", on: message.id, in: group, by: "b"))
        let reactions = try await im.reactions(on: message.id, in: group).map { "\($0.user)\($0.emoji)" }
        #expect(reactions == ["b❤️", "c👍"])
        let rc = backend(.rongCloud)
        let other = try await rc.send(OutgoingMessage(conversation: group, sender: "a", content: .text("x")))
        #expect(await code { _ = try await rc.toggleReaction("👍", on: other.id, in: group, by: "b") } == .unsupported)
    }

    @Test func readReceiptsAndUnreadCounts() async throws {
        let world = MemoryWorld(capabilities: .wukong, clock: clock)
        world.addMembers(["a", "b", "c"], to: "g")
        let im = MemoryBackend(id: "mem", world: world)
        let group = ConversationRef.group("g")
        var sent: [Message] = []
        for n in 1...3 {
            sent.append(try await im.send(OutgoingMessage(conversation: group, sender: "a", content: .text("\(n)"),
                                                          options: MessageOptions(receiptRequested: true))))
        }
        _ = try await im.send(OutgoingMessage(conversation: group, sender: "a", content: .text("silent"), options: .silent))
        #expect(try await im.unreadCount(in: group, for: "b") == 3)
        #expect(try await im.unreadCount(in: group, for: "a") == 0)
        try await im.markRead(group, by: "b", upTo: sent[1].id)
        #expect(try await im.unreadCount(in: group, for: "b") == 1)
        #expect(try await im.readCounts(of: sent[0].id, in: group) == ReadCounts(read: 1, unread: 1))
        #expect(try await im.readCounts(of: sent[2].id, in: group) == ReadCounts(read: 0, unread: 2))
        try await im.recall(sent[2].id, in: group, by: "a")
        #expect(try await im.unreadCount(in: group, for: "b") == 0, "recalled messages are not unread")
    }

    @Test func totalUnreadSkipsMutedAndListIsNewestFirst() async throws {
        #expect(await code { try await backend(.wukong).setMuted(true, conversation: .direct("me", "x"), for: "me") } == .unsupported,
                "WuKongIM keeps no mute state, and neither does its preset")
        var muting = Capabilities.wukong
        muting.keepsMuteState = true
        let im = backend(muting)
        let dm = ConversationRef.direct("me", "x")
        let dm2 = ConversationRef.direct("me", "y")
        _ = try await im.send(OutgoingMessage(conversation: dm, sender: "x", content: .text("1")))
        clock.advance(byMs: 10)
        _ = try await im.send(OutgoingMessage(conversation: dm2, sender: "y", content: .text("2"), mentions: Mentions(users: ["me"])))
        clock.advance(byMs: 10)
        _ = try await im.send(OutgoingMessage(conversation: dm2, sender: "y", content: .text("3")))
        #expect(try await im.totalUnread(for: "me") == 3)
        try await im.setMuted(true, conversation: dm2, for: "me")
        #expect(try await im.totalUnread(for: "me") == 1)
        let list = try await im.conversations(for: "me")
        #expect(list.map(\.conversation) == [dm2, dm])
        #expect(list.map(\.unreadCount) == [2, 1])
        #expect(list[0].isMuted && list[0].mentionsMe && !list[1].mentionsMe)
        #expect(list[0].lastMessage?.content == .text("3"))
        #expect(try await im.conversations(for: "nobody").isEmpty)
    }

    /// Clear-unread, pinning and @-reminders with their done state, where the capabilities offer them.
    @Test func conversationStatePinsClearsAndReminds() async throws {
        var everything = Capabilities.wukong
        everything.conversationState = Set(ConversationStateOperation.allCases)
        let im = backend(everything)
        let dm = ConversationRef.direct("me", "x"), group = ConversationRef.group("g")
        _ = try await im.send(OutgoingMessage(conversation: dm, sender: "x", content: .text("old")))
        clock.advance(byMs: 10)
        let named = try await im.send(OutgoingMessage(conversation: group, sender: "y", content: .text("@me"), mentions: Mentions(users: ["me"])))
        let all = try await im.send(OutgoingMessage(conversation: group, sender: "z", content: .text("@all"), mentions: Mentions(all: true)))
        _ = try await im.send(OutgoingMessage(conversation: group, sender: "me", content: .text("@me myself"), mentions: Mentions(users: ["me"])))
        #expect(try await im.conversations(for: "me").map(\.conversation) == [group, dm])
        try await im.setPinned(true, conversation: dm, for: "me")
        let list = try await im.conversations(for: "me")
        #expect(list.map(\.conversation) == [dm, group] && list[0].isPinned && !list[1].isPinned, "pinned first")
        #expect(try await im.reminders(in: group, for: "me") == [ConversationReminder(messageID: named.id, sender: "y", all: false),
                                                                ConversationReminder(messageID: all.id, sender: "z", all: true)])
        try await im.markReminderDone(all.id, in: group, for: "me")
        #expect(try await im.reminders(in: group, for: "me").map(\.done) == [false, true])
        #expect(await code { try await im.markReminderDone(all.id, in: group, for: "z") } == .invalidArgument, "not z's reminder")
        #expect(try await im.unreadCount(in: group, for: "me") == 2)
        try await im.clearUnread(in: group, for: "me")
        #expect(try await im.unreadCount(in: group, for: "me") == 0)
        try await im.setPinned(false, conversation: dm, for: "me")
        #expect(try await im.conversations(for: "me").first?.isPinned == false)
        // The WuKong preset offers clear-unread only (its server API); the others no conversation state.
        let wukong = backend(.wukong)
        #expect(await code { try await wukong.setPinned(true, conversation: dm, for: "me") } == .unsupported)
        #expect(await code { _ = try await wukong.reminders(in: group, for: "me") } == .unsupported)
        #expect(await code { try await self.backend(.nim).clearUnread(in: dm, for: "me") } == .unsupported)
    }

    @Test func sharedWorldViewersSeeTheirOwnConversations() async throws {
        let world = MemoryWorld(capabilities: .rongCloud, clock: clock)
        let alice = MemoryBackend(id: "alice-app", world: world, viewer: "alice")
        let bob = MemoryBackend(id: "bob-app", world: world, viewer: "bob")
        let carol = MemoryBackend(id: "carol-app", world: world, viewer: "carol")
        let bobEvents = bob.events()
        let carolEvents = carol.events()
        _ = try await alice.send(OutgoingMessage(conversation: .direct("alice", "carol"), sender: "alice", content: .text("for carol")))
        let sent = try await alice.send(OutgoingMessage(conversation: .direct("alice", "bob"), sender: "alice", content: .text("hi bob")))
        var bobIterator = bobEvents.makeAsyncIterator()
        let bobFirst = await bobIterator.next()
        #expect(bobFirst?.messageID == sent.id && bobFirst?.backend == "bob-app")
        var carolIterator = carolEvents.makeAsyncIterator()
        #expect(await carolIterator.next()?.conversation == .direct("alice", "carol"))
        #expect(try await bob.history(HistoryQuery(conversation: .direct("alice", "carol"))).messages.isEmpty)
        #expect(try await bob.history(HistoryQuery(conversation: .direct("bob", "alice"))).messages.map(\.id) == [sent.id])
    }

    @Test func mediaUploadAndDownloadMoveRealBytes() async throws {
        let im = backend(.nim)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imtesting-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let source = directory + "/photo.jpg"
        FileManager.default.createFile(atPath: source, contents: Data([1, 2, 3, 4]))
        let uploaded = try await im.upload(.local(source, mimeType: "image/jpeg"))
        #expect(uploaded.transferState == .uploaded && uploaded.size == 4)
        let downloadDir = directory + "/in"
        try FileManager.default.createDirectory(atPath: downloadDir, withIntermediateDirectories: true)
        let received = try await im.download(uploaded.rehosted(at: uploaded.remoteURL!), into: downloadDir)
        #expect(received.transferState == .downloaded)
        #expect(FileManager.default.contents(atPath: received.localPath!) == Data([1, 2, 3, 4]))
        #expect(await code { _ = try await im.upload(.local(directory + "/missing.jpg")) } == .notFound)
        #expect(await code { _ = try await im.upload(.remote("https://x.test/a")) } == .invalidArgument)
    }

    /// The group-id rule is `Capabilities.groupCreationAssignsID`, under every preset and under a copy
    /// of one with another name; `seedGroup` puts a fixture under its own id whatever the rule.
    @Test(arguments: Capabilities.allPresets)
    func createGroupFollowsGroupCreationAssignsID(_ preset: Capabilities) async throws {
        var renamed = preset
        renamed.vendor = "renamed"
        for capabilities in [preset, renamed] {
            let backend = MemoryBackend(id: "m", capabilities: capabilities)
            let id = try await backend.createGroup(GroupProfile(id: "asked", name: "Tea", owner: "ann", members: ["ann", "bob"]))
            #expect((id == "asked") == !capabilities.groupCreationAssignsID, "\(capabilities.vendor): \(id)")
            #expect(try await backend.group(id)?.members == ["ann", "bob"])
            backend.world.seedGroup(GroupProfile(id: "fixture", name: "Old", owner: "cat"))
            #expect(try await backend.group("fixture")?.name == "Old")
        }
        #expect(preset.groupCreationAssignsID == (preset.vendor != "rongcloud"), "WuKong, NIM and JMessage assign group ids")
    }
}
