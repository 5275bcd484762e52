import Foundation
import IMCore
@testable import IMMapping
import Testing

/// A built-in entry's neutral values are read from the content and held while decoding by field number
/// (`MappingEntry.CompiledFields`, `NeutralForm.value(_:of:)`, `RuleFields`) instead of through
/// `NeutralForm.fields(of:)`'s dictionary by name. Here both ways run on every shipped entry, over
/// contents and bodies built to differ, and must give the same wire body, content, remaining keys or error.
@Suite struct CompiledFieldsTests {
    static func media(_ variant: Int) -> MediaAttachment {
        switch variant % 4 {
        case 0: MediaAttachment()
        case 1: MediaAttachment(remoteURL: "https://cdn.example.com/a.jpg", mimeType: "image/jpeg", size: 482_113, checksum: "2778919613",
                                width: 1280, height: 960, durationMs: 1_500, thumbnail: "5L2g5aW9", fileName: "a.jpg")
        case 2: MediaAttachment(remoteURL: "", size: 0, width: 0, durationMs: 999)
        default: MediaAttachment(remoteURL: "data:audio/amr;base64,IyFBTVIK", mimeType: "audio/amr", size: -1, checksum: "",
                                 height: 7, durationMs: 0, fileName: "你好 \"q\".amr")
        }
    }

    /// Contents of every built-in kind, with optional values present and absent.
    static let contents: [MessageContent] = {
        var all: [MessageContent] = [.text(TextContent("")), .text(TextContent("你好 \"q\" \\ \u{0} 😀"))]
        for variant in 0..<4 {
            all.append(.image(ImageContent(media(variant))))
            all.append(.gif(GIFContent(media(variant))))
            all.append(.voice(VoiceContent(media(variant))))
            all.append(.video(VideoContent(media(variant), cover: variant == 0 ? nil : media(variant + 1))))
            all.append(.file(FileContent(media(variant), name: variant == 2 ? "" : "report \(variant).pdf")))
        }
        all += [
            .location(LocationContent(latitude: 31.2, longitude: 121.5)),
            .location(LocationContent(latitude: -1e-3, longitude: 0, title: "外滩", address: "上海", thumbnail: "t.jpg")),
            .location(LocationContent(latitude: 1, longitude: 2, address: "only an address")),
            .location(LocationContent(latitude: 1, longitude: 2, title: "")),
            .card(CardContent(userID: UserID("u1"), name: "")),
            .card(CardContent(userID: UserID("u2"), name: "Ann", avatar: "a.png", phone: "+86 1", email: "a@example.com")),
            .command(CommandContent(name: "typing")),
            .command(CommandContent(name: "sync", data: ["a": 1, "b": [true, "x"]])),
            .notice(NoticeContent(text: "Ann joined")),
            .notice(NoticeContent(text: "Ann joined", template: "{0} joined", parameters: ["Ann"], noticeType: "1001")),
            .notice(NoticeContent(text: "", template: "", noticeType: "group_created")),
            .notice(NoticeContent(text: "x", parameters: [1, .null], noticeType: "2000")),
        ]
        return all
    }()

    @Test func everyVocabularyNameHasAFieldNumber() {
        var names: Set<String> = []
        for kind in ContentKind.allCases {
            for name in (NeutralForm.vocabulary(kind) ?? [:]).keys {
                names.insert(name)
                #expect(NeutralKey(name: name)?.name == name, "\(name)")
            }
        }
        #expect(Set(NeutralKey.allCases.map(\.name)) == names)
    }

    @Test func contentValuesAreTheFieldsDictionarys() throws {
        for content in Self.contents {
            let fields = try #require(NeutralForm.fields(of: content))
            for key in NeutralKey.allCases {
                #expect(NeutralForm.value(key, of: content) == fields[key.name], "\(content) \(key.name)")
            }
        }
        #expect(NeutralForm.value(.text, of: .unsupported(UnsupportedContent(vendor: "x", vendorType: "1", raw: "{}"))) == nil)
    }

