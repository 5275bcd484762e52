import Foundation
import IMBridgeApp
import IMLab
import IMVendors
import IMCore
import IMHTTP
import IMRelay
import IMSandbox
import IMStore

/// The four sandboxes (`wk`, `rc`, `nim`, `jm`) in this process, a callback sink answering 200 to every
/// vendor push, and backends built through the same factories `imbridge` uses.
final class MigrationLab: Sendable {
    static let vendors: [(name: BackendID, vendor: String)] = [("wk", "wukong"), ("rc", "rongcloud"), ("nim", "nim"), ("jm", "jmessage")]
    /// JMessage sends only as its admin.
    static let jmAdmin: UserID = "imbridge"

    let lab: BridgeLab
    let sink: HTTPServer

    init(options: [BackendID: [String: String]] = [:]) async throws {
        let sink = HTTPServer { request in
            if request.method == "GET" && request.path.hasPrefix("/media/") {
                return HTTPResponseData(status: 200, headers: [("Content-Type", "image/png")], body: Array(Self.pixel))
            }
            return HTTPResponseData(status: 200, headers: [("Content-Type", "application/json")], body: Array("{}".utf8))
        }
        _ = try await sink.start()
        self.sink = sink
        lab = try await BridgeLab(members: Self.vendors.map { entry in
            BridgeLab.Member(entry.name, entry.vendor, options: options[entry.name] ?? [:],
                             settings: entry.vendor == "jmessage" ? ["admin": Self.jmAdmin.rawValue, "admin_password": "lab-admin-pass", "poll_interval": "0s"] : [:])
        }, callbackBase: sink.baseURL)
    }

    /// A 1×1 PNG, served by the sink at `/media/…` (an image hosted elsewhere) and written to `pixelPath`.
    static let pixel = Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")!

    var imageURL: String { sink.baseURL + "/media/pixel.png" }
    var sinkHost: String { sink.baseURL.replacingOccurrences(of: "http://", with: "") }

    /// An image a user sends on `backend`: uploaded to the vendor where it stores files, else a link.
    func image(for backend: any IMBackend) async throws -> MediaAttachment {
        if let uploader = backend as? any MediaTransferring, backend.capabilities.support(.media).isNative {
            let path = "\(lab.directory)/pixel-\(UUID().uuidString).png"
            try Self.pixel.write(to: URL(fileURLWithPath: path))
            var local = MediaAttachment.local(path, mimeType: "image/png", size: Int64(Self.pixel.count))
            local.fileName = "pixel.png"
            local.width = 1
            local.height = 1
            return try await uploader.upload(local)
        }
        var remote = MediaAttachment.remote(imageURL, mimeType: "image/png", size: Int64(Self.pixel.count))
        remote.width = 1
        remote.height = 1
        return remote
    }

    /// Writes the seeded conversation on one sandbox through a backend of its own.
    func write(_ seed: Seed, on name: BackendID) async throws {
        let backend = try await backend(name, store: try newStore())
        try await seed.write(through: backend, image: try await image(for: backend))
    }

    func stop() async {
        await lab.stop()
        await sink.stop()
    }

    /// A fresh backend instance (its own process state) on one sandbox.
    func backend(_ name: BackendID, store: BridgeStore) async throws -> any IMBackend {
        guard let member = lab.members.first(where: { $0.name == name }) else { throw IMError(.notFound, "no sandbox \(name)") }
        return try await BackendFactories.make(BackendConfig(name: name, adapter: member.vendor, settings: lab.settings(for: member)),
                                               context: BackendContext(store: store, registry: ContentRegistry()))
    }

    func newStore(_ name: String = UUID().uuidString) throws -> BridgeStore {
        try BridgeStore(path: "\(lab.directory)/\(name).sqlite")
    }

    /// Registers users on every sandbox (each vendor refuses messages between unknown users).
    func provision(_ users: [UserID]) async throws {
        let store = try newStore()
        for (name, _) in Self.vendors {
            guard let backend = try await backend(name, store: store) as? any UserProvisioning else { continue }
            for user in users { try await backend.ensureUser(UserProfile(id: user, name: user.rawValue)) }
        }
    }

    /// `/_sandbox/messages` of one sandbox, only one conversation's records, in stored order.
    func records(_ backend: BackendID, in conversation: ConversationRef) async throws -> [SandboxMessageRecord] {
        let all = try await lab.messages(backend)
        let data = try JSONEncoder().encode(JSONValue.array(all))
        return try JSONDecoder().decode([SandboxMessageRecord].self, from: data)
            .filter { $0.conversationType == conversation.kind.description && $0.conversationID == conversation.id }
    }

