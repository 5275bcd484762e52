import Foundation
import IMAdapterKit
import IMCore
import IMHTTP
import IMLab
import IMMapping
import IMVendors
import Testing

/// The WuKongIM custom-message guide's WuKong app types through the real bridge and sandboxes: a WuKong user sends 102, 103 and
/// 104 as the seed's SDK writes them; RongCloud, NIM and JMessage store their own native location, card
/// and image; read back from each target's history, every copy writes the original WuKong payload again —
/// but JMessage's image, which holds JMessage's own upload of the picture (a `media_id` for the URL: JMessage
/// takes no URLs, docs/adapters/jmessage.md, "Media ids"), so the picture is served here and compared.
@Suite struct SeedTypesEndToEndTests {
    static let payloads: [[String: JSONValue]] = [
        ["type": 102, "latitude": 39.908722, "longitude": 116.397499, "address": "北京市东城区东长安街", "title": "天安门"],
        ["type": 103, "uid": "u_1001", "name": "张三", "avatar": "https://cdn.example/a/u_1001.png", "phone": "13800138000",
         "email": "zhangsan@example.com"],
        ["type": 104, "url": "https://cdn.example/i/p.jpg", "width": 426.5, "height": 320, "original_size": 183204, "compressed_size": 40960,
         "thumbnail": "/9j/4AAQSkZJRgABAQ=="],
    ]

    @Test func relayedCopiesComeBackAsTheSeedTypes() async throws {
        let picture = Array("a picture".utf8)
        let host = HTTPServer { _ in HTTPResponseData(status: 200, headers: [("Content-Type", "image/jpeg")], body: picture) }
        try await host.start()
        defer { Task { await host.stop() } }
        let payloads = Self.payloads.map { payload in
            payload["url"] == nil ? payload : payload.merging(["url": .string(host.baseURL + "/i/p.jpg")]) { _, new in new }
        }
        let env = try await InProcessBridge.start(
            [BridgeLab.Member("wk", "wukong"), BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member("yx", "nim"),
             BridgeLab.Member("jm", "jmessage")],
            routes: route("wk:group:*", "rc:group:*", direction: "forward") + route("wk:group:seedg", "yx:group:1300000401", direction: "forward")
                + route("wk:direct:*", "jm:direct:*", direction: "forward"))
        defer { Task { await env.stop() } }
        // The NIM copies go into a team made beforehand (NIM refuses team messages into teams it does not have).
        try await env.lab.seedGroup("yx", "1300000401", owner: "wk_alice", members: [])
        let codec = try #require(Vendors.named("wukong")).adapter.contentCodec(ContentRegistry(), MappingSet.shipped.table("wukong"))
        let wk = try await env.users("wk")
        // JMessage groups are created by the server (numeric ids): its copies go through a direct chat,
        // between users that exist there.
        let jmUsers = try #require(try await env.users("jm") as? any UserProvisioning)
        for user in ["wk_alice", "wk_bobby"] { try await jmUsers.ensureUser(UserProfile(id: UserID(user))) }
        let group = ConversationRef.group("seedg"), chat = ConversationRef.direct("alice", "bobby")
        for conversation in [group, chat] {
            for payload in payloads {
                var body = payload
                let type = body.removeValue(forKey: "type")!.int64Value!
                let coded = try codec.decode(WireContent(type: String(type), body: body))
                _ = try await wk.send(OutgoingMessage(conversation: conversation, sender: "alice", content: coded.content,
                                                      vendorExtras: coded.vendorExtras))
            }
        }
        let targets: [(BackendID, ConversationRef)] = [("rc", group), ("yx", .group("1300000401")), ("jm", .direct("wk_alice", "wk_bobby"))]
        for (target, conversation) in targets {
            #expect(try await eventually { try await env.lab.messages(target).count == 3 }, "\(target) got all three")
            let backend = try await env.users(target)
            let page = try await backend.history(HistoryQuery(conversation: conversation, limit: 10, viewer: conversation.kind == .group ? "alice" : nil))
            let kinds = page.messages.map(\.content.kind)
            #expect(Set(kinds) == [.location, .card, .image], "\(target) stores its native forms: \(kinds)")
            for message in page.messages {
                let wire = try codec.encode(CodedContent(message.content, vendorExtras: message.vendorExtras))
                var written = wire.body
                written["type"] = .int(Int64(wire.type)!)
                if target == "jm", let attachment = message.content.attachments.first, message.content.kind == .image {
                    let transfer = try #require(backend as? any MediaTransferring)
                    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("seed-\(UUID().uuidString)").path
                    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                    let downloaded = try await transfer.download(attachment, into: directory)
                    #expect(try Data(contentsOf: URL(fileURLWithPath: try #require(downloaded.localPath))) == Data(picture),
                            "JMessage's upload holds the picture")
                    written["url"] = payloads.compactMap { $0["url"] }.first
                    #expect(written["original_size"] == .int(Int64(picture.count)), "the size is the upload's: \(String(describing: written["original_size"]))")
                    written["original_size"] = payloads.compactMap { $0["original_size"] }.first
                }
                #expect(payloads.contains(written), "\(target) → WuKong wrote \(JSONValue.object(written).jsonString())")
            }
        }
    }
}
