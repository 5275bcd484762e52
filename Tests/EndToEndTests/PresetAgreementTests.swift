import Foundation
import IMCore
import IMHTTP
import IMLab
import IMTesting
@_spi(Testing) import IMVendors
import Testing

/// The README promises that `MemoryBackend` under a vendor's preset refuses what that vendor refuses.
/// Here the same calls run on the memory backend and on the vendor's adapter against its sandbox, and
/// each call's outcome class (accepted, refused as unsupported, or another error code) must agree.
@Suite(.serialized) struct PresetAgreementTests {
    enum Outcome: Equatable, CustomStringConvertible {
        case accepted
        case refused            // IMError.unsupported, or the backend does not offer the protocol at all
        case failed(String)     // any other IMError code

        var description: String {
            switch self {
            case .accepted: "accepted"
            case .refused: "refused"
            case .failed(let code): "failed(\(code))"
            }
        }
    }

    static func outcome(_ body: () async throws -> Void) async -> Outcome {
        do {
            try await body()
            return .accepted
        } catch let error as IMError where error.code == .unsupported {
            return .refused
        } catch let error as IMError {
            return .failed(error.code.rawValue)
        } catch {
            return .failed("\(error)")
        }
    }

    /// One script of calls, in order; each names its outcome. The user names are valid everywhere
    /// (JMessage usernames have at least 4 characters).
    static func script(_ backend: any IMBackend) async -> [(String, Outcome)] {
        let alice: UserID = "alice", bob: UserID = "bobby"
        let chat = ConversationRef.direct(alice, bob)
        var results: [(String, Outcome)] = []
        func record(_ name: String, _ body: () async throws -> Void) async {
            results.append((name, await outcome(body)))
        }
        if let users = backend as? any UserProvisioning {
            await record("ensureUser") {
                try await users.ensureUser(UserProfile(id: alice, name: "Alice"))
                try await users.ensureUser(UserProfile(id: bob, name: "Bob"))
            }
        } else {
            results.append(("ensureUser", .refused))
        }
        var plain: Message?
        await record("send text") { plain = try await backend.send(OutgoingMessage(conversation: chat, sender: alice, content: .text("hello"))) }
        var extended: Message?
        await record("send with expansion") {
            extended = try await backend.send(OutgoingMessage(conversation: chat, sender: alice, content: .text("order"), expansion: ["status": "new"]))
        }
        await record("send with mention") {
            _ = try await backend.send(OutgoingMessage(conversation: chat, sender: alice, content: .text("@bob hi"), mentions: Mentions(users: [bob])))
        }
        let target = plain ?? extended
        func onTarget(_ name: String, _ body: (Message) async throws -> Void) async {
            guard let target else { results.append((name, .failed("no message"))); return }
            await record(name) { try await body(target) }
        }
        await onTarget("edit") { message in
            guard let editing = backend as? any Editing else { throw IMError(.unsupported, "no Editing") }
            try await editing.edit(message.id, in: chat, by: alice, content: .text("hello!"))
        }
        await onTarget("toggleReaction") { message in
            guard let reacting = backend as? any Reacting else { throw IMError(.unsupported, "no Reacting") }
            _ = try await reacting.toggleReaction("👍", on: message.id, in: chat, by: bob)
        }
        await onTarget("markRead") { message in
            guard let reading = backend as? any ReadReceipting else { throw IMError(.unsupported, "no ReadReceipting") }
            try await reading.markRead(chat, by: bob, upTo: message.id)
        }
        await onTarget("updateExpansion (sent with one)") { message in
            guard let expanding = backend as? any ExpansionUpdating else { throw IMError(.unsupported, "no ExpansionUpdating") }
            // Where the send with an expansion was refused, the plain message stands in: the refusal is the same.
            _ = try await expanding.updateExpansion(of: (extended ?? message).id, in: chat, by: bob, .set(["status": "paid"]))
        }
        // The expansion limits (docs/mappings.md, "Expansion keys across vendors"), each refused whole or taken
        // alike: a key over the length limit, a key outside RongCloud's alphabet, a value over the limit, and
        // 21 keys in one change (over a client SDK caller's 20, within a server caller's 100).
        let limitCases: [(String, [String: String])] = [
            ("updateExpansion (key of 65 characters)", [String(repeating: "k", count: 65): "v"]),
            ("updateExpansion (key 订单状态)", ["订单状态": "v"]),
            ("updateExpansion (value of 4097 characters)", ["note": String(repeating: "长", count: 4097)]),
            ("updateExpansion (21 keys in one change)", Dictionary(uniqueKeysWithValues: (0..<21).map { ("k\($0)", "v") })),
        ]
        for (name, values) in limitCases {
            await onTarget(name) { message in
                guard let expanding = backend as? any ExpansionUpdating else { throw IMError(.unsupported, "no ExpansionUpdating") }
                _ = try await expanding.updateExpansion(of: (extended ?? message).id, in: chat, by: bob, .set(values))
            }
        }
        await onTarget("updateExpansion (sent without)") { message in
            guard let expanding = backend as? any ExpansionUpdating else { throw IMError(.unsupported, "no ExpansionUpdating") }
            _ = try await expanding.updateExpansion(of: message.id, in: chat, by: bob, .set(["status": "paid"]))
        }
        await onTarget("sendExpansionChange (NIM's fallback)") { message in
            guard let carrying = backend as? any ExpansionChangeSending else { throw IMError(.unsupported, "no ExpansionChangeSending") }
            try await carrying.sendExpansionChange(ExpansionDelta(version: 1, set: ["status": "paid"]), of: message.id, in: chat, by: bob)
        }
        let listing = backend as? any ConversationListing
        await record("conversations") {
            guard let listing else { throw IMError(.unsupported, "no ConversationListing") }
            _ = try await listing.conversations(for: bob)
        }
        await record("unreadCount") {
            guard let listing else { throw IMError(.unsupported, "no ConversationListing") }
            _ = try await listing.unreadCount(in: chat, for: bob)
        }
        await record("totalUnread") {
            guard let listing else { throw IMError(.unsupported, "no ConversationListing") }
            _ = try await listing.totalUnread(for: bob)
        }
        await record("setMuted") {
            guard let listing else { throw IMError(.unsupported, "no ConversationListing") }
            try await listing.setMuted(true, conversation: chat, for: bob)
        }
        let state = backend as? any ConversationStateSetting
        await record("clearUnread") {
            guard let state else { throw IMError(.unsupported, "no ConversationStateSetting") }
            try await state.clearUnread(in: chat, for: bob)
        }
        await record("setPinned") {
            guard let state else { throw IMError(.unsupported, "no ConversationStateSetting") }
            try await state.setPinned(true, conversation: chat, for: bob)
        }
        await record("reminders") {
            guard let state else { throw IMError(.unsupported, "no ConversationStateSetting") }
            _ = try await state.reminders(in: chat, for: bob)
        }
        await onTarget("recall by sender") { message in
            guard let recalling = backend as? any Recalling else { throw IMError(.unsupported, "no Recalling") }
            try await recalling.recall(message.id, in: chat, by: alice)
        }
        return results
    }

