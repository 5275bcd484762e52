import Foundation
import IMAdapterKit
import IMCore
import IMMapping
import Testing
import WuKong

/// The WuKongIM custom-message guide's own WuKong app types, from the bytes its `encodeWithJSON` writes (the SDK adds `type`):
/// 102 `WKLocationContent`, 103 `WKContactCardContent`, 104 `WKCustomImageContent`. Each decodes to its
/// built-in kind, reaches every other vendor as that vendor's closest native form, and comes back to
/// WuKong as the same type with every field, numbers spelled as the seed wrote them.
@Suite struct SeedTypesTests {
    let codecs = VendorCodec.all()
    var wukongCodec: WuKongContentCodec { codecs["wukong"]!.codec as! WuKongContentCodec }

    /// Payload bytes as the seed's SDK sends them (NSJSONSerialization writes CGFloat 426.5 as `426.5`).
    static let location = #"{"latitude":39.908722,"longitude":116.397499,"address":"北京市东城区东长安街","title":"天安门","type":102}"#
    static let locationWithoutTitle = #"{"latitude":31.2304,"longitude":121.4737,"address":"","type":102}"#
    static let card = #"{"uid":"u_1001","name":"张三","avatar":"https://cdn.example/a/u_1001.png","phone":"13800138000","email":"zhangsan@example.com","type":103}"#
    static let cardMinimal = #"{"uid":"u_1002","name":"李四","avatar":"","type":103}"#
    static let image = #"{"url":"https://cdn.example/i/p.jpg","width":426.5,"height":320,"thumbnail":"/9j/4AAQSkZJRgABAQ==","original_size":183204,"compressed_size":40960,"type":104}"#
    static let imageMinimal = #"{"url":"https://cdn.example/i/q.jpg","width":1080,"height":1920,"type":104}"#

    static let payloads = [location, locationWithoutTitle, card, cardMinimal, image, imageMinimal]

    func wukong(_ payload: String) throws -> (content: MessageContent, kept: [String: JSONValue], object: [String: JSONValue]) {
        let object = try #require(try JSONValue.parse(Data(payload.utf8)).objectValue)
        let coded = try wukongCodec.decode(payload: Data(payload.utf8))
        return (coded.content, coded.vendorExtras, object)
    }

    // MARK: what each payload decodes to

