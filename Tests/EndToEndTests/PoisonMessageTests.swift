import BridgeTestSupport
import Foundation
import IMAdapterKit
import IMBridgeApp
import IMCore
import IMHTTP
import IMLab
import IMRelay
import JMessage
import Testing

/// One correctly authenticated message that does not convert must not hold up a
/// vendor's stream. Each test sends a poison message and then 100 good ones through the real sandbox →
/// bridge → target; the 100 arrive in order, and the poison one is an inbound dead letter that
/// `imbridge deadletters list` shows.
@Suite(.serialized) struct PoisonMessageTests {
    /// An order card whose amount fails `DemoOrderCard.validate()` (sent raw: the sender does not check).
    static let invalidCard = MessageContent.custom(CustomContent(raw: "order_card",
                                                                  payload: #"{"order_id":"A1","title":"bad","amount_cents":-5}"#))

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var source: (BackendID, String)
        var target: (BackendID, String)
        var poison: MessageContent
        /// What the dead letter's reason must mention.
        var reason: String
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "RongCloud RC:ImgMsg without imageUri", source: ("rc", "rongcloud"), target: ("wk", "wukong"),
             poison: .unsupported(UnsupportedContent(vendor: "rongcloud", vendorType: "RC:ImgMsg", raw: #"{"content":"aGk=","extra":""}"#)),
             reason: "imageUri"),
        Case(name: "NIM PICTURE without url", source: ("yx", "nim"), target: ("wk", "wukong"),
             poison: .unsupported(UnsupportedContent(vendor: "nim", vendorType: "1", raw: #"{"name":"a.png","md5":"0f","ext":"png","w":1,"h":1,"size":3}"#)),
             reason: "url"),
        Case(name: "NIM custom failing validate()", source: ("yx", "nim"), target: ("wk", "wukong"), poison: invalidCard,
             reason: "validate"),
        Case(name: "WuKong custom failing validate()", source: ("wk", "wukong"), target: ("rc", "rongcloud"), poison: invalidCard,
             reason: "validate"),
        // The JMessage sandbox, like the vendor, refuses media messages without their media fields, so
        // the poison message there is an app type whose value fails validate(), found by the poller.
        Case(name: "JMessage poller page with a custom message failing validate()", source: ("jm", "jmessage"), target: ("wk", "wukong"),
             poison: invalidCard, reason: "validate"),
    ]

    @Test(arguments: cases) func aPoisonMessageIsSetAsideAndTheHundredAfterItArriveInOrder(_ poisonCase: Case) async throws {
        let (source, target) = (poisonCase.source.0, poisonCase.target.0)
        let env = try await InProcessBridge.start([BridgeLab.Member(source, poisonCase.source.1), BridgeLab.Member(target, poisonCase.target.1)],
                                                  routes: route("\(source):group:*", "\(target):group:*", direction: "forward"))
        defer { Task { await env.stop() } }
        let users = try await env.users(source)
        let group = try await Self.group(on: users)
        _ = try await users.send(OutgoingMessage(conversation: group, sender: "alice", content: poisonCase.poison))
        for n in 1...100 {
            _ = try await users.send(OutgoingMessage(conversation: group, sender: "alice", content: .text("good \(n)")))
        }
        let arrived = await eventually(30) { (try? await env.records(target, group.id).count) == 100 }
        let texts = try await env.records(target, group.id).compactMap { $0["text"]?.stringValue }
        #expect(arrived, "\(texts.count) of 100 arrived")
        #expect(texts == (1...100).map { "good \($0)" })

        let letters = try env.bridge.store.read { try $0.inboundDeadLetters() }
        #expect(letters.count == 1, "\(letters)")
        let letter = try #require(letters.first)
        #expect(letter.backend == source)
        #expect(letter.reason.contains(poisonCase.reason), "\(letter.reason)")
        #expect(!letter.payload.isEmpty)
        let listing = try DeadLetters.listing(env.bridge.store)
        #expect(listing.contains("1 inbound dead letter(s)") && listing.contains("in#\(letter.id) \(source) \(letter.key)"), "\(listing)")
        #expect(listing.contains("0 outbound dead letter(s)"), "\(listing)")
        #expect(env.bridge.engine.metrics.value("imbridge_inbound_dead_letters_total", ["backend": source.rawValue]) == 1)
        #expect(env.bridge.engine.metrics.total("imbridge_callbacks_refused_total") == 0, "an authenticated poison message is not refused")
    }

    /// A WuKong `msg.notify` batch with a poison message between two good ones, posted to the bridge's
    /// real listener: answered 200, the good ones relay, only the bad one is set aside; the same batch
    /// redelivered changes nothing (one dead letter, one copy each).
    @Test func aWuKongBatchRelaysTheGoodMessagesAndSetsAsideOnlyTheBadOne() async throws {
        let env = try await InProcessBridge.start([BridgeLab.Member("wk", "wukong"), BridgeLab.Member("rc", "rongcloud")],
                                                  routes: route("wk:group:*", "rc:group:*", direction: "forward"))
        defer { Task { await env.stop() } }
        func message(_ id: Int, _ payload: String) -> String {
            let encoded = Data(payload.utf8).base64EncodedString()
            return #"{"message_id":\#(id),"message_seq":\#(id),"client_msg_no":"c\#(id)","from_uid":"alice","channel_id":"b1","channel_type":2,"timestamp":\#(Int(Date().timeIntervalSince1970)),"payload":"\#(encoded)"}"#
        }
        let poison = #"{"type":10000,"content_type":"order_card","data":"{\"order_id\":\"A1\",\"title\":\"t\",\"amount_cents\":-5}"}"#
        let batch = "[" + [message(901, #"{"type":1,"content":"before"}"#), message(902, poison),
                           message(903, #"{"type":1,"content":"after"}"#), #"{"message_id":"not a number"}"#].joined(separator: ",") + "]"
        let secret = [(name: "X-IMBridge-Secret", value: BridgeLab.webhookSecret)]
        for _ in 0..<2 {
            let answer = try await env.post("/callbacks/wk?event=msg.notify", body: batch, headers: secret)
            #expect(answer.status == 200, "\(answer.bodyString)")
        }
        #expect(await eventually { (try? await env.records("rc", "b1").count) == 2 })
        #expect(await env.bridge.engine.waitUntilIdle())
        #expect(try await env.records("rc", "b1").compactMap { $0["text"]?.stringValue } == ["before", "after"])
        let letters = try env.bridge.store.read { try $0.inboundDeadLetters() }
        #expect(letters.map(\.key) == ["msg:902", "msg:not a number"], "\(letters.map(\.reason))")
        #expect(letters.first?.reason.contains("validate") == true)
        // A forged batch is still refused, not set aside.
        let forged = try await env.post("/callbacks/wk?event=msg.notify", body: batch, headers: [("X-IMBridge-Secret", "wrong")])
        #expect(forged.status == 401)
        #expect(try env.bridge.store.read { try $0.inboundDeadLetterCount() } == 2)
    }

    /// The operator's way out: fix the mapping, `deadletters retry`, and the message relays.
    @Test func aSetAsideMessageRelaysAfterTheMappingIsFixedAndRetried() async throws {
        let env = try await InProcessBridge.start([BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member("wk", "wukong")],
                                                  routes: route("rc:group:*", "wk:group:*", direction: "forward"))
        defer { Task { await env.stop() } }
        let users = try await env.users("rc")
        // An image whose URL is in `remoteUrl` (an app's own field), not `imageUri`: the shipped mapping cannot convert it.
        _ = try await users.send(OutgoingMessage(conversation: .group("fix"), sender: "alice", content: .unsupported(UnsupportedContent(
            vendor: "rongcloud", vendorType: "RC:ImgMsg", raw: #"{"content":"aGk=","remoteUrl":"https://img.example/a.png"}"#))))
        _ = try await users.send(OutgoingMessage(conversation: .group("fix"), sender: "alice", content: .text("after")))
        #expect(await eventually { (try? await env.records("wk", "fix").count) == 1 })
        #expect(await eventually { (try? env.bridge.store.read { try $0.inboundDeadLetterCount() }) == 1 })

        // The fix: an override of rongcloud.yaml reading the image URL from `remoteUrl`.
        let overrides = env.lab.directory + "/mappings"
        try FileManager.default.createDirectory(atPath: overrides, withIntermediateDirectories: true)
        let checkout = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let shipped = try String(contentsOf: checkout.appendingPathComponent("Sources/IMMapping/mappings/rongcloud.yaml"), encoding: .utf8)
        let fixed = shipped.replacingOccurrences(of: "url: {wire: imageUri, required: true}", with: "url: {wire: remoteUrl, required: true}")
        #expect(fixed != shipped)
        try fixed.write(toFile: overrides + "/rongcloud.yaml", atomically: true, encoding: .utf8)
        let config = env.lab.directory + "/retry.yaml"
        try env.lab.configYAML(store: env.bridge.store.path, listen: "127.0.0.1:0", routes: route("rc:group:*", "wk:group:*", direction: "forward"),
                               mappings: overrides).write(toFile: config, atomically: true, encoding: .utf8)

        // The command itself lists it (the binary, against the running bridge's store).
        let listed = try await IMBridgeCLI.run(["deadletters", "list", "--config", config])
        #expect(listed.status == 0 && listed.output.contains("1 inbound dead letter(s)") && listed.output.contains(" rc msg:"), "\(listed.output)")
        #expect(listed.output.contains("imageUri"), "the reason is shown: \(listed.output)")

        // Without the fix a retry keeps it (and says why); with it, it converts and relays.
        let unfixed = try await Bridge.open(config: try BridgeConfig.parse(
            env.lab.configYAML(store: env.bridge.store.path, listen: "127.0.0.1:0", routes: route("rc:group:*", "wk:group:*", direction: "forward")),
            file: "unfixed.yaml"))
        #expect(try await DeadLetters.retry(unfixed, inbound: []).contains("0 inbound dead letter(s) converted and queued, 1 still not convertible"))
        #expect(try env.bridge.store.read { try $0.inboundDeadLetters() }.first?.retries == 1)
        let retrying = try await Bridge.open(configPath: config)
        let report = try await DeadLetters.retry(retrying)
        #expect(report.contains("1 inbound dead letter(s) converted and queued"), "\(report)")
        #expect(await eventually { (try? await env.records("wk", "fix").contains { $0["kind"] == "image" }) == true })
        #expect(try env.bridge.store.read { try $0.inboundDeadLetterCount() } == 0)
        #expect(try DeadLetters.listing(env.bridge.store).contains("0 inbound dead letter(s)"))
    }

    /// A group to talk in: any id where groups need not exist. NIM and JMessage refuse a group message
    /// into a group they do not have, or from outside it (docs/adapters/<vendor>.md, "Conversations"), and
    /// assign group ids themselves: there the group is created first (JMessage's directory makes its
    /// admin, every send's sender, a member).
    static func group(on backend: any IMBackend) async throws -> ConversationRef {
        guard backend.capabilities.groupSendRefusals != .none, let directory = backend as? any GroupDirectory,
              let users = backend as? any UserProvisioning else { return .group("p1") }
        for user in ["alice", "bobby"] { try await users.ensureUser(UserProfile(id: UserID(user), name: user)) }
        return .group(try await directory.createGroup(GroupProfile(id: "p1", name: "poison", owner: "alice", members: ["bobby"])))
    }
}
