import Foundation
import IMAdapterKit
import IMCore
import IMHTTP
import IMMapping
import IMSandbox
import IMVendors
import Testing

/// Each vendor's one error table (`AdapterDescriptor.errors`, docs/architecture.md, "The adapter contract"),
/// held from both ends: every code in it, answered by the vendor's sandbox as an injected fault
/// (`POST /_sandbox/faults` with `vendor_code`), reaches the adapter's caller over real HTTP as the table's
/// class, retryability and vendor code; the rules the tables share hold without a sandbox.
@Suite struct VendorErrorTableTests {
    static let endpoint = SandboxDescriptor.Endpoint(baseURL: "", appKey: "table-app-key", appSecret: "table-app-secret",
                                                     webhookSecret: "table-webhook-secret")

    /// Every code of the table, at both ends of a range.
    static func codes(_ table: VendorErrorTable) -> [(code: Int, entry: VendorErrorTable.Entry)] {
        table.entries.flatMap { entry in Set([entry.codes.lowerBound, entry.codes.upperBound]).sorted().map { ($0, entry) } }
    }

    @Test(arguments: Vendors.names)
    func everyCodeTheSandboxAnswersSurfacesAsTheTablesClass(_ name: String) async throws {
        let vendor = try #require(Vendors.named(name))
        let table = vendor.adapter.errors
        let options = SandboxOptions(appKey: Self.endpoint.appKey, appSecret: Self.endpoint.appSecret,
                                     extra: vendor.sandbox.labOptions(Self.endpoint, true))
        let server = try await vendor.sandbox.make(options)
        try await server.start()
        do {
            var endpoint = Self.endpoint
            endpoint.baseURL = server.baseURL
            let backend = try await vendor.adapter.makeBackend(id: "x", settings: vendor.sandbox.adapterSettings(endpoint),
                                                               context: AdapterContext(mapping: MappingSet.shipped.table(name)))
            let chat = ConversationRef.direct("alice", "bobby")
            if let users = backend as? any UserProvisioning {
                for user: UserID in ["alice", "bobby"] { try await users.ensureUser(UserProfile(id: user)) }
            }
            let message = OutgoingMessage(conversation: chat, sender: "alice", content: .text("table"))
            _ = try await backend.send(message)
            let http = HTTPClientWrapper()
            #expect(!table.entries.isEmpty)
            for (code, entry) in Self.codes(table) {
                let fault = JSONValue.object(["status": .int(Int64(entry.status)), "vendor_code": .int(Int64(code)), "count": 1])
                let injected = try await http.send(.json(server.baseURL + "/_sandbox/faults", fault.jsonData()))
                #expect(injected.status == 200)
                do {
                    _ = try await backend.send(message)
                    Issue.record("\(name) \(code): the send succeeded")
                } catch let error as IMError {
                    #expect(error.code == entry.error && error.isRetryable == entry.retryable && error.vendorCode == String(code),
                            "\(name) \(code): \(error)")
                }
                #expect(server.faults.pendingRules.isEmpty, "\(name) \(code): the fault was not the send's answer")
                server.faults.clear()
            }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// The shared rules, on every table: an unlisted code, a 429 or 5xx answer, the wait of a retryable
    /// error, and that the sandbox's HTTP status for each entry does not contradict its class.
    @Test(arguments: Vendors.names)
    func everyTableFollowsTheSharedRules(_ name: String) throws {
        let table = try #require(Vendors.named(name)).adapter.errors
        let unlisted = 987_654_321
        #expect(table[unlisted] == nil)
        #expect(table.error(code: unlisted, message: nil).code == .vendorError)
        #expect(table.error(code: unlisted, message: nil, httpStatus: 503).code == .unavailable)
        for (code, entry) in Self.codes(table) {
            #expect(table[code] == entry && table.status(for: code) == entry.status)
            let plain = table.error(code: code, message: nil, retryAfterMs: 1500)
            #expect(plain.code == entry.error && plain.isRetryable == entry.retryable && plain.vendorMessage == entry.text, "\(name) \(code)")
            #expect(plain.retryAfterMs == (entry.retryable ? 1500 : nil), "\(name) \(code)")
            #expect(table.error(code: code, message: "m").retryAfterMs == (entry.retryable ? entry.retryAfterMs : nil))
            let limited = table.error(code: code, message: "m", httpStatus: 429)
            #expect(limited.code == .rateLimited && limited.isRetryable)
            #expect(table.error(code: code, message: "m", httpStatus: 502).isRetryable)
            if entry.status == 429 || entry.status >= 500 { #expect(entry.retryable, "\(name) \(code) is answered with \(entry.status)") }
            if entry.status == 429 { #expect(entry.error == .rateLimited) }
        }
    }

    /// The group-send refusals a preset carries (what `MemoryBackend` throws) name codes of the vendor's
    /// table with the table's class, so the kit and the adapter refuse alike (docs/testing-kit.md).
    @Test(arguments: Vendors.names)
    func presetGroupRefusalsAreTableCodes(_ name: String) throws {
        let vendor = try #require(Vendors.named(name))
        let refusals = vendor.adapter.capabilities.groupSendRefusals
        for refusal in [refusals.unknownGroup, refusals.nonMember].compactMap({ $0 }) {
            let code = try #require(refusal.vendorCode.flatMap(Int.init), "\(name): a preset refusal carries the vendor's code")
            #expect(vendor.adapter.errors[code] != nil, "\(name) \(code) is in the table")
            #expect(vendor.adapter.errors.error(code: code, message: nil).code == refusal.code, "\(name) \(code)")
        }
    }

    /// The codes whose meaning the vendor's text or the operation narrows.
    @Test func refinementsNarrowACode() {
        let nim = Tables.nim, rongCloud = Tables.rongCloud
        #expect(nim.error(code: 414, message: "CurTime is expired").code == .authenticationFailed)
        #expect(nim.error(code: 414, message: "already register").code == .conflict)
        #expect(nim.error(code: 414, message: "body is too long").code == .invalidArgument)
        #expect(nim.error(code: 417, message: "x", operation: .recall).code == .alreadyRecalled)
        #expect(nim.error(code: 417, message: "x").code == .conflict)
        #expect(rongCloud.error(code: 1002, message: "messageUID does not exist: 5").code == .notFound)
        #expect(rongCloud.error(code: 1002, message: "expansion limit exceeded (keys)").code == .expansionLimitExceeded)
        #expect(rongCloud.error(code: 1002, message: "other").code == .invalidArgument)
        #expect(nim.errorClass(code: 414, message: "checksum") == .authenticationFailed && nim.errorClass(code: 4242) == nil)
    }
}

/// Two tables by name, through the registry.
enum Tables {
    static let nim = Vendors.named("nim")!.adapter.errors
    static let rongCloud = Vendors.named("rongcloud")!.adapter.errors
}
