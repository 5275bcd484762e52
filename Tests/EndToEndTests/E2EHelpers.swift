import Foundation
import IMBridgeApp
import IMLab
import IMServer
import IMVendors
import IMCore
import IMHTTP
import IMRelay

/// Polls `condition` until it holds or `seconds` pass (bounded waits only; no fixed sleeps).
func eventually(_ seconds: Double = 20, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(nanoseconds: 25_000_000)
    }
    return try await condition()
}

/// A lab with a bridge in this process.
struct InProcessBridge {
    let lab: BridgeLab
    let bridge: Bridge
    let listener: BridgeListener
    let registry: ContentRegistry

    static func start(_ members: [BridgeLab.Member], routes: String, mappings: String? = nil) async throws -> InProcessBridge {
        let listener = BridgeListener(host: "127.0.0.1", port: 0)
        try await listener.start()
        let lab = try await BridgeLab(members: members, callbackBase: listener.baseURL)
        let registry = try ContentRegistry([DemoOrderCard.self])
        let bridge = try await lab.startBridge(listener: listener, routes: routes, registry: registry, mappings: mappings)
        return InProcessBridge(lab: lab, bridge: bridge, listener: listener, registry: registry)
    }

    func users(_ name: BackendID) async throws -> any IMBackend { try await lab.userBackend(name, registry: registry) }

    /// Records of one conversation on one sandbox, in order.
    func records(_ name: BackendID, _ conversationID: String) async throws -> [JSONValue] {
        try await lab.messages(name).filter { $0["conversation_id"]?.stringValue == conversationID && $0["kind"] != "command" }
    }

    func post(_ path: String, body: String, headers: [(name: String, value: String)] = [],
              contentType: String = "application/json") async throws -> HTTPResponseData {
        try await HTTPClientWrapper().send(OutboundRequest(method: "POST", url: listener.baseURL + path,
                                                           headers: headers + [("Content-Type", contentType)], body: Array(body.utf8)))
    }

    func stop() async {
        await bridge.stop()
        await lab.stop()
    }
}

extension BridgeLab {
    /// Seeds a group on one of the lab's sandboxes under a chosen id (`POST /_sandbox/groups`, test-only
    /// control), as an operator who created it beforehand would have it: NIM and JMessage refuse a group
    /// message into a group they do not have, or from outside it (docs/adapters/<vendor>.md,
    /// "Conversations"), and give new groups ids of their own. NIM tids and JMessage gids are numbers.
    func seedGroup(_ name: BackendID, _ id: String, owner: String, members: [String], groupName: String? = nil) async throws {
        var body: [String: JSONValue] = ["id": .string(id), "owner": .string(owner), "members": .array(members.map(JSONValue.string))]
        if let groupName { body["name"] = .string(groupName) }
        let reply = try await HTTPClientWrapper().send(.json(url(of: name) + "/_sandbox/groups", JSONValue.object(body).jsonData()))
        guard reply.status == 200 else {
            throw IMError(.invalidArgument, "seeding group \(id) on \(name): \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
        }
    }
}

/// A route for tests of other things than groups: into the group of the same id (`group_ids: same`), as the
/// sandboxes' channels and seeded groups are named; the portal tests (`PortalsEndToEndTests`) write their own.
func route(_ from: String, _ to: String, direction: String = "both") -> String {
    "  - from: \"\(from)\"\n    to: \"\(to)\"\n    direction: \(direction)\n    group_ids: same\n"
}
