import Foundation
import IMCore
import IMHTTP
import IMSandbox
import RongCloud
import RongCloudSandbox
import SandboxTestSupport

/// RongCloud's `SandboxHelper`: a sandbox built through its descriptor whose routing callbacks go to a
/// recorder answering `ok`; a request signed as the Server API documents it; a text sent.
struct RongCloudSandboxHelper: SandboxHelper {
    typealias Vendor = RongCloudSandbox

    static let appKey = "pvxdm17jxjaor"
    static let secret = "Y1W2MeFwwwRxa0"

    struct Settings: SandboxHelperSettings {
        var callbacks: SandboxCallbacks = .recorded()
        /// `--option` settings of the sandbox.
        var extra: [String: String] = [:]
        var statePath: String?
        /// A clock of the test's for the vendor's own timing (rate limits); nil: the sandbox clock.
        var vendorClock: (any IMClock)?
        init() {}
        init(callbacks: SandboxCallbacks = .recorded(), extra: [String: String] = [:], statePath: String? = nil, vendorClock: (any IMClock)? = nil) {
            self.callbacks = callbacks
            self.extra = extra
            self.statePath = statePath
            self.vendorClock = vendorClock
        }
    }

    let rig: SandboxRig
    let callbacks: CallbackRecorder?
    let settings: Settings

    static let callbackPath = "/rc/route"
    static func callbackAnswer(_ request: HTTPRequestData) async -> HTTPResponseData { .text("ok") }

    static func makeServer(_ settings: Settings, callbackURL: String?) throws -> SandboxServer {
        let options = SandboxOptions(appKey: appKey, appSecret: secret, callbackURL: callbackURL, statePath: settings.statePath, extra: settings.extra)
        guard let vendorClock = settings.vendorClock else { return try RongCloudSandbox.server(options) }
        return SandboxServer(vendor: try RongCloudSandbox(options: options, clock: vendorClock), clock: SandboxClock())
    }

    /// Pending deliveries first, so nothing is in flight when the server stops.
    func settle() async {
        _ = await vendor.waitForDeliveries(timeoutMs: 2000)
        await vendor.stopDeliveries()
    }

    /// The four signing headers of the Server API (`prefix` "rc-" gives the `RC-` names).
    static func signedHeaders(nonce: String = "14314", timestamp: String = "1408710653000", key: String = appKey,
                              secret: String = secret, prefix: String = "") -> [(name: String, value: String)] {
        [(prefix + "App-Key", key), (prefix + "Nonce", nonce), (prefix + "Timestamp", timestamp),
         (prefix + "Signature", Hashing.sha1Hex(secret + nonce + timestamp))]
    }

    func signedHeaders() -> [(name: String, value: String)] { Self.signedHeaders() }

    /// Sends a text message through the Server API; returns its msgUID.
    func sendText(_ text: String, from: String = "u1", to: String = "u2") async throws -> String? {
        let content = FormBody.escape(JSONValue.object(["content": .string(text)]).jsonString())
        let reply = try await call("POST", RCPaths.privatePublish, .formText("fromUserId=\(from)&toUserId=\(to)&objectName=RC:TxtMsg&content=\(content)"))
        return reply.json["messageUIDs"]?.arrayValue?.first?["messageUID"]?.stringValue
    }

    /// Form fields of a routing callback body, as a dictionary of first values.
    static func fields(_ request: HTTPRequestData) -> [String: String] {
        Dictionary(request.form.items.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
    }
}
