import Foundation
import IMCore
import IMMapping
import IMRelay
import Testing
import IMOutbox

/// The shipped cross-vendor custom types (mappings/custom/*.yaml) going vendor → neutral → vendor, with
/// the exact wire bodies each vendor gets, and the fallback text where a vendor has no form for a type.
@Suite struct CustomTypesAcrossVendorsTests {
    let codecs = VendorCodec.all()

    func relay(_ from: String, _ wire: String, _ body: [String: JSONValue], to target: String) throws -> (wire: String, body: [String: JSONValue]) {
        let (content, _) = try codecs[from]!.decode(wire, body)
        return try codecs[target]!.encode(content, nil)
    }

    /// The RongCloud expansion guide's order card: yuan on WuKong, RongCloud and JMessage, fen on NIM.
    @Test func orderCardOnEveryVendor() throws {
        let wukong: [String: JSONValue] = ["order_no": "A1001", "title": "蓝牙耳机", "price": 12.5, "url": "https://shop.example/o/A1001"]
        let (content, _) = try codecs["wukong"]!.decode("101", wukong)
        #expect(content == .custom(CustomContent(raw: "order_card",
                                                 payload: #"{"amount_cents":1250,"order_id":"A1001","title":"蓝牙耳机","url":"https://shop.example/o/A1001"}"#)))
        let rc = try relay("wukong", "101", wukong, to: "rongcloud")
        #expect(rc.wire == "App:OrderMsg")
        #expect(rc.body == ["orderId": "A1001", "title": "蓝牙耳机", "amount": 12.5, "detailUrl": "https://shop.example/o/A1001"])
        let nim = try relay("rongcloud", rc.wire, rc.body, to: "nim")
        #expect(nim.wire == "100")
        #expect(nim.body == ["type": "order", "data": ["orderId": "A1001", "title": "蓝牙耳机", "amountFen": 1250, "url": "https://shop.example/o/A1001"]])
        let jm = try relay("nim", nim.wire, nim.body, to: "jmessage")
        #expect(jm.wire == "custom")
        #expect(jm.body == ["type": "order", "order_id": "A1001", "title": "蓝牙耳机", "amount": 12.5, "url": "https://shop.example/o/A1001"])
        let back = try relay("jmessage", jm.wire, jm.body, to: "wukong")
        #expect(back.wire == "101" && back.body == wukong, "all the way round: \(back.body)")
    }

    /// The WuKongIM custom-message guide's GIF: a WuKong app type (a missing width/height is 100), built in elsewhere.
    @Test func gifFromWuKongWithoutSize() throws {
        let wukong: [String: JSONValue] = ["url": "https://f.example/a.gif"]
        let (content, _) = try codecs["wukong"]!.decode("3", wukong)
        #expect(content == .gif(GIFContent(MediaAttachment(remoteURL: "https://f.example/a.gif", width: 100, height: 100, transferState: .needsDownload))))
        #expect(try relay("wukong", "3", wukong, to: "rongcloud") == ("RC:GIFMsg", ["remoteUrl": "https://f.example/a.gif", "width": 100, "height": 100]))
        let nim = try relay("wukong", "3", wukong, to: "nim")
        #expect(nim.wire == "1" && nim.body == ["url": "https://f.example/a.gif", "w": 100, "h": 100, "ext": "gif"])
        let jm = try relay("wukong", "3", wukong, to: "jmessage")
        #expect(jm.wire == "image" && jm.body["format"] == "gif" && jm.body["media_id"] == "https://f.example/a.gif")
        #expect(try codecs["nim"]!.decode(nim.wire, nim.body).0.kind == .gif, "NIM's image with ext gif reads back as a GIF")
    }

