import Foundation
import IMCore
import IMMapping
import Testing

/// Every built-in and custom wire type of every vendor, through that vendor's own table and codec:
/// a body with every mapped field decodes to the entry's kind with each field's neutral value, and
/// encodes back to the same body.
@Suite struct RoundTripTests {
    static let cases: [String] = MappingSet.vendors.flatMap { vendor in
        MappingSet.shipped.table(vendor).entries.indices.map { "\(vendor)#\($0)" }
    }

    @Test(arguments: cases)
    func wireToNeutralToWireIsExact(_ name: String) throws {
        let parts = name.split(separator: "#")
        let codec = VendorCodec.make(String(parts[0]))
        let entry = codec.table.entries[Int(parts[1])!]
        let sample = Samples.wire(entry)
        let (content, kept) = try codec.decode(sample.wire, sample.body)
        #expect(NeutralForm.target(of: content) == entry.target, "\(entry.label) decoded as \(content.kind)")
        let fields = NeutralForm.fields(of: content) ?? [:]
        for (key, value) in sample.neutral {
            #expect(fields[key].map { VendorCodecSame.same($0, value) } == true, "\(entry.label): \(key) = \(value), got \(fields[key] ?? .null)")
        }
        guard !entry.decodeOnly else { return }
        let again = try codec.encode(content, kept)
        #expect(again.wire == sample.wire && again.body == sample.body,
                "\(entry.label): wrote \(again.wire) \(JSONValue.object(again.body).jsonString()), read \(JSONValue.object(sample.body).jsonString())")
    }

    /// From another vendor (nothing kept), each entry writes its mapped fields and its discriminators.
    @Test(arguments: cases)
    func neutralFromElsewhereEncodesThroughTheEntry(_ name: String) throws {
        let parts = name.split(separator: "#")
        let codec = VendorCodec.make(String(parts[0]))
        let entry = codec.table.entries[Int(parts[1])!]
        // A secondary entry is written only for content read from it (covered above, with what it kept).
        guard !entry.decodeOnly, !entry.secondary else { return }
        let sample = Samples.wire(entry)
        let (content, _) = try codec.decode(sample.wire, sample.body)
        let written = try codec.encode(content, nil)
        for (key, value) in entry.when { #expect(written.body[key] == value, "\(entry.label): discriminator \(key)") }
        let (back, _) = try codec.decode(written.wire, written.body)
        #expect(back == content, "\(entry.label): \(back) != \(content)")
    }
}

enum VendorCodecSame {
    static func same(_ a: JSONValue, _ b: JSONValue) -> Bool {
        if a == b { return true }
        if let x = a.doubleValue, let y = b.doubleValue { return x == y }
        return false
    }
}
