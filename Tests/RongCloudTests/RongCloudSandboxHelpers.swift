import Foundation
import IMCore
import IMHTTP
import IMSandbox
import RongCloud
import RongCloudSandbox
import SandboxTestSupport

/// A RongCloud sandbox (built through its descriptor, on a free port) whose routing callbacks go to a
/// `CallbackRecorder` answering `ok`. Only what is RongCloud's lives here: signing a request and
/// posting a form written as text; the rest is `SandboxRig`'s and `CallbackRecorder`'s.
struct RongCloudSandboxRig {
    static let appKey = "pvxdm17jxjaor"
    static let secret = "Y1W2MeFwwwRxa0"

    let rig: SandboxRig
    let callbacks: CallbackRecorder

    var sandbox: RongCloudSandbox { rig.server.vendor as! RongCloudSandbox }

    /// Starts a sandbox, runs `body`, then stops it (after pending deliveries, so nothing is in flight).
    static func with(extra: [String: String] = [:], statePath: String? = nil,
                     _ body: (RongCloudSandboxRig) async throws -> Void) async throws {
        let callbacks = CallbackRecorder { _ in .text("ok") }
        let url = try await callbacks.start()
        let rig = try await SandboxRig.start(RongCloudSandbox.descriptor,
                                             SandboxOptions(appKey: appKey, appSecret: secret, callbackURL: url + "/rc/route",
                                                            statePath: statePath, extra: extra))
        let started = RongCloudSandboxRig(rig: rig, callbacks: callbacks)
        do {
            try await body(started)
        } catch {
            await started.stop()
            throw error
        }
        await started.stop()
    }

    func stop() async {
        _ = await sandbox.waitForDeliveries(timeoutMs: 2000)
        await sandbox.stopDeliveries()
        await rig.stop()
        await callbacks.stop()
    }

    /// The four signing headers of the Server API (`prefix` "rc-" gives the `RC-` names).
    static func signedHeaders(nonce: String = "14314", timestamp: String = "1408710653000", key: String = appKey,
                              secret: String = secret, prefix: String = "") -> [(name: String, value: String)] {
        [(prefix + "App-Key", key), (prefix + "Nonce", nonce), (prefix + "Timestamp", timestamp),
         (prefix + "Signature", Hashing.sha1Hex(secret + nonce + timestamp))]
    }

    /// POSTs a form body written as text (`a=1&b=2`), signed unless other headers are given.
    @discardableResult
    func post(_ path: String, _ body: String, headers: [(name: String, value: String)] = signedHeaders()) async throws -> SandboxRig.Reply {
        try await rig.send("POST", path, body: Array(body.utf8), headers: headers + [("Content-Type", "application/x-www-form-urlencoded")])
    }

    /// POSTs a signed JSON body.
    @discardableResult
    func postJSON(_ path: String, _ json: String) async throws -> SandboxRig.Reply {
        try await rig.postJSON(path, json, headers: Self.signedHeaders())
    }

    /// Sends a text message through the Server API; returns its msgUID.
    func sendText(_ text: String, from: String = "u1", to: String = "u2") async throws -> String? {
        let content = FormBody.escape(JSONValue.object(["content": .string(text)]).jsonString())
        let reply = try await post(RCPaths.privatePublish, "fromUserId=\(from)&toUserId=\(to)&objectName=RC:TxtMsg&content=\(content)")
        return reply.json["messageUIDs"]?.arrayValue?.first?["messageUID"]?.stringValue
    }

    /// Form fields of a routing callback body, as a dictionary of first values.
    static func fields(_ request: HTTPRequestData) -> [String: String] {
        Dictionary(request.form.items.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
    }
}

extension SandboxRig.Reply {
    func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
}