    /// The WuKongIM custom-message guide's contact card: WuKong type 7 ⇄ RongCloud RC:CardMsg ⇄ NIM type-100 ⇄ JMessage custom body.
    @Test func contactCardOnEveryVendor() throws {
        let wukong: [String: JSONValue] = ["uid": "u9", "name": "小明", "avatar": "https://f.example/u9.png"]
        #expect(try relay("wukong", "7", wukong, to: "rongcloud") == ("RC:CardMsg", ["userId": "u9", "name": "小明", "portraitUri": "https://f.example/u9.png"]))
        #expect(try relay("wukong", "7", wukong, to: "nim")
                == ("100", ["type": "imbridge.card", "data": ["userID": "u9", "name": "小明", "avatar": "https://f.example/u9.png"]]))
        #expect(try relay("wukong", "7", wukong, to: "jmessage")
                == ("custom", ["type": "card", "username": "u9", "nickname": "小明", "avatar": "https://f.example/u9.png"]))
    }

    /// The NIM custom-message guide's NIM attachment {"title","subTitle"} (no discriminator) reaches WuKong and RongCloud as
    /// their app types and JMessage, which has no form for it, as the type's fallback text.
    @Test func titleCardAndItsFallback() throws {
        let nim: [String: JSONValue] = ["title": "Hello", "subTitle": "World"]
        let (content, _) = try codecs["nim"]!.decode("100", nim)
        #expect(try relay("nim", "100", nim, to: "wukong") == ("110", ["title": "Hello", "sub_title": "World"]),
                "110: the WuKongIM custom-message guide registers 102 as a location")
        #expect(try relay("nim", "100", nim, to: "rongcloud") == ("App:TitleMsg", ["title": "Hello", "subTitle": "World"]))
        let fallbacks = CustomTypeFallbacks(mappings: .shipped, vendors: ["jm": "jmessage", "wk": "wukong"])
        #expect(fallbacks.text(for: content, expansion: [:], target: "jm") == "Hello — World")
        #expect(fallbacks.text(for: content, expansion: [:], target: "wk") == nil, "WuKong carries it")
    }

    /// A deployment whose JMessage app has no order card: the card falls back to its template, with the
    /// expansion's current status and the link on its own line.
    @Test func orderCardFallbackShowsTheExpansionStatus() throws {
        let directory = try TemporaryMappings(files: ["custom/order_card.yaml": """
            name: order_card
            fields: {order_id: {type: string, required: true}, title: string, amount_cents: int, url: string}
            expansion: {status: 待确认}
            fallback:
              text: "[订单] {title} #{order_id} ¥{amount_cents|yuan} ({expansion.status})"
              link: url
            vendors:
              wukong: {wire: 101, fields: {order_id: order_no, title: title, amount_cents: {wire: price, transform: yuan_cents}, url: url}}
            """])
        let set = try MappingSet.load(overrides: directory.url)
        #expect(set.customType(named: "order_card")?.vendors == ["wukong"])
        let (content, _) = try VendorCodec.make("wukong", set).decode("101", ["order_no": "A1", "title": "耳机", "price": "99.9", "url": "https://s/o/A1"])
        let fallbacks = CustomTypeFallbacks(mappings: set, vendors: ["jm": "jmessage", "rc": "rongcloud"])
        #expect(fallbacks.text(for: content, expansion: ["status": "已支付"], target: "jm") == "[订单] 耳机 #A1 ¥99.90 (已支付)\nhttps://s/o/A1")
        #expect(fallbacks.text(for: content, expansion: [:], target: "rc") == "[订单] 耳机 #A1 ¥99.90 (待确认)\nhttps://s/o/A1",
                "no expansion yet: the declared initial status")
    }
}

/// A temporary directory laid out like `mappings/`, removed when the value goes away.
final class TemporaryMappings {
    let url: URL
    init(files: [String: String]) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-mappings-\(UUID().uuidString)")
        for (path, text) in files {
            let file = url.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: file, atomically: true, encoding: .utf8)
        }
    }
    deinit { try? FileManager.default.removeItem(at: url) }
}
