import Foundation
import IMCore
import IMHTTP
import IMSandbox
import JMessage
import JMessageSandbox
import SandboxTestSupport

let masterSecret = "2d7b8ea6c2d4e1f0a9b8c7d6"

/// A started JMessage sandbox (on `SandboxTestSupport.SandboxRig`) plus what only JMessage needs:
/// Basic-auth requests, the seeded users, a text sent as the admin, the adapter's settings for it.
struct SandboxHarness {
    let rig: SandboxRig
    let clock: SandboxClock
    let vendor: JMessageSandbox

    static func start(callbackURL: String? = nil, baseClock: (any IMClock)? = nil, statePath: String? = nil) async throws -> SandboxHarness {
        let clock = baseClock.map { SandboxClock(base: $0) } ?? SandboxClock()
        let vendor = try JMessageSandbox(options: SandboxOptions(appKey: appKey, appSecret: masterSecret, callbackURL: callbackURL, statePath: statePath), clock: clock)
        let rig = try await SandboxRig.start(SandboxServer(vendor: vendor, clock: clock))
        return SandboxHarness(rig: rig, clock: clock, vendor: vendor)
    }

    var http: HTTPClientWrapper { rig.http }
    var base: String { rig.baseURL }
    var auth: String { "Basic " + Data("\(appKey):\(masterSecret)".utf8).base64EncodedString() }

    /// One request signed with the app's Basic credentials (or `authorization`).
    func call(_ method: String, _ path: String, json: String? = nil, authorization: String? = nil,
              contentType: String = "application/json;charset:utf-8", body: [UInt8]? = nil) async throws -> HTTPResponseData {
        var headers: [(name: String, value: String)] = [("Authorization", authorization ?? auth)]
        if json != nil || body != nil { headers.append(("Content-Type", contentType)) }
        return try await http.send(OutboundRequest(method: method, url: base + path, headers: headers, body: body ?? json.map { Array($0.utf8) }))
    }

    func json(_ response: HTTPResponseData) throws -> JSONValue { try JSONValue.parse(Data(response.body)) }

    func errorCode(_ response: HTTPResponseData) -> Int64? { (try? json(response))?["error"]?["code"]?.int64Value }

    /// Registers the admin `bridge_admin` and users alice, bobby, carol.
    func seedUsers() async throws {
        _ = try await call("POST", "/v1/admins/", json: #"{"username":"bridge_admin","password":"admin-pass"}"#)
        _ = try await call("POST", "/v1/users/", json: #"[{"username":"alice","password":"pass1"},{"username":"bobby","password":"pass2"},{"username":"carol","password":"pass3"}]"#)
    }

    /// Sends a text as the admin to `target`; returns msg_id.
    @discardableResult
    func sendText(_ text: String, to target: String = "bobby", type: String = "single") async throws -> Int64 {
        let response = try await call("POST", "/v1/messages", json: """
            {"version":1,"target_type":"\(type)","target_id":"\(target)","from_type":"admin","from_id":"bridge_admin","msg_type":"text","msg_body":{"text":"\(text)"}}
            """)
        guard response.status == 201, let id = try json(response)["msg_id"]?.int64Value else {
            throw IMError(.vendorError, "send failed: \(response.status) \(response.bodyString)")
        }
        return id
    }

    func stop() async { await rig.stop() }

    var settings: JMessageSettings {
        var settings = JMessageSettings(appKey: appKey, masterSecret: masterSecret, admin: "bridge_admin", apiURL: base, reportURL: base + "/")
        settings.adminPassword = "admin-pass"
        settings.timeout = .seconds(10)
        return settings
    }
}
