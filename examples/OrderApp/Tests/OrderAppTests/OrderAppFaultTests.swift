import IMCore
import IMTesting
import OrderApp
import Testing
#if Sandbox
import IMTestingSandbox
#endif

/// Where the two-backend tests run: in memory under each preset the app ships on; with this package's
/// `Sandbox` trait (`swift test --traits Sandbox`) also on each vendor's adapter against its sandbox.
let orderTargets: [TestBackendTarget] = {
    #if Sandbox
    TestBackendTarget.memoryAndSandbox(["rongcloud", "nim"])
    #else
    TestBackendTarget.memory([.rongCloud, .nim])
    #endif
}()

/// What the app's retry loop waited, in order.
actor Waits {
    var all: [Int64] = []
    func add(_ ms: Int64) { all.append(ms) }
}

/// The order service's error paths, with the vendor's faults injected into the backend.
@Suite struct OrderAppFaultTests {
    let shop: UserID = "shop", buyer: UserID = "buyer"
    let card = OrderCard(orderID: "42", amountCents: 1999)

    /// A rate limit, then the retry: the app waits what the vendor asked for (NIM blocks 10 s, RongCloud
    /// answers 1008 with 1 s) and the order is placed once.
    @Test(arguments: [Capabilities.rongCloud, .nim])
    func aRateLimitedOrderIsRetriedAfterTheVendorsWait(_ preset: Capabilities) async throws {
        let registry = try OrderService.makeRegistry()
        let backend = MemoryBackend(id: "app", capabilities: preset, registry: registry)
        let orders = OrderService(backend: backend, registry: registry)
        backend.faults.inject(.rateLimited(), on: .send)
        let waits = Waits()
        let order = try await orders.placeOrder(card, from: shop, to: buyer, attempts: 3) { await waits.add($0) }
        #expect(await waits.all == [preset == .nim ? 10_000 : 1000])
        #expect(backend.faults.injected.map(\.error.code) == [.rateLimited])
        #expect(backend.faults.injected.first?.error.vendorCode == (preset == .nim ? "416" : "1008"))
        #expect(try orders.order(in: order) == card)
        #expect(try await orders.orders(in: .direct(shop, buyer)) == [card])
    }

    /// Rate limited on every try: the app gives up after its attempts with the vendor's error.
    @Test func aRateLimitThatLastsIsReported() async throws {
        let registry = try OrderService.makeRegistry()
        let backend = MemoryBackend(id: "app", capabilities: .rongCloud, registry: registry)
        backend.faults.inject(.rateLimited(), on: .send, count: 5)
        let error = await #expect(throws: IMError.self) {
            _ = try await OrderService(backend: backend, registry: registry).placeOrder(self.card, from: self.shop, to: self.buyer,
                                                                                        attempts: 3) { _ in }
        }
        #expect(error?.code == .rateLimited)
        #expect(backend.faults.pending == 2, "three tries, two faults left")
    }

    /// The order was sent but its answer lost (an unknown outcome): the retry finds it by its client id
    /// instead of placing it twice.
    @Test func anOrderWhoseAnswerWasLostIsNotPlacedTwice() async throws {
        let registry = try OrderService.makeRegistry()
        let backend = MemoryBackend(id: "app", capabilities: .nim, registry: registry)
        let orders = OrderService(backend: backend, registry: registry)
        backend.faults.inject(.unknownOutcome, on: .send)
        let order = try await orders.placeOrder(card, from: shop, to: buyer, attempts: 3) { _ in }
        #expect(try orders.order(in: order) == card)
        #expect(try await orders.orders(in: .direct(shop, buyer)) == [card], "one order, not two")
    }

    /// One test, two backends: the same rate limit and retry in memory and (with `--traits Sandbox`)
    /// through the vendor's adapter against its sandbox.
    @Test(arguments: orderTargets)
    func placingAnOrderThroughARateLimit(_ target: TestBackendTarget) async throws {
        let registry = try OrderService.makeRegistry()
        try await target.run(registry: registry) { session in
            if let users = session.backend as? any UserProvisioning {            // the app provisions its users
                for user in [shop, buyer] { try await users.ensureUser(UserProfile(id: user, name: user.rawValue)) }
            }
            let orders = OrderService(backend: session.backend, registry: registry)
            try await session.inject(.rateLimited(), on: .send)
            let waits = Waits()
            let order = try await orders.placeOrder(card, from: shop, to: buyer, attempts: 3) { await waits.add($0) }
            #expect(await waits.all == [session.capabilities.faultAnswers.rateLimited.retryAfterMs ?? 500])
            #expect(try orders.order(in: order) == card)
            #expect(try await orders.orders(in: .direct(shop, buyer)) == [card])
        }
    }
}