    /// One paging script: seven messages, then pages by every anchor with the backend's own cursors, a
    /// seq cursor built by hand (a mistake once made), and the form of `seq` and `cursor(for:)`.
    /// Each step is described by the texts it returned and its `hasOlder`/`hasNewer`, or its error.
    static func pagingScript(_ backend: any IMBackend, pause: () async throws -> Void) async -> [(String, String)] {
        let alice: UserID = "alice", bob: UserID = "bobby"
        let chat = ConversationRef.direct(alice, bob)
        var results: [(String, String)] = []
        func describe(_ page: HistoryPage) -> String {
            page.messages.map { $0.currentContent.digest }.joined(separator: ",") + " older=\(page.hasOlder) newer=\(page.hasNewer)"
        }
        var sent: [Message] = []
        func step(_ name: String, _ body: () async throws -> String) async {
            do { results.append((name, try await body())) } catch let error as IMError {
                // Message ids differ between backends: an error naming one names it by its text.
                let text = sent.enumerated().reduce(error.message) {
                    $0.replacingOccurrences(of: "message \($1.element.id.rawValue) ", with: "message p\($1.offset + 1) ")
                }
                results.append((name, "\(error.code.rawValue): \(text)"))
            } catch { results.append((name, "\(error)")) }
        }
        func page(_ anchor: HistoryAnchor, _ limit: Int) async throws -> HistoryPage {
            try await backend.history(HistoryQuery(conversation: chat, anchor: anchor, limit: limit))
        }
        if let users = backend as? any UserProvisioning {
            await step("ensureUser") {
                try await users.ensureUser(UserProfile(id: alice, name: "Alice"))
                try await users.ensureUser(UserProfile(id: bob, name: "Bob"))
                return "ok"
            }
        }
        await step("send p1…p7") {
            for n in 1...7 {
                sent.append(try await backend.send(OutgoingMessage(conversation: chat, sender: alice, content: .text("p\(n)"))))
                try await pause()
            }
            return "seq " + (sent.allSatisfy { $0.seq == nil } ? "nil" : sent.map { $0.seq.map { String($0) } ?? "nil" }.joined(separator: ","))
        }
        var latest: HistoryPage?, oldest: HistoryPage?, middle: Message?
        await step("latest 3") { latest = try await page(.latest, 3); return describe(latest!) }
        await step("before the latest page") {
            guard let cursor = latest?.olderCursor else { return "no older cursor" }
            let got = try await page(.before(cursor), 3)
            middle = got.messages.last
            return describe(got)
        }
        await step("oldest 2") { oldest = try await page(.oldest, 2); return describe(oldest!) }
        await step("after the oldest page") {
            guard let cursor = oldest?.newerCursor else { return "no newer cursor" }
            return describe(try await page(.after(cursor), 2))
        }
        await step("cursor(for:) form") {
            guard let middle else { return "no message" }
            let cursor = try backend.cursor(for: middle)
            if cursor.rawValue == "\(middle.sentAt):\(middle.id.rawValue)" { return "time:id" }
            return cursor == middle.seq.map(HistoryCursor.init(seq:)) ? "seq" : "other \(cursor)"
        }
        await step("around cursor(for: p4 from history)") {
            guard let middle else { return "no message" }
            return describe(try await page(.around(try backend.cursor(for: middle)), 3))
        }
        await step("around cursor(for: p4 as sent)") {
            guard sent.count == 7 else { return "not sent" }
            return describe(try await page(.around(try backend.cursor(for: sent[3])), 3))
        }
        await step("before cursor(for: p1)") {
            guard let first = oldest?.messages.first else { return "no message" }
            return describe(try await page(.before(try backend.cursor(for: first)), 3))
        }
        await step("after cursor(for: p7)") {
            guard let last = latest?.messages.last else { return "no message" }
            return describe(try await page(.after(try backend.cursor(for: last)), 3))
        }
        await step("around HistoryCursor(seq: 4)") { describe(try await page(.around(HistoryCursor(seq: 4)), 3)) }
        await step("before HistoryCursor(seq: 4)") { describe(try await page(.before(HistoryCursor(seq: 4)), 3)) }
        return results
    }