    /// The records of a direct conversation between `users` as the sandbox stores them. JMessage sends
    /// only as its admin, so there a message "from" one user is the admin's message to the other with
    /// `extras.imbridge_sender` naming the user (docs/adapters/jmessage.md).
    func records(_ backend: BackendID, between users: (UserID, UserID)) async throws -> [SandboxMessageRecord] {
        let conversation = ConversationRef.direct(users.0, users.1)
        guard backend == "jm" else { return try await records(backend, in: conversation) }
        let pair = [users.0.rawValue, users.1.rawValue]
        return try await records(backend).filter { record in
            guard record.conversationType == "direct" else { return false }
            if record.conversationID == conversation.id { return true }
            return record.from == Self.jmAdmin.rawValue && pair.contains(record.to) && Self.jmSender(record).map(pair.contains) == true
        }
    }

    /// The `imbridge_origin` object anywhere in a stored vendor object: nested objects, JSON held in strings
    /// (RongCloud content, NIM ext) and base64 JSON (WuKong payload).
    static func origin(in value: JSONValue) -> JSONValue? {
        object(containing: OutgoingMessage.originKey, in: value)?[OutgoingMessage.originKey]
    }

    /// The first object that has every one of `keys`, anywhere in `value` (as `origin(in:)` searches).
    static func object(containing keys: String..., in value: JSONValue) -> JSONValue? { object(containing: keys, in: value) }

    static func object(containing keys: [String], in value: JSONValue) -> JSONValue? {
        switch value {
        case .object(let object):
            if keys.allSatisfy({ object[$0] != nil }) { return value }
            for nested in object.values { if let found = self.object(containing: keys, in: nested) { return found } }
        case .array(let items):
            for nested in items { if let found = object(containing: keys, in: nested) { return found } }
        case .string(let text) where text.contains(keys[0]):
            if let parsed = try? JSONValue.parse(text) { return object(containing: keys, in: parsed) }
        case .string(let text) where text.count > 16:
            if let data = Data(base64Encoded: text), let parsed = try? JSONValue.parse(data), parsed.objectValue != nil {
                return object(containing: keys, in: parsed)
            }
        default:
            break
        }
        return nil
    }

    /// NIM keeps no expansions: a copy with values is followed there by an `imbridge.expansion` carrier
    /// naming it (docs/expansions.md). The target's records without the carriers, and each carrier's
    /// (copy id, values set).
    static func carriersApart(_ records: [SandboxMessageRecord]) -> (copies: [SandboxMessageRecord], carried: [(copy: String, set: [String: String])]) {
        var copies: [SandboxMessageRecord] = []
        var carried: [(copy: String, set: [String: String])] = []
        for record in records {
            guard record.raw.jsonString().contains("imbridge.expansion"), let data = object(containing: "msgid", "set", in: record.raw) else {
                copies.append(record)
                continue
            }
            let copy = data["msgid"]?.stringValue ?? data["msgid"]?.int64Value.map(String.init) ?? ""
            carried.append((copy, (data["set"]?.objectValue ?? [:]).compactMapValues(\.stringValue)))
        }
        return (copies, carried)
    }

    static func jmSender(_ record: SandboxMessageRecord) -> String? {
        record.raw["msg_body"]?["extras"]?["imbridge_sender"]?.stringValue
    }

    func records(_ backend: BackendID) async throws -> [SandboxMessageRecord] {
        let data = try JSONEncoder().encode(JSONValue.array(try await lab.messages(backend)))
        return try JSONDecoder().decode([SandboxMessageRecord].self, from: data)
    }

    /// A `bridge.yaml` for these sandboxes with the store at `store` (for the `imbridge` executable): no
    /// routes unless given, then `extra` (top-level keys).
    func configFile(store: String, routes: String = "  []\n", extra: String = "") throws -> String {
        let path = "\(lab.directory)/bridge-\(UUID().uuidString).yaml"
        try (lab.configYAML(store: store, listen: "127.0.0.1:0", routes: routes) + extra).write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// `POST /_sandbox/faults` on one sandbox.
    func fault(_ backend: BackendID, _ body: JSONValue) async throws {
        let response = try await HTTPClientWrapper().send(OutboundRequest(method: "POST", url: lab.url(of: backend) + "/_sandbox/faults",
                                                                          headers: [("Content-Type", "application/json")],
                                                                          body: Array(body.jsonString().utf8)))
        guard (200..<300).contains(response.status) else { throw IMError(.invalidArgument, "fault refused: \(response.status)") }
    }
}
