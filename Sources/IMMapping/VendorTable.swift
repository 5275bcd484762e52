import Foundation
import IMCore

/// A content decoded through a mapping entry.
public struct MappedContent: Sendable {
    public let entry: MappingEntry
    public let content: MessageContent
    /// The body's keys the entry did not use (a codec keeps them so a same-vendor round trip is exact).
    public let remaining: [String: JSONValue]
}

/// A content encoded through a mapping entry: the wire type and the body's mapped keys.
public struct MappedWire: Sendable {
    public let entry: MappingEntry
    public let wireType: String
    public private(set) var body: [String: JSONValue]

    init(entry: MappingEntry, wireType: String, body: [String: JSONValue]) {
        self.entry = entry
        self.wireType = wireType
        self.body = body
    }

    /// The body, moved out (this wire's is left empty): a codec that adds keys to it then changes the
    /// one dictionary instead of a copy (`body` is still referenced by this value otherwise).
    public mutating func takeBody() -> [String: JSONValue] {
        var body: [String: JSONValue] = [:]
        swap(&body, &self.body)
        return body
    }
}

/// Every mapping entry of one vendor, compiled and indexed once (no YAML work per message).
///
/// Decoding picks, among the entries for the wire type, the first whose discriminators hold: entries
/// with discriminators before those without, then file order (built-in table, then custom files by name). Encoding picks, among the entries for the
/// content's kind or custom type, the first that is not `decode_only` and whose required fields'
/// transforms accept the content's values (an optional value a transform cannot take is left out); for a notice, the entry whose wire type is the notice's `notice_type` first.
public struct VendorTable: Sendable {
    public let vendor: String
    public let entries: [MappingEntry]
    /// Per exact wire type, the decoding candidates already in decoding order (discriminated first).
    private let byWire: [String: [MappingEntry]]
    private let ranged: [MappingEntry]
    private let byTarget: [NeutralTarget: [MappingEntry]]
    private let encoders: [NeutralTarget: [MappingEntry]]
    /// `encoders` of the built-in kinds, by `ContentKind.allCases` position: a content's candidates are
    /// found without hashing its target (a kind hashes its raw-value text).
    private let kindEncoders: [[MappingEntry]]

    public init(vendor: String, entries: [MappingEntry]) {
        self.vendor = vendor
        self.entries = entries
        // Most specific first: entries with discriminators before those without (an image with
        // `ext: gif` is a GIF), file order otherwise. Computed once, not per message.
        let ordered = entries.filter { !$0.when.isEmpty } + entries.filter { $0.when.isEmpty }
        var byWire: [String: [MappingEntry]] = [:]
        var ranged: [MappingEntry] = []
        for entry in ordered {
            switch entry.wire {
            case .exact(let value): byWire[value, default: []].append(entry)
            case .range: ranged.append(entry)
            }
        }
        var byTarget: [NeutralTarget: [MappingEntry]] = [:]
        for entry in entries { byTarget[entry.target, default: []].append(entry) }
        self.byWire = byWire
        self.ranged = ranged
        self.byTarget = byTarget
        let encoders = byTarget.mapValues { $0.filter { !$0.decodeOnly && !$0.secondary } }
        self.encoders = encoders
        kindEncoders = ContentKind.allCases.map { encoders[.builtin($0)] ?? [] }
    }

    /// The entries that may write a target, in encoding order.
    func encoders(for target: NeutralTarget) -> [MappingEntry] {
        if case .builtin(let kind) = target { return kindEncoders[kind.position] }
        return encoders[target] ?? []
    }

    public func entries(for target: NeutralTarget) -> [MappingEntry] { byTarget[target] ?? [] }

    /// Whether this vendor has a wire form for a custom type or built-in kind.
    public func carries(_ target: NeutralTarget) -> Bool { !encoders(for: target).isEmpty }

    /// Decodes a body of a wire type; nil when no entry matches (the codec decides: unsupported, raw custom …).
    /// Throws `malformed_payload` when a required field is missing or a value cannot be converted.
    public func decode(wire: String, body: [String: JSONValue], registry: ContentRegistry) throws -> MappedContent? {
        if let exact = byWire[wire], let entry = exact.first(where: { $0.accepts(body) }) {
            return try decode(entry: entry, wire: wire, body: body, registry: registry)
        }
        guard let entry = ranged.first(where: { $0.wire.matches(wire) && $0.accepts(body) }) else { return nil }
        return try decode(entry: entry, wire: wire, body: body, registry: registry)
    }

    /// Whether any entry may decode this wire type.
    public func knows(wire: String) -> Bool {
        byWire[wire] != nil || ranged.contains { $0.wire.matches(wire) }
    }
}

extension ContentKind {
    /// The kind's position in `allCases` (without searching it).
    var position: Int {
        switch self {
        case .text: 0
        case .image: 1
        case .gif: 2
        case .voice: 3
        case .video: 4
        case .file: 5
        case .location: 6
        case .card: 7
        case .command: 8
        case .notice: 9
        case .custom: 10
        case .unsupported: 11
        }
    }
}

extension NeutralTarget {
    var isCustom: Bool {
        if case .custom = self { return true }
        return false
    }
}

extension MessageContent {
    var notice: NoticeContent? {
        if case .notice(let notice) = self { return notice }
        return nil
    }
}