    /// The same paging script on `MemoryBackend(preset)` and on the adapter against its sandbox: every
    /// step must agree — pages, flags, the cursor form, `seq`, and the refusal of a hand-built seq cursor.
    @Test(arguments: TestVendors.names)
    func pagingAgrees(_ vendor: String) async throws {
        try await TestVendors.registered { try await pagingAgreesOnRegistered(vendor) }
    }

    func pagingAgreesOnRegistered(_ vendor: String) async throws {
        let sink = HTTPServer { _ in .json(Data("{}".utf8)) }
        let port = try await sink.start()
        let lab = try await BridgeLab(members: [BridgeLab.Member("x", vendor)], callbackBase: "http://127.0.0.1:\(port)")
        do {
            let adapter = try await lab.userBackend("x", registry: ContentRegistry())
            let clock = TestClock()
            let memory = MemoryBackend(id: "x", capabilities: try #require(Vendors.named(vendor)).adapter.capabilities, clock: clock)
            // Real time passes between the adapter's sends; the memory clock is moved as much.
            let onAdapter = await Self.pagingScript(adapter) { try await Task.sleep(nanoseconds: 3_000_000) }
            let onMemory = await Self.pagingScript(memory) { clock.advance(byMs: 3) }
            #expect(onAdapter.map(\.0) == onMemory.map(\.0))
            #expect(onAdapter.first { $0.0 == "latest 3" }?.1 == "p5,p6,p7 older=true newer=false", "\(onAdapter)")
            for ((call, viaAdapter), (_, inMemory)) in zip(onAdapter, onMemory) {
                #expect(viaAdapter == inMemory, "\(vendor) \(call): adapter «\(viaAdapter)», MemoryBackend «\(inMemory)»")
            }
        }
        await lab.stop()
        await sink.stop()
    }

    /// NIM's expansion fallback: the carrier message the app gets back and finds in history has the same
    /// type, payload (target named by the backend's own id) and options on the adapter and in memory.
    @Test func nimExpansionCarrierAgrees() async throws {
        let sink = HTTPServer { _ in .json(Data("{}".utf8)) }
        let port = try await sink.start()
        let lab = try await BridgeLab(members: [BridgeLab.Member("x", "nim")], callbackBase: "http://127.0.0.1:\(port)")
        do {
            let adapter = try await lab.userBackend("x", registry: ContentRegistry())
            var seen: [[String]] = []
            for backend in [adapter, MemoryBackend(id: "x", capabilities: .nim)] as [any IMBackend] {
                let chat = ConversationRef.direct("alice", "bobby")
                if let users = backend as? any UserProvisioning {
                    for user: UserID in ["alice", "bobby"] { try await users.ensureUser(UserProfile(id: user)) }
                }
                let order = try await backend.send(OutgoingMessage(conversation: chat, sender: "alice", content: .text("order")))
                let carrying = try #require(backend as? any ExpansionChangeSending, "\(type(of: backend))")
                let carrier = try await carrying.sendExpansionChange(ExpansionDelta(version: 2, set: ["status": "paid"], removed: ["owner"]),
                                                                     of: order.id, in: chat, by: "bobby")
                let latest = try await backend.history(HistoryQuery(conversation: chat, anchor: .latest, limit: 5))
                try #require(latest.messages.map(\.id) == [order.id, carrier.id], "\(type(of: backend)): \(latest.messages)")
                var row: [String] = []
                for message in [carrier, latest.messages[1]] {
                    guard case .custom(let custom) = message.content, case .object(var object)? = custom.json else {
                        Issue.record("\(type(of: backend)): the carrier is \(message.content)"); continue
                    }
                    #expect(object["msgid"]?.stringValue == order.id.rawValue, "\(type(of: backend)) names \(String(describing: object["msgid"]))")
                    object["msgid"] = .string("<order>")
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = .sortedKeys
                    let payload = String(decoding: try encoder.encode(JSONValue.object(object)), as: UTF8.self)
                    row.append("\(custom.typeName) \(payload) sender=\(message.sender)")
                }
                seen.append(row)
            }
            #expect(seen.count == 2 && seen[0] == seen[1], "adapter \(seen.first ?? []), MemoryBackend \(seen.last ?? [])")
        }
        await lab.stop()
        await sink.stop()
    }

    /// WuKong's clear-unread, on the memory backend and through the adapter to the sandbox's
    /// `/conversations/clearUnread`: the unread count drops to zero on both.
    @Test func wukongClearUnreadClearsOnBoth() async throws {
        let sink = HTTPServer { _ in .json(Data("{}".utf8)) }
        let port = try await sink.start()
        let lab = try await BridgeLab(members: [BridgeLab.Member("wk", "wukong")], callbackBase: "http://127.0.0.1:\(port)")
        let adapter = try await lab.userBackend("wk", registry: ContentRegistry())
        for backend in [adapter, MemoryBackend(id: "wk", capabilities: .wukong)] as [any IMBackend] {
            let chat = ConversationRef.direct("alice", "bobby")
            for text in ["1", "2"] { _ = try await backend.send(OutgoingMessage(conversation: chat, sender: "alice", content: .text(text))) }
            let state = try #require(backend as? any ConversationStateSetting)
            #expect(try await state.unreadCount(in: chat, for: "bobby") == 2, "\(type(of: backend))")
            try await state.clearUnread(in: chat, for: "bobby")
            #expect(try await state.unreadCount(in: chat, for: "bobby") == 0, "\(type(of: backend))")
        }
        await lab.stop()
        await sink.stop()
    }

    /// The memory backend runs under the capabilities the registry's descriptor carries (the vendor's
    /// preset; `FifthVendorTests.everyDescriptorCarriesItsPreset`).
    @Test(arguments: TestVendors.names)
    func memoryBackendRefusesWhatTheAdapterRefuses(_ vendor: String) async throws {
        try await TestVendors.registered { try await memoryBackendRefusesOnRegistered(vendor) }
    }

    func memoryBackendRefusesOnRegistered(_ vendor: String) async throws {
        let sink = HTTPServer { _ in .json(Data("{}".utf8)) }
        let port = try await sink.start()
        let lab = try await BridgeLab(members: [BridgeLab.Member("x", vendor)], callbackBase: "http://127.0.0.1:\(port)")
        do {
            let adapter = try await lab.userBackend("x", registry: ContentRegistry())
            let memory = MemoryBackend(id: "x", capabilities: try #require(Vendors.named(vendor)).adapter.capabilities)
            let onAdapter = await Self.script(adapter)
            let onMemory = await Self.script(memory)
            #expect(onAdapter.map(\.0) == onMemory.map(\.0))
            #expect(onAdapter.first { $0.0 == "send text" }?.1 == .accepted, "the script reaches the vendor: \(onAdapter)")
            for ((call, viaAdapter), (_, inMemory)) in zip(onAdapter, onMemory) {
                #expect(viaAdapter == inMemory, "\(vendor) \(call): adapter \(viaAdapter), MemoryBackend \(inMemory)")
            }
        }
        await lab.stop()
        await sink.stop()
    }
}