    @Test func locationWithTitleIsALocation() throws {
        let (content, _, _) = try wukong(Self.location)
        #expect(content == .location(LocationContent(latitude: 39.908722, longitude: 116.397499, title: "天安门", address: "北京市东城区东长安街")))
        #expect(content.digest == "[位置] 天安门")
        let (plain, _, _) = try wukong(Self.locationWithoutTitle)
        #expect(plain == .location(LocationContent(latitude: 31.2304, longitude: 121.4737, address: "")),
                "a location of the WuKongIM custom-message guide without a title is still a location (it used to be unsupported)")
    }

    @Test func contactCardKeepsPhoneAndEmail() throws {
        let (content, _, _) = try wukong(Self.card)
        #expect(content == .card(CardContent(userID: "u_1001", name: "张三", avatar: "https://cdn.example/a/u_1001.png",
                                             phone: "13800138000", email: "zhangsan@example.com")))
        #expect(content.digest == "[名片] 张三")
        let (minimal, _, _) = try wukong(Self.cardMinimal)
        #expect(minimal == .card(CardContent(userID: "u_1002", name: "李四", avatar: "")))
    }

    @Test func customImageIsAnImageWithThumbnailAndSize() throws {
        let (content, kept, _) = try wukong(Self.image)
        let fields = try #require(NeutralForm.fields(of: content))
        #expect(content.kind == .image)
        #expect(fields["url"] == "https://cdn.example/i/p.jpg")
        #expect(fields["width"] == 427, "the neutral width is whole pixels; the wire's 426.5 stays for WuKong")
        #expect(fields["height"] == 320)
        #expect(fields["thumbnail"] == "/9j/4AAQSkZJRgABAQ==")
        #expect(fields["size"] == 183204, "original_size is the uploaded file's size")
        #expect(kept[OutgoingMessage.carriedKey]?["wukong"]?["body"]?["compressed_size"] == 40960, "no neutral field: carried")
    }

    // MARK: WuKong → WuKong

    @Test(arguments: payloads)
    func wukongRoundTripIsExact(_ payload: String) throws {
        let (content, kept, object) = try wukong(payload)
        let again = try wukongCodec.encode(content, vendorExtras: kept)
        #expect(again == object, "wrote \(JSONValue.object(again).jsonString())")
    }

    // MARK: closest native forms

    func relay(_ payload: String, to vendor: String) throws -> (wire: String, body: [String: JSONValue]) {
        let (content, kept, _) = try wukong(payload)
        return try codecs[vendor]!.encode(content, kept)
    }

    @Test func locationOnEveryVendor() throws {
        let rc = try relay(Self.location, to: "rongcloud")
        #expect(rc.wire == "RC:LBSMsg")
        #expect(rc.body["latitude"] == 39.908722 && rc.body["longitude"] == 116.397499 && rc.body["poi"] == "天安门")
        let nim = try relay(Self.location, to: "nim")
        #expect(nim.wire == "4" && nim.body["lat"] == 39.908722 && nim.body["lng"] == 116.397499 && nim.body["title"] == "天安门")
        let jm = try relay(Self.location, to: "jmessage")
        #expect(jm.wire == "location" && jm.body["label"] == "天安门" && jm.body["latitude"] == 39.908722)
        #expect(jm.body["extras"]?["imbridge_address"] == "北京市东城区东长安街")
    }

    @Test func cardOnEveryVendor() throws {
        let rc = try relay(Self.card, to: "rongcloud")
        #expect(rc.wire == "RC:CardMsg")
        #expect(rc.body["userId"] == "u_1001" && rc.body["name"] == "张三" && rc.body["portraitUri"] == "https://cdn.example/a/u_1001.png")
        #expect(rc.body[OutgoingMessage.carriedKey]?["wukong"]?["body"]?["phone"] == "13800138000", "RC:CardMsg has no phone: carried")
        let nim = try relay(Self.card, to: "nim")
        #expect(nim.wire == "100" && nim.body["type"] == "imbridge.card")
        #expect(nim.body["data"] == ["userID": "u_1001", "name": "张三", "avatar": "https://cdn.example/a/u_1001.png",
                                      "phone": "13800138000", "email": "zhangsan@example.com"])
        let jm = try relay(Self.card, to: "jmessage")
        #expect(jm.wire == "custom" && jm.body["type"] == "card" && jm.body["username"] == "u_1001")
        #expect(jm.body["phone"] == "13800138000" && jm.body["email"] == "zhangsan@example.com")
    }

    @Test func imageOnEveryVendor() throws {
        let rc = try relay(Self.image, to: "rongcloud")
        #expect(rc.wire == "RC:ImgMsg" && rc.body["imageUri"] == "https://cdn.example/i/p.jpg" && rc.body["content"] == "/9j/4AAQSkZJRgABAQ==",
                "the thumbnail is RC:ImgMsg's base64 content")
        let nim = try relay(Self.image, to: "nim")
        #expect(nim.wire == "1" && nim.body["url"] == "https://cdn.example/i/p.jpg" && nim.body["w"] == 427 && nim.body["h"] == 320
                && nim.body["size"] == 183204)
        let jm = try relay(Self.image, to: "jmessage")
        #expect(jm.wire == "image" && jm.body["media_id"] == "https://cdn.example/i/p.jpg" && jm.body["width"] == 427 && jm.body["fsize"] == 183204)
        // From elsewhere (nothing carried) a WuKong image is the built-in type 2, not the app type.
        let (content, _, _) = try wukong(Self.image)
        #expect(try codecs["wukong"]!.encode(content, nil).wire == "2")
    }

    // MARK: back to WuKong through every other vendor

    static let throughVendors: [(String, String)] = payloads.flatMap { payload in ["rongcloud", "nim", "jmessage"].map { (payload, $0) } }

    @Test(arguments: throughVendors)
    func backToWuKongLosesNothing(_ payload: String, _ vendor: String) throws {
        let (wire, body) = try relay(payload, to: vendor)
        let (content, kept) = try codecs[vendor]!.decode(wire, body)
        let back = try codecs["wukong"]!.encode(content, kept)
        var original = try #require(try JSONValue.parse(Data(payload.utf8)).objectValue)
        let type = original.removeValue(forKey: "type")
        #expect(back.wire == type?.int64Value.map(String.init))
        #expect(back.body == original, "via \(vendor): \(JSONValue.object(back.body).jsonString())")
    }

    /// A card edited on the other side comes back with the new name and the fields the other side lacked.
    @Test func changedContentWinsOverTheCarriedBody() throws {
        let (wire, body) = try relay(Self.card, to: "rongcloud")
        var (content, kept) = try codecs["rongcloud"]!.decode(wire, body)
        guard case .card(var card) = content else { Issue.record("not a card: \(content)"); return }
        card.name = "张三丰"
        content = .card(card)
        kept.removeValue(forKey: RongCloudKeys.content)
        let back = try codecs["wukong"]!.encode(content, kept)
        #expect(back.wire == "103" && back.body["name"] == "张三丰" && back.body["phone"] == "13800138000")
    }

    /// `title_card` left 102 (the WuKongIM custom-message guide's location) for a number none of those guides uses.
    @Test func titleCardMovedOffSeedNumbers() throws {
        let entries = MappingSet.shipped.table("wukong").entries.filter { $0.target == .custom("title_card") }
        #expect(entries.map(\.encodeWire) == ["110"])
        let seedNumbers: Set<String> = ["1", "2", "3", "4", "5", "6", "7", "8", "99", "101", "102", "103", "104"]
        #expect(MappingSet.shipped.table("wukong").entries.filter { seedNumbers.contains($0.encodeWire) }.allSatisfy { $0.customFile != "title_card" })
    }
}

enum RongCloudKeys {
    static let content = "rongcloud.content"
}
