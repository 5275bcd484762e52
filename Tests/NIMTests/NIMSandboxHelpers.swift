import Foundation
import IMCore
import IMHTTP
import IMSandbox
import IMTesting
import NIM
import NIMSandbox
import SandboxTestSupport

/// A NIM sandbox on a free port (the shared `SandboxRig`) whose message copies go to a shared
/// `CallbackRecorder`, plus what is NIM's own: signing a call and sending a text. Requests are built by
/// hand here (not with `NIMClient`), so the sandbox and the client cannot share a misunderstanding.
struct NIMSandboxHelpers {
    static let appKey = "test-app-key"
    static let appSecret = "test-app-secret"
    static let callbackPath = "/receiveMsg.action"

    let rig: SandboxRig
    /// Receives the sandbox's message copies and answers NIM's `{"code":200}`; nil when copies are off.
    let recorder: CallbackRecorder?
    var vendor: NIMSandbox { rig.server.vendor as! NIMSandbox }
    var baseURL: String { rig.baseURL }

    /// `frozenClock`: the sandbox clock stands still unless advanced, so every message shares one millisecond.
    static func start(callbacks: Bool = true, frozenClock: Bool = false) async throws -> NIMSandboxHelpers {
        var recorder: CallbackRecorder?
        var callbackURL: String?
        if callbacks {
            let started = CallbackRecorder { _ in .json(JSONValue.object(["code": 200]).jsonData()) }
            callbackURL = try await started.start() + callbackPath
            recorder = started
        }
        let server = try makeServer(appKey: appKey, appSecret: appSecret, callbackURL: callbackURL, frozenClock: frozenClock)
        return NIMSandboxHelpers(rig: try await SandboxRig.start(server), recorder: recorder)
    }

    /// A NIM sandbox server (not started), through its descriptor unless the clock is frozen.
    static func makeServer(appKey: String, appSecret: String, callbackURL: String?, frozenClock: Bool) throws -> SandboxServer {
        guard frozenClock else {
            return try NIMSandbox.server(SandboxOptions(appKey: appKey, appSecret: appSecret, callbackURL: callbackURL))
        }
        let clock = SandboxClock(base: TestClock())
        return SandboxServer(vendor: NIMSandbox(appKey: appKey, appSecret: appSecret, callbackURL: callbackURL, clock: clock), clock: clock)
    }

    /// Runs `body` against a fresh sandbox and always stops it (and its callback recorder) afterwards.
    static func with(callbacks: Bool = true, frozenClock: Bool = false, _ body: (NIMSandboxHelpers) async throws -> Void) async throws {
        let sandbox = try await start(callbacks: callbacks, frozenClock: frozenClock)
        do {
            try await body(sandbox)
        } catch {
            await sandbox.stop()
            throw error
        }
        await sandbox.stop()
    }

    func stop() async {
        _ = await vendor.waitForCallbacks(timeoutMs: 2000)
        await rig.stop()
        await recorder?.stop()
    }

    /// NIM's request signature: `CheckSum = SHA1(secret + Nonce + CurTime)`, CurTime in seconds.
    static func signedHeaders(appKey: String = appKey, secret: String = appSecret, curTime: String? = nil,
                              nonce: String = "4tgggergigwow323t23t") -> [(name: String, value: String)] {
        let time = curTime ?? String(Int64(Date().timeIntervalSince1970))
        return [("AppKey", appKey), ("Nonce", nonce), ("CurTime", time), ("CheckSum", Hashing.sha1Hex(secret + nonce + time))]
    }

    /// POSTs a form signed as NIM documents (or with the given overrides) and returns the answer.
    @discardableResult
    func call(_ path: String, _ fields: [(String, String)], appKey: String = appKey, secret: String = appSecret,
              curTime: String? = nil, nonce: String = "4tgggergigwow323t23t") async throws -> SandboxRig.Reply {
        try await rig.postForm(path, fields, headers: Self.signedHeaders(appKey: appKey, secret: secret, curTime: curTime, nonce: nonce))
    }

    func createUsers(_ accids: String...) async throws {
        for accid in accids { try await call("/user/create.action", [("accid", accid)]) }
    }

    func sendText(from: String, to: String, _ text: String, ope: Int = 0, option: String? = nil) async throws -> JSONValue {
        var fields = [("from", from), ("ope", String(ope)), ("to", to), ("type", "0"),
                      ("body", JSONValue.object(["msg": .string(text)]).jsonString())]
        if let option { fields.append(("option", option)) }
        return try await call("/msg/sendMsg.action", fields).json
    }

    func advanceClock(_ ms: Int64) { rig.advanceClock(byMs: ms) }
}
