import Foundation
import IMAdapterKit
import IMCore
import IMLab
import IMMapping
import IMSandbox
import IMTesting
@_spi(Testing) import IMVendors
import Testing

/// The vendors the registry-wide suites run over: the built-in ones and, in this test target only, a
/// fifth vendor added through the registry alone (`Vendors.extra`), to show that adding a vendor is a
/// registry line (docs/architecture.md, "Adding a vendor") and nothing else decides by vendor name.
enum TestVendors {
    /// `echo`: WuKong's adapter, sandbox and mapping table under a new name, and WuKong's capability
    /// values under that name — no name switch anywhere (testing kit, lab, bridge) knows it.
    static let echo: Vendor = {
        let wukong = Vendors.all.first { $0.name == "wukong" }!
        var adapter = wukong.adapter
        adapter.name = "echo"
        adapter.displayName = "Echo (WuKong's pieces)"
        adapter.capabilities.vendor = "echo"
        let make = adapter.make, codec = adapter.contentCodec
        // A real fifth vendor ships `mappings/echo.yaml`; this one borrows WuKong's table.
        let table = MappingSet.shipped.table("wukong")
        adapter.make = { settings, context in
            var context = context
            context.mapping = table
            return try await make(settings, context)
        }
        adapter.contentCodec = { registry, _ in codec(registry, table) }
        var sandbox = wukong.sandbox
        sandbox.vendor = "echo"
        return Vendor(adapter: adapter, sandbox: sandbox)
    }()

    /// The built-in vendors' names and `echo`.
    static let names: [String] = Vendors.names + [echo.name]

    /// Runs `body` with `echo` in the registry.
    static func registered<T>(_ body: () async throws -> T) async rethrows -> T {
        try await Vendors.$extra.withValue([echo], operation: body)
    }
}

@Suite(.serialized) struct FifthVendorTests {
    /// One source per fact: each adapter's descriptor carries the very preset the testing kit uses.
    @Test func everyDescriptorCarriesItsPreset() {
        #expect(Vendors.names == Capabilities.allPresets.map(\.vendor))
        for vendor in Vendors.all {
            #expect(vendor.adapter.capabilities == Capabilities.allPresets.first { $0.vendor == vendor.name },
                    "\(vendor.name)'s descriptor carries the preset of its name")
        }
    }

    @Test func theRegistryKnowsTheFifthVendorOnlyWhereAdded() async {
        #expect(Vendors.named("echo") == nil)
        await TestVendors.registered {
            #expect(Vendors.names == TestVendors.names)
            #expect(Vendors.named("ECHO")?.sandbox.vendor == "echo")
        }
        #expect(Vendors.named("echo") == nil)
    }

    /// The registry's sandbox route: the lab starts each vendor's sandbox from its descriptor, and the
    /// adapter built from the registry sends to it and reads the message back from history.
    @Test(arguments: TestVendors.names)
    func sandboxAnswersTheRegisteredAdapter(_ vendor: String) async throws {
        try await TestVendors.registered {
            let lab = try await BridgeLab(members: [BridgeLab.Member("x", vendor)], callbackBase: "http://127.0.0.1:9")
            do {
                let backend = try await lab.userBackend("x", registry: ContentRegistry())
                let chat = ConversationRef.direct("alice", "bobby")
                if let users = backend as? any UserProvisioning {
                    for user: UserID in ["alice", "bobby"] { try await users.ensureUser(UserProfile(id: user)) }
                }
                _ = try await backend.send(OutgoingMessage(conversation: chat, sender: "alice", content: .text("hello \(vendor)")))
                let page = try await backend.history(HistoryQuery(conversation: chat, anchor: .latest, limit: 5))
                #expect(page.messages.map(\.currentContent.digest) == ["hello \(vendor)"], "\(vendor): \(page.messages)")
                #expect(try await lab.messages("x").count == 1)
            } catch {
                await lab.stop()
                throw error
            }
            await lab.stop()
        }
    }

    /// A bridge configured with the fifth vendor relays to it: config validation, the backend factory and
    /// the relay take it from the registry.
    @Test func aBridgeRelaysToTheFifthVendor() async throws {
        try await TestVendors.registered {
            let env = try await InProcessBridge.start([BridgeLab.Member("wk", "wukong"), BridgeLab.Member("ec", "echo")],
                                                      routes: route("wk:group:*", "ec:group:*", direction: "forward"))
            do {
                let wk = try await env.users("wk")
                _ = try await wk.send(OutgoingMessage(conversation: .group("t5"), sender: "alice", content: .text("to the fifth")))
                #expect(try await eventually { try await env.records("ec", "t5").count == 1 })
                let records = try await env.records("ec", "t5")
                #expect(records.first?["text"]?.stringValue == "to the fifth", "\(records)")
            } catch {
                await env.stop()
                throw error
            }
            await env.stop()
        }
    }

    /// The testing kit decides by capability values, not vendor names: the memory conformance suite
    /// passes under the fifth vendor's capabilities as under WuKong's, with the same checks run.
    @Test func memoryConformanceRunsUnderTheFifthVendorsCapabilities() async throws {
        var passed: [[String]] = []
        for capabilities in [Capabilities.wukong, TestVendors.echo.adapter.capabilities] {
            let suite = ConformanceSuite {
                let clock = TestClock()
                let world = MemoryWorld(capabilities: capabilities, clock: clock, registry: ContentRegistry())
                world.addMembers(["alice", "bob", "carol"], to: "team")
                var subject = ConformanceSubject(backend: MemoryBackend(id: "mem", world: world), users: ["alice", "bob", "carol"],
                                                 group: "team", advanceClock: { clock.advance(byMs: $0) }, registry: world.registry)
                subject.reportsDeletions = world.reportsDeletions
                subject.reportsMembershipChanges = world.reportsMembershipChanges
                return subject
            }
            let report = await suite.run()
            #expect(report.failures.isEmpty, "\(capabilities.vendor): \(report)")
            passed.append(report.passed.map(\.check).sorted())
        }
        #expect(passed[0] == passed[1] && !passed[0].isEmpty)
    }
}
