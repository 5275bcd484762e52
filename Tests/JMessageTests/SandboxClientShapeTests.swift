import Foundation
import IMCore
import IMHTTP
import JMessage
import JMessageSandbox
import SandboxTestSupport
import Testing

/// Request shapes other JMessage clients send, as raw HTTP.
@Suite struct JMessageSandboxClientShapeTests {
    /// PyPI `jmessage` 2.0.0: `User(jm).create(username, password, admin=True)` wraps the user into a
    /// one-item list and posts it with `requests` (`json=[…]`, `session.auth`). The sandbox registers the
    /// admin (201, no body), after which the admin can send.
    @Test func oneItemArrayRegistersTheAdmin() async throws {
        let sandbox = try await JMessageSandboxHelper.start()
        defer { Task { await sandbox.stop() } }
        let body = Array(#"[{"username": "bridge_admin", "password": "admin-pass"}]"#.utf8)
        let headers: [(name: String, value: String)] = [
            ("User-Agent", "python-requests/2.32.3"), ("Accept-Encoding", "gzip, deflate"), ("Accept", "*/*"),
            ("Connection", "keep-alive"), ("Content-Type", "application/json"), ("Authorization", sandbox.auth)]
        let registered = try await sandbox.http.send(OutboundRequest(method: "POST", url: sandbox.baseURL + "/v1/admins/", headers: headers, body: body))
        #expect(registered.status == 201 && registered.body.isEmpty)
        _ = try await sandbox.call("POST", "/v1/users/", .json(#"[{"username": "alice", "password": "pass1"}]"#))
        let id = try await sandbox.sendText("hi", to: "alice")
        #expect(id > 0)
        let again = try await sandbox.http.send(OutboundRequest(method: "POST", url: sandbox.baseURL + "/v1/admins/", headers: headers, body: body))
        #expect(again.status == 403 && sandbox.errorCode(again) == 899001)
        // Only the one-item array is read as the object; two admins or an empty list stay refused.
        for json in [#"[{"username":"admin_two","password":"pass2"},{"username":"admin_three","password":"pass3"}]"#, "[]", #"["admin_two"]"#] {
            let refused = try await sandbox.call("POST", "/v1/admins/", .json(json))
            #expect(refused.status == 400 && sandbox.errorCode(refused) == 899003, "\(json)")
        }
        #expect(try await sandbox.call("GET", "/v1/users/admin_two").status == 403)
    }

    /// docs/adapters/jmessage.md §5 against the sandbox: the "served" rows are `servedRoutes` and answer
    /// something other than "no such API"; the "not served" rows answer 404 with it.
    @Test func routeTableMatchesTheSandbox() async throws {
        let rows = try EndpointTable.rows(vendor: "jmessage").filter { !$0.endpoint.hasPrefix("/") }
        let served = rows.filter(\.served).map(\.endpoint), notServed = rows.filter { !$0.served }.map(\.endpoint)
        #expect(Set(served) == Set(JMessageSandbox.servedRoutes) && served.count == JMessageSandbox.servedRoutes.count)
        #expect(!notServed.isEmpty)
        let sandbox = try await JMessageSandboxHelper.start()
        defer { Task { await sandbox.stop() } }
        func request(_ route: String) async throws -> SandboxRig.Reply {
            let parts = route.split(separator: " ", maxSplits: 1).map(String.init)
            let path = parts[1].replacingOccurrences(of: "{username}", with: "alice").replacingOccurrences(of: "{gid}", with: "1")
                .replacingOccurrences(of: "{msgid}", with: "1").replacingOccurrences(of: "{id}", with: "1")
            return try await sandbox.call(parts[0], path, parts[0] == "GET" ? .empty : .json("{}"))
        }
        for route in served {
            let answer = try await request(route)
            #expect(!(answer.status == 404 && answer.text.contains("no such")), "\(route)")
        }
        for route in notServed {
            let answer = try await request(route)
            #expect(answer.status == 404 && sandbox.errorCode(answer) == 899003 && answer.text.contains("no such API"), "\(route)")
        }
    }
}
