import Foundation
import IMCore

/// The demo's conversation, step by step. Each step acts on one sandbox through an adapter (as an
/// app's server would) and waits until the other sandbox's `/_sandbox/messages` shows the result.
struct DemoScript {
    let lab: BridgeLab
    let log: @Sendable (String) -> Void
    let wk: any IMBackend
    let rc: any IMBackend
    let group = ConversationRef.group("g1")
    var failures = 0

    init(lab: BridgeLab, log: @escaping @Sendable (String) -> Void, wk: any IMBackend, rc: any IMBackend) {
        self.lab = lab
        self.log = log
        self.wk = wk
        self.rc = rc
    }

    /// Waits up to 15 s for a record on `side` that `match` accepts.
    mutating func expect(_ what: String, on side: BackendID, _ match: @escaping (JSONValue) -> Bool) async throws {
        let deadline = Date().addingTimeInterval(15)
        let started = Date()
        while Date() < deadline {
            if try await lab.messages(side).contains(where: match) {
                log(String(format: "    ✔ %@ (%.0f ms)", what, Date().timeIntervalSince(started) * 1000))
                return
            }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        failures += 1
        log("    ✘ \(what): not there after 15 s")
    }

    func send(_ backend: any IMBackend, _ sender: UserID, _ content: MessageContent, expansion: [String: String]? = nil) async throws -> Message {
        try await backend.send(OutgoingMessage(conversation: group, sender: sender, content: content, expansion: expansion))
    }

    static func `is`(_ record: JSONValue, kind: String, from: String, text: String? = nil) -> Bool {
        record["kind"]?.stringValue == kind && record["from"]?.stringValue == from
            && (text == nil || record["text"]?.stringValue == text)
    }

    mutating func play() async throws -> Bool {
        log("WuKong → RongCloud")
        log("  alice (WuKong) says hello")
        let hello = try await send(wk, "alice", .text("你好，融云！"))
        try await expect("RongCloud shows wk_alice's text", on: "rc") { Self.is($0, kind: "text", from: "wk_alice", text: "你好，融云！") }

        log("  alice sends a photo")
        let photo = try await send(wk, "alice", .image(ImageContent(MediaAttachment(
            remoteURL: "https://media.example.test/photos/bund.jpg", mimeType: "image/jpeg", size: 48_213, width: 1280, height: 853))))
        try await expect("RongCloud shows the image (RC:ImgMsg)", on: "rc") { Self.is($0, kind: "image", from: "wk_alice") }

        log("  alice sends a GIF (WuKong type 3)")
        _ = try await send(wk, "alice", .gif(GIFContent(MediaAttachment(remoteURL: "https://media.example.test/gif/wave.gif",
                                                                        size: 90_112, width: 200, height: 150))))
        try await expect("RongCloud shows the GIF (RC:GIFMsg)", on: "rc") { Self.is($0, kind: "gif", from: "wk_alice") }

        log("  shop posts order card A1001 with status 待支付 in its expansion")
        let card = DemoOrderCard(orderID: "A1001", title: "龙井茶 250g", amountCents: 12_800)
        let order = try await send(wk, "shop", .custom(CustomContent(card)), expansion: ["status": "待支付"])
        try await expect("RongCloud shows the order card (App:OrderMsg) with status 待支付", on: "rc") {
            Self.is($0, kind: "custom", from: "wk_shop") && $0["expansion"]?["status"] == "待支付"
        }

        log("  the buyer pays: expansion status → 已支付")
        guard let wkExpansion = wk as? any ExpansionUpdating else { throw IMError(.unsupported, "WuKong backend has no expansions") }
        _ = try await wkExpansion.updateExpansion(of: order.id, in: group, by: "buyer", .set(["status": "已支付"]))
        try await expect("RongCloud's order card says 已支付", on: "rc") {
            Self.is($0, kind: "custom", from: "wk_shop") && $0["expansion"]?["status"] == "已支付"
        }

        log("  alice edits her hello (RongCloud has no edit: a notice follows)")
        guard let wkEditing = wk as? any Editing else { throw IMError(.unsupported, "WuKong backend has no edits") }
        try await wkEditing.edit(hello.id, in: group, by: "alice", content: .text("你好，融云！👋"))
        try await expect("RongCloud shows the edit notice", on: "rc") { ($0["text"]?.stringValue ?? "").contains("✎ 你好，融云！👋") }

        log("  bob reacts 👍 to the hello (RongCloud has no reactions: a notice follows)")
        guard let wkReacting = wk as? any Reacting else { throw IMError(.unsupported, "WuKong backend has no reactions") }
        _ = try await wkReacting.toggleReaction("👍", on: hello.id, in: group, by: "bob")
        try await expect("RongCloud shows the reaction notice", on: "rc") { ($0["text"]?.stringValue ?? "").contains("👍 +1") }

        log("  alice recalls the photo")
        guard let wkRecalling = wk as? any Recalling else { throw IMError(.unsupported, "WuKong backend has no recall") }
        try await wkRecalling.recall(photo.id, in: group, by: "alice")
        try await expect("RongCloud's copy of the photo is recalled", on: "rc") { Self.is($0, kind: "image", from: "wk_alice") && $0["recalled"] == true }

        log("RongCloud → WuKong")
        log("  carol (RongCloud) answers")
        let answer = try await send(rc, "carol", .text("收到，来自融云 🙂"))
        try await expect("WuKong shows rc_carol's text", on: "wk") { Self.is($0, kind: "text", from: "rc_carol", text: "收到，来自融云 🙂") }

        log("  carol sends a photo")
        _ = try await send(rc, "carol", .image(ImageContent(MediaAttachment(remoteURL: "https://media.example.test/photos/tea.jpg",
                                                                           mimeType: "image/jpeg", width: 800, height: 600))))
        try await expect("WuKong shows rc_carol's image", on: "wk") { Self.is($0, kind: "image", from: "rc_carol") }

        log("  carol marks the order shipped on RongCloud's copy: expansion delivery → 已发货")
        guard let rcExpansion = rc as? any ExpansionUpdating else { throw IMError(.unsupported, "RongCloud backend has no expansions") }
        let rcOrder = try await rc.history(HistoryQuery(conversation: group, anchor: .latest, limit: 50)).messages
            .first { if case .custom = $0.content { $0.sender == "wk_shop" } else { false } }
        guard let rcOrder else { throw IMError(.notFound, "RongCloud has no copy of the order card") }
        _ = try await rcExpansion.updateExpansion(of: rcOrder.id, in: group, by: "carol", .set(["delivery": "已发货"]))
        try await expect("WuKong's original order card has delivery 已发货 and still 已支付", on: "wk") {
            Self.is($0, kind: "custom", from: "shop") && $0["expansion"]?["delivery"] == "已发货" && $0["expansion"]?["status"] == "已支付"
        }

        log("  carol recalls her answer")
        guard let rcRecalling = rc as? any Recalling else { throw IMError(.unsupported, "RongCloud backend has no recall") }
        try await rcRecalling.recall(answer.id, in: group, by: "carol")
        try await expect("WuKong's copy of the answer is recalled", on: "wk") { Self.is($0, kind: "text", from: "rc_carol") && $0["recalled"] == true }

        // Exactly once: 4 WuKong originals + 2 copies; 2 RongCloud originals + 6 copies (4 messages, 2 notices).
        try await Task.sleep(nanoseconds: 300_000_000)
        let wkCount = try await lab.messages("wk").filter { $0["conversation_id"] == "g1" && $0["kind"] != "command" }.count
        let rcCount = try await lab.messages("rc").filter { $0["conversation_id"] == "g1" && $0["kind"] != "command" }.count
        if wkCount != 6 || rcCount != 8 {
            failures += 1
            log("    ✘ expected 6 messages on WuKong and 8 on RongCloud, found \(wkCount) and \(rcCount)")
        } else {
            log("    ✔ no duplicates and no echoes: 6 messages on WuKong, 8 on RongCloud")
        }
        return failures == 0
    }
}
