import IMCore
import IMTesting
import Testing

/// Faults injected into `MemoryBackend` (docs/testing-kit.md, "Faults"): each kind gives the error the
/// vendor's adapter throws (its code and wait from the preset's `faultAnswers`), on the operation and
/// for the count asked, and an unknown outcome is carried out before its error.
@Suite struct MemoryFaultTests {
    let chat = ConversationRef.direct("alice", "bobby")

    func text(_ body: String) -> OutgoingMessage { OutgoingMessage(conversation: chat, sender: "alice", content: .text(body)) }

    func caught(_ body: () async throws -> Void) async -> IMError? {
        do { try await body(); return nil } catch { return error as? IMError }
    }

    /// The rate limit of each preset: its class, vendor code and wait.
    @Test(arguments: [(Capabilities.nim, "416", Int64(10_000)), (.rongCloud, "1008", 1000), (.jMessage, "899030", 1000),
                      (.wukong, "http_429", nil)] as [(Capabilities, String, Int64?)])
    func rateLimitsCarryTheVendorsCodeAndWait(_ preset: Capabilities, _ vendorCode: String, _ waitMs: Int64?) async throws {
        let backend = MemoryBackend(capabilities: preset)
        backend.faults.inject(.rateLimited(), on: .send)
        let error = await caught { _ = try await backend.send(text("1")) }
        #expect(error?.code == .rateLimited)
        #expect(error?.vendorCode == vendorCode)
        #expect(error?.retryAfterMs == waitMs)
        #expect(error?.isRetryable == true)
        // The rule is used up: the retry goes through, and nothing was stored by the refused call.
        let sent = try await backend.send(text("1"))
        let page = try await backend.history(HistoryQuery(conversation: chat))
        #expect(page.messages.map(\.id) == [sent.id])
    }

    @Test func aRetryAfterReplacesTheVendorsWait() async throws {
        let backend = MemoryBackend(capabilities: .nim)
        backend.faults.inject(.rateLimited(retryAfterMs: 2500), on: .send)
        #expect(await caught { _ = try await backend.send(text("1")) }?.retryAfterMs == 2500)
    }

    @Test func countAndOperationPickTheCalls() async throws {
        let backend = MemoryBackend(capabilities: .rongCloud)
        backend.faults.inject(.serverError, on: .history, count: 2)
        let sent = try await backend.send(text("1"))                       // not a history call: untouched
        for _ in 0..<2 {
            let error = await caught { _ = try await backend.history(HistoryQuery(conversation: chat)) }
            #expect(error?.code == .unavailable)
            #expect(error?.vendorCode == "1000")
        }
        #expect(try await backend.history(HistoryQuery(conversation: chat)).messages.map(\.id) == [sent.id])
        #expect(backend.faults.injected.map(\.operation) == [.history, .history])
        #expect(backend.faults.pending == 0)
    }

    @Test func aTimeoutCarriesNothingOut() async throws {
        let backend = MemoryBackend(capabilities: .wukong)
        backend.faults.inject(.timeout, on: .send)
        let error = await caught { _ = try await backend.send(text("lost")) }
        #expect(error?.code == .timeout)
        #expect(error?.vendorCode == nil)
        #expect(error?.abandonedAfterMs == nil)
        #expect(backend.world.allMessages.isEmpty)
    }

    /// The message is sent, the answer lost: the app sees a timeout with `abandonedAfterMs` and finds the
    /// message by its client id (ask before resending).
    @Test func anUnknownOutcomeIsCarriedOutThenFails() async throws {
        let backend = MemoryBackend(capabilities: .nim)
        backend.faults.inject(.unknownOutcome, on: .send)
        var outgoing = text("order 42")
        outgoing.clientMessageID = "c-42"
        let error = await caught { _ = try await backend.send(outgoing) }
        #expect(error?.code == .timeout)
        #expect(error?.abandonedAfterMs == backend.faults.timeoutMs)
        #expect(backend.world.allMessages.map(\.clientMessageID) == ["c-42"])
        let found = try await backend.message(withClientID: "c-42", in: chat, readingAs: nil)
        #expect(found?.currentContent.digest == "order 42")
    }

    @Test func afterAcceptingAnyFault() async throws {
        let backend = MemoryBackend(capabilities: .rongCloud)
        let order = try await backend.send(text("order"))
        backend.faults.inject(MemoryFault.serverError.afterAccepting, on: .recall)
        #expect(await caught { try await backend.recall(order.id, in: chat, by: "alice") }?.code == .unavailable)
        let again = await caught { try await backend.recall(order.id, in: chat, by: "alice") }
        #expect(again?.code == .alreadyRecalled, "the first recall was carried out")
    }

    /// Several backends on one world share its faults, as clients share one vendor server.
    @Test func faultsBelongToTheWorld() async throws {
        let world = MemoryWorld(capabilities: .rongCloud)
        let alice = MemoryBackend(id: "a", world: world, viewer: "alice"), bob = MemoryBackend(id: "b", world: world, viewer: "bobby")
        alice.faults.inject(.rateLimited(), on: .send)
        #expect(await caught { _ = try await bob.send(OutgoingMessage(conversation: chat, sender: "bobby", content: .text("x"))) }?.code
                == .rateLimited)
        _ = try await alice.send(text("ok"))
    }

    @Test func seededFaultsRepeatForTheSameSeed() async throws {
        func run(_ seed: UInt64) async -> [String] {
            let backend = MemoryBackend(capabilities: .jMessage)
            backend.faults.seed(seed, probability: 0.4, on: [.send])
            var outcomes: [String] = []
            for n in 0..<40 {
                let error = await caught { _ = try await backend.send(text("m\(n)")) }
                outcomes.append(error.map { "\($0.code)\($0.abandonedAfterMs == nil ? "" : "+sent")" } ?? "ok")
            }
            _ = try? await backend.history(HistoryQuery(conversation: chat))   // not in `on`: never faulted
            #expect(backend.faults.injected.allSatisfy { $0.operation == .send })
            return outcomes
        }
        let first = await run(7), second = await run(7), other = await run(8)
        #expect(first == second)
        #expect(first != other)
        #expect(Set(first).isSuperset(of: ["ok", "rate_limited", "unavailable", "timeout", "timeout+sent"]), "\(first)")
        #expect(first.filter { $0 == "ok" }.count > 10, "\(first)")
    }

    @Test func clearRemovesScriptedAndSeededFaults() async throws {
        let backend = MemoryBackend(capabilities: .wukong)
        backend.faults.inject(.serverError, count: 3)
        backend.faults.seed(1, probability: 1)
        backend.faults.clear()
        _ = try await backend.send(text("ok"))
        #expect(backend.faults.injected.isEmpty)
    }
}
