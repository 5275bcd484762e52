import Foundation
import IMCore
import IMHTTP
import IMSandbox
import JMessage
import JMessageSandbox
import SandboxTestSupport

let masterSecret = "2d7b8ea6c2d4e1f0a9b8c7d6"

/// JMessage's `SandboxHelper`: requests signed with the app's Basic credentials, the seeded users, a text
/// sent as the admin, the adapter's settings for the sandbox.
struct JMessageSandboxHelper: SandboxHelper {
    typealias Vendor = JMessageSandbox

    struct Settings: SandboxHelperSettings {
        /// The routing push (`.url` of a receiver, or `.recorded`).
        var callbacks: SandboxCallbacks = .none
        /// The clock the sandbox's clock starts from (a test clock the adapter shares).
        var baseClock: (any IMClock)?
        var statePath: String?
        init() {}
        init(callbacks: SandboxCallbacks = .none, baseClock: (any IMClock)? = nil, statePath: String? = nil) {
            self.callbacks = callbacks
            self.baseClock = baseClock
            self.statePath = statePath
        }
    }

    let rig: SandboxRig
    let callbacks: CallbackRecorder?
    let settings: Settings

    static let callbackPath = "/callbacks/jm"
    static func callbackAnswer(_ request: HTTPRequestData) async -> HTTPResponseData { HTTPResponseData(status: 200) }

    static func makeServer(_ settings: Settings, callbackURL: String?) throws -> SandboxServer {
        let clock = settings.baseClock.map { SandboxClock(base: $0) } ?? SandboxClock()
        let vendor = try JMessageSandbox(options: SandboxOptions(appKey: appKey, appSecret: masterSecret, callbackURL: callbackURL,
                                                                 statePath: settings.statePath), clock: clock)
        return SandboxServer(vendor: vendor, clock: clock)
    }

    var auth: String { "Basic " + Data("\(appKey):\(masterSecret)".utf8).base64EncodedString() }
    func signedHeaders() -> [(name: String, value: String)] { [("Authorization", auth)] }
    var jsonContentType: String { "application/json;charset:utf-8" }

    /// The body of an answer as JSON (throws when it is not JSON).
    func json(_ reply: SandboxRig.Reply) throws -> JSONValue { try JSONValue.parse(Data(reply.body)) }
    func json(_ response: HTTPResponseData) throws -> JSONValue { try JSONValue.parse(Data(response.body)) }

    /// JMessage's error code (`{"error":{"code":…}}`).
    func errorCode(_ reply: SandboxRig.Reply) -> Int64? { reply.json["error"]?["code"]?.int64Value }
    func errorCode(_ response: HTTPResponseData) -> Int64? { (try? json(response))?["error"]?["code"]?.int64Value }

    /// Registers the admin `bridge_admin` and users alice, bobby, carol.
    func seedUsers() async throws {
        _ = try await call("POST", "/v1/admins/", .json(#"{"username":"bridge_admin","password":"admin-pass"}"#))
        _ = try await call("POST", "/v1/users/", .json(#"[{"username":"alice","password":"pass1"},{"username":"bobby","password":"pass2"},{"username":"carol","password":"pass3"}]"#))
    }

    /// Sends a text as the admin `from` (JMessage's server API sends only as an admin) to the user `to`; returns msg_id.
    @discardableResult
    func sendText(_ text: String, from: String = "bridge_admin", to: String = "bobby") async throws -> Int64 {
        let reply = try await call("POST", "/v1/messages", .json("""
            {"version":1,"target_type":"single","target_id":"\(to)","from_type":"admin","from_id":"\(from)","msg_type":"text","msg_body":{"text":"\(text)"}}
            """))
        guard reply.status == 201, let id = reply.json["msg_id"]?.int64Value else {
            throw IMError(.vendorError, "send failed: \(reply.status) \(reply.text)")
        }
        return id
    }

    var backendSettings: JMessageSettings {
        var settings = JMessageSettings(appKey: appKey, masterSecret: masterSecret, admin: "bridge_admin", apiURL: baseURL, reportURL: baseURL + "/")
        settings.adminPassword = "admin-pass"
        settings.timeout = .seconds(10)
        return settings
    }
}
