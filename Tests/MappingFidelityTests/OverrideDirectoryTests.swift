import Foundation
import IMCore
import IMMapping
import Testing
import WuKong

/// A deployment's own directory changes what goes on the wire, with no recompilation.
@Suite struct OverrideDirectoryTests {
    /// This app's WuKong clients spell the text field `body` and the location `latitude`/`longitude`.
    @Test func renamingAFieldChangesTheWireOutput() throws {
        let shipped = WuKongContentCodec()
        #expect(try shipped.encode(.text("你好")) == ["type": 1, "content": "你好"])

        let directory = try TemporaryMappings(files: ["wukong.yaml": """
            vendor: wukong
            types:
              - wire: 1
                kind: text
                fields:
                  text: body
              - wire: 6
                kind: location
                fields:
                  latitude: {wire: latitude, required: true}
                  longitude: {wire: longitude, required: true}
                  title: name
            """])
        let set = try MappingSet.load(overrides: directory.url)
        let codec = WuKongContentCodec(mapping: set.table("wukong"))
        #expect(try codec.encode(.text("你好")) == ["type": 1, "body": "你好"])
        #expect(try codec.decode(["type": 1, "body": "hi"]).content == .text("hi"))
        #expect(try codec.encode(.location(LocationContent(latitude: 1.5, longitude: 2.5, title: "T")))
                == ["type": 6, "latitude": 1.5, "longitude": 2.5, "name": "T"])
        // The override replaced the shipped wukong.yaml: types it no longer lists fall back (no image type).
        #expect(set.table("wukong").carries(.builtin(.image)) == false)
        #expect(throws: IMError.self) { try codec.encode(.image(ImageContent(.remote("https://x/1.png")))) }
        // Custom files still come from the shipped directory.
        #expect(set.table("wukong").carries(.custom("order_card")))
    }

    /// An added custom type with a unit transform, picked up from the directory.
    @Test func addingACustomTypeWithATransform() throws {
        let directory = try TemporaryMappings(files: ["custom/red_packet.yaml": """
            name: red_packet
            fields: {amount_cents: {type: int, required: true}, greeting: string}
            digest: "[红包] {greeting}"
            fallback: {text: "[红包] ¥{amount_cents|yuan} {greeting}"}
            vendors:
              wukong: {wire: 130, fields: {amount_cents: {wire: money, transform: yuan_cents}, greeting: blessing}}
              nim: {wire: 100, when: {type: 9}, data: data, fields: {amount_cents: amount, greeting: greeting}}
            """])
        let set = try MappingSet.load(overrides: directory.url)
        let wukong = VendorCodec.make("wukong", set)
        let (content, _) = try wukong.decode("130", ["money": 8.88, "blessing": "恭喜发财"])
        #expect(content == .custom(CustomContent(raw: "red_packet", payload: #"{"amount_cents":888,"greeting":"恭喜发财"}"#)))
        let nim = try VendorCodec.make("nim", set).encode(content, nil)
        #expect(nim.wire == "100" && nim.body == ["type": 9, "data": ["amount": 888, "greeting": "恭喜发财"]])
        #expect(set.digest(of: content, vendor: "wukong") == "[红包] 恭喜发财")
        #expect(set.fallbackText(for: content) == "[红包] ¥8.88 恭喜发财")
    }
}

/// docs/mappings.md's example of your own mapping is a working file.
@Suite struct ReadmeMappingExampleTests {
    @Test func theReadmeRedPacketLoads() throws {
        let readme = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/mappings.md"), encoding: .utf8)
        let marker = "# /etc/imbridge/mappings/custom/red_packet.yaml"
        let start = try #require(readme.range(of: marker), "docs/mappings.md shows the red_packet example")
        let block = String(readme[start.lowerBound...].prefix { $0 != "`" })
        let directory = try TemporaryMappings(files: ["custom/red_packet.yaml": block])
        let set = try MappingSet.load(overrides: directory.url)
        #expect(set.table("wukong").carries(.custom("red_packet")) && set.table("nim").carries(.custom("red_packet")))
        let (content, _) = try VendorCodec.make("wukong", set).decode("130", ["money": 8.88, "blessing": "恭喜发财"])
        #expect(set.fallbackText(for: content) == "[红包] ¥8.88 恭喜发财")
    }
}
