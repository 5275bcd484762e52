import Foundation
import IMCore
import Testing
import SandboxTestSupport
import WuKongSandbox

/// docs/adapters/wukong.md §5.1's endpoint table against what the sandbox serves.
@Suite struct WuKongSandboxEndpointTableTests {
    /// The table's rows `| `METHOD /path` | served |` or `| `METHOD /path` | not served |`.
    static func documentedEndpoints() throws -> [(route: String, served: Bool)] {
        try EndpointTable.rows(vendor: "wukong").filter { !$0.endpoint.hasPrefix("/") }.map { ($0.endpoint, $0.served) }
    }

    /// `{name}` segments filled in with `1`.
    static func concrete(_ path: Substring) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("{") && $0.hasSuffix("}") ? "1" : String($0) }.joined(separator: "/")
    }

    @Test func endpointTableMatchesTheSandbox() async throws {
        let table = try Self.documentedEndpoints()
        let served = table.filter(\.served).map(\.route)
        #expect(Set(served) == Set(WuKongSandbox.servedRoutes) && served.count == WuKongSandbox.servedRoutes.count)
        #expect(Set(table.map(\.route)).count == table.count, "no route is listed twice")
        #expect(table.contains { !$0.served }, "the table also names what is not served")
        let h = try await WuKongSandboxHelper.start()
        defer { Task { await h.stop() } }
        // A registered token, so the business routes (`/v1/…`) get past their login check.
        #expect(try await h.postJSON("/user/token", #"{"uid":"tabler","token":"tok"}"#).status == 200)
        for row in table {
            let parts = row.route.split(separator: " ", maxSplits: 1)
            let (method, path) = (String(parts[0]), Self.concrete(parts[1]))
            let reply = try await h.send(method, path, body: method == "GET" ? [] : Array("{}".utf8),
                                         headers: [("Content-Type", "application/json"), ("token", "tok")])
            if row.served {
                #expect(reply.status != 404, "\(row.route): \(reply.status) \(reply.text)")
            } else {
                #expect(reply.status == 404 && reply.json == ["msg": "404 page not found"], "\(row.route): \(reply.status) \(reply.text)")
            }
        }
    }

    @Test func aServedPathWithAnotherMethodIsNotServed() async throws {
        let h = try await WuKongSandboxHelper.start()
        defer { Task { await h.stop() } }
        #expect(try await h.get("/user/token").status == 404)
        #expect(try await h.postJSON("/health", "{}").status == 404)
        #expect(try await h.get("/health/").status == 200, "a trailing slash is ignored")
        #expect(try await h.postJSON("/user/token", #"{"uid":"u1","token":"tok"}"#).status == 200)
        #expect(try await h.get("/v1/reaction/sync", headers: [("token", "tok")]).status == 404)
        #expect(try await h.get("/v1/reaction/sync").status == 401, "the login check comes first on /v1/…")
    }
}