    /// `VendorTable` finds a built-in kind's encoders by the kind's position.
    @Test func kindPositionIsItsIndexInAllCases() {
        for (index, kind) in ContentKind.allCases.enumerated() { #expect(kind.position == index, "\(kind)") }
    }

    @Test func everyShippedBuiltinEntryIsCompiled() {
        for vendor in MappingSet.vendors {
            for entry in MappingSet.shipped.table(vendor).entries {
                if case .builtin = entry.target {
                    #expect(entry.compiled != nil, "\(vendor) \(entry.label)")
                } else {
                    #expect(entry.compiled == nil, "\(vendor) \(entry.label)")
                }
            }
        }
    }

    struct Written: Equatable {
        var wire: MappedWire?
        var error: String?
        static func == (a: Written, b: Written) -> Bool {
            a.error == b.error && a.wire?.entry == b.wire?.entry && a.wire?.wireType == b.wire?.wireType && a.wire?.body == b.wire?.body
        }
    }

    static func written(_ run: () throws -> MappedWire?) -> Written {
        do { return Written(wire: try run()) } catch { return Written(error: "\(error)") }
    }

    @Test func encodingByFieldNumberMatchesEncodingByName() {
        var compared = 0
        var encoded = 0
        for vendor in MappingSet.vendors {
            let table = MappingSet.shipped.table(vendor)
            var wires: Set<String> = []
            for entry in table.entries {
                switch entry.wire {
                case .exact(let value): wires.insert(value)
                case .range(let range): wires.insert(String(range.lowerBound)); wires.insert(entry.encodeWire)
                }
            }
            for content in Self.contents {
                let fast = Self.written { try table.encode(content, byName: false) }
                let named = Self.written { try table.encode(content, byName: true) }
                #expect(fast == named, "\(vendor) \(content)")
                if fast.wire != nil { encoded += 1 }
                compared += 1
                for wire in wires.sorted() {
                    for base: [String: JSONValue] in [[:], ["zz": 1, "title": "", "width": 0]] {
                        let fast = Self.written { try table.encode(content, throughWire: wire, base: base, byName: false) }
                        let named = Self.written { try table.encode(content, throughWire: wire, base: base, byName: true) }
                        #expect(fast == named, "\(vendor) \(wire) \(content)")
                        compared += 1
                    }
                }
            }
        }
        #expect(encoded > 50)
        #expect(compared > 1000)
    }

    /// Decoding bodies for an entry: its paths (primary and alias, nested ones included) filled from
    /// `FlatDecodingTests.samples` in several combinations, its discriminators, an extra key, `null`s.
    static func bodies(for entry: MappingEntry, seed: Int) -> [[String: JSONValue]] {
        let paths = entry.fields.flatMap { [$0.wire] + $0.aliases }
        let samples = FlatDecodingTests.samples
        var bodies: [[String: JSONValue]] = [[:]]
        for offset in samples.indices {
            var all: [String: JSONValue] = [:]
            var some: [String: JSONValue] = [:]
            for (index, path) in paths.enumerated() {
                let value = samples[(offset + index * 7 + seed) % samples.count]
                MappingEntry.put(value, at: path, in: &all)
                if (index + offset) % 2 == 0 { MappingEntry.put(value, at: path, in: &some) }
            }
            for fields in [all, some] {
                var body = fields
                if let dataKey = entry.dataKey { body = [dataKey: .object(fields)] }
                for (key, value) in entry.when { body[key] = value }
                bodies.append(body)
                var extra = body
                extra["zz_extra"] = samples[offset]
                bodies.append(extra)
            }
            var nulled = all
            if let first = paths.first { MappingEntry.put(.null, at: first, in: &nulled) }
            bodies.append(nulled)
        }
        return bodies
    }

    @Test func decodingByFieldNumberMatchesDecodingByName() {
        let registry = ContentRegistry()
        var compared = 0
        for vendor in MappingSet.vendors {
            let table = MappingSet.shipped.table(vendor)
            for (index, entry) in table.entries.enumerated() {
                var wires: [String] = []
                switch entry.wire {
                case .exact(let value): wires = [value]
                case .range(let range): wires = [String(range.lowerBound), String(range.upperBound)]
                }
                for wire in wires {
                    for body in Self.bodies(for: entry, seed: index) {
                        let taking = FlatDecodingTests.outcome { try table.decodeTaking(entry: entry, wire: wire, body: body, registry: registry) }
                        let named = FlatDecodingTests.outcome {
                            try table.decodeTaking(entry: entry, wire: wire, body: body, registry: registry, byName: true)
                        }
                        #expect(taking == named, "\(vendor) \(entry.label) \(body)")
                        compared += 1
                        if entry.flat {
                            let flat = FlatDecodingTests.outcome { try table.decodeFlat(entry: entry, wire: wire, body: body, registry: registry) }
                            let flatNamed = FlatDecodingTests.outcome {
                                try table.decodeFlat(entry: entry, wire: wire, body: body, registry: registry, byName: true)
                            }
                            #expect(flat == flatNamed, "\(vendor) \(entry.label) \(body)")
                            #expect(flat == named, "\(vendor) \(entry.label) \(body)")
                            compared += 1
                        }
                    }
                }
            }
        }
        #expect(compared > 2000)
    }
}
