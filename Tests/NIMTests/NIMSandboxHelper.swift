import Foundation
import IMCore
import IMHTTP
import IMSandbox
import IMTesting
import NIM
import NIMSandbox
import SandboxTestSupport

/// NIM's `SandboxHelper`: a call signed the way NIM documents it, users created, a text sent; the message
/// copies (callbacks) go to a recorder answering NIM's `{"code":200}` unless the test turns them off.
struct NIMSandboxHelper: SandboxHelper {
    typealias Vendor = NIMSandbox

    static let appKey = "test-app-key"
    static let appSecret = "test-app-secret"

    struct Settings: SandboxHelperSettings {
        var callbacks: SandboxCallbacks = .recorded()
        var appKey = NIMSandboxHelper.appKey
        var appSecret = NIMSandboxHelper.appSecret
        /// The sandbox clock stands still unless advanced, so every message shares one millisecond.
        var frozenClock = false
        /// Rate limits the sandbox enforces (`Capabilities.nim.rateLimits`); nil: none.
        var rateLimits: [RateLimit]?
        init() {}
        init(callbacks: SandboxCallbacks = .recorded(), appKey: String = NIMSandboxHelper.appKey, appSecret: String = NIMSandboxHelper.appSecret,
             frozenClock: Bool = false, rateLimits: [RateLimit]? = nil) {
            self.callbacks = callbacks
            self.appKey = appKey
            self.appSecret = appSecret
            self.frozenClock = frozenClock
            self.rateLimits = rateLimits
        }
    }

    let rig: SandboxRig
    let callbacks: CallbackRecorder?
    let settings: Settings

    static let callbackPath = "/receiveMsg.action"
    static func callbackAnswer(_ request: HTTPRequestData) async -> HTTPResponseData { .json(JSONValue.object(["code": 200]).jsonData()) }

    /// Through the sandbox's descriptor, unless the clock is frozen or rate limits are asked for.
    static func makeServer(_ settings: Settings, callbackURL: String?) throws -> SandboxServer {
        guard settings.frozenClock || settings.rateLimits != nil else {
            return try NIMSandbox.server(SandboxOptions(appKey: settings.appKey, appSecret: settings.appSecret, callbackURL: callbackURL))
        }
        let clock = settings.frozenClock ? SandboxClock(base: TestClock()) : SandboxClock()
        return SandboxServer(vendor: NIMSandbox(appKey: settings.appKey, appSecret: settings.appSecret, callbackURL: callbackURL, clock: clock,
                                                rateLimits: settings.rateLimits), clock: clock)
    }

    func settle() async { _ = await vendor.waitForCallbacks(timeoutMs: 2000) }

    /// NIM's request signature: `CheckSum = SHA1(secret + Nonce + CurTime)`, CurTime in seconds.
    static func signedHeaders(appKey: String = appKey, secret: String = appSecret, curTime: String? = nil,
                              nonce: String = "4tgggergigwow323t23t") -> [(name: String, value: String)] {
        let time = curTime ?? String(Int64(Date().timeIntervalSince1970))
        return [("AppKey", appKey), ("Nonce", nonce), ("CurTime", time), ("CheckSum", Hashing.sha1Hex(secret + nonce + time))]
    }

    func signedHeaders() -> [(name: String, value: String)] { Self.signedHeaders(appKey: settings.appKey, secret: settings.appSecret) }

    func createUsers(_ accids: String...) async throws {
        for accid in accids { try await call("POST", "/user/create.action", .form([("accid", accid)])) }
    }

    func sendText(_ text: String, from: String, to: String) async throws -> JSONValue {
        try await sendText(text, from: from, to: to, ope: 0)
    }

    /// `/msg/sendMsg.action` with a text body; NIM's whole answer.
    func sendText(_ text: String, from: String, to: String, ope: Int = 0, option: String? = nil) async throws -> JSONValue {
        var fields = [("from", from), ("ope", String(ope)), ("to", to), ("type", "0"),
                      ("body", JSONValue.object(["msg": .string(text)]).jsonString())]
        if let option { fields.append(("option", option)) }
        return try await call("POST", "/msg/sendMsg.action", .form(fields)).json
    }
}
