import Foundation
import IMCore
import IMMapping
import Testing

@Suite struct ShippedTablesTests {
    @Test func shippedTablesLoad() throws {
        let set = try MappingSet.load(overrides: nil)
        for vendor in MappingSet.vendors { #expect(!set.table(vendor).entries.isEmpty, "\(vendor) has entries") }
        #expect(Set(set.customTypes.keys).isSuperset(of: ["gif", "contact_card", "title_card", "order_card"]))
    }

}

@Suite struct TransformTests {
    @Test(arguments: Transform.names.map { $0.replacingOccurrences(of: "<mime>", with: "audio/amr") })
    func namesRoundTrip(_ name: String) throws {
        #expect(try #require(Transform(name: name)).name == name)
    }

    @Test func unitsConvertBothWays() {
        #expect(Transform.secondsCeil.encode(.int(1200)) == .int(2) && Transform.secondsRound.encode(.int(1200)) == .int(1))
        #expect(Transform.secondsFraction.encode(.int(1500)) == .double(1.5) && Transform.secondsFraction.encode(.int(2000)) == .int(2))
        #expect(Transform.secondsFraction.decode(.double(1.5)) == .int(1500) && Transform.secondsCeil.decode(.string("3")) == .int(3000))
        #expect(Transform.yuanCents.decode(.string("12.50")) == .int(1250) && Transform.yuanCents.decode(.double(0.07)) == .int(7))
        #expect(Transform.yuanCents.encode(.int(1250)) == .double(12.5) && Transform.yuanCents.encode(.int(1200)) == .int(12))
        #expect(Transform.base64.encode(.string("你好")) == .string("5L2g5aW9") && Transform.base64.decode(.string("5L2g5aW9")) == .string("你好"))
        #expect(Transform.decimalString.decode(.int(2778919613)) == .string("2778919613"))
        #expect(Transform.decimalString.encode(.string("md5-not-a-number")) == nil, "not every checksum is a number")
        #expect(Transform.jsonText.decode(.string(#"{"a":1}"#)) == ["a": 1] && Transform.jsonText.encode(["a": 1]) == .string(#"{"a":1}"#))
        #expect(Transform.dataURL(mime: "audio/amr").encode(.string("https://x/v.amr")) == nil, "only data: URLs of that type")
        #expect(Transform.dataURL(mime: "audio/amr").encode(.string("data:audio/amr;base64,QUJD")) == .string("QUJD"))
    }

    @Test func templatesRenderFieldsFiltersAndExpansion() throws {
        let template = try Template("[订单] {title} ¥{amount_cents|yuan} {duration|seconds}s ({expansion.status})", validField: { _ in true })
        #expect(template.render(["title": "耳机", "amount_cents": 9990, "duration": 2600], expansion: ["status": "已支付"])
                == "[订单] 耳机 ¥99.90 3s (已支付)")
        #expect(template.render([:]) == "[订单]  ¥ s ()", "missing values render empty")
        #expect(throws: (any Error).self) { try Template("{nope}", validField: { _ in false }) }
        #expect(throws: (any Error).self) { try Template("{a|euro}", validField: { _ in true }) }
        #expect(throws: (any Error).self) { try Template("{a", validField: { _ in true }) }
    }
}
