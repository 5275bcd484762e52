import Foundation
import IMCore
import IMMapping
import IMVendors

/// What survives A → neutral → B, computed from the loaded tables: for every ordered vendor pair and every
/// content kind (and shipped custom type), whether B gets it exactly, converted (fields dropped, units
/// coarsened), as fallback text, or whether A has no such type at all.
struct FidelityMatrix {
    enum Cell: Equatable {
        case exact
        case converted([String])
        case fallback
        case dropped
        case absent

        var symbol: String {
            switch self {
            case .exact: "✓"
            case .converted: "≈"
            case .fallback: "↓"
            case .dropped: "✕"
            case .absent: "—"
            }
        }
    }

    struct Column {
        let title: String
        let target: NeutralTarget
        /// A vendor's `secondary` entry (the WuKongIM custom-message guide's types): only that vendor produces it.
        var only: MappingEntry? = nil
    }

    let set: MappingSet
    static let names = ["wukong": "WuKong", "rongcloud": "RongCloud", "nim": "NIM", "jmessage": "JMessage"]

    var columns: [Column] {
        let kinds: [ContentKind] = [.text, .image, .gif, .voice, .video, .file, .location, .card, .notice, .command]
        let builtins = kinds.map { Column(title: $0.rawValue, target: .builtin($0)) }
        let customs = set.customTypes.values.filter { if case .custom = $0.target { true } else { false } }
            .map(\.name).sorted().map { Column(title: $0, target: .custom($0)) }
        let variants = Vendors.names.flatMap { vendor in
            set.table(vendor).entries.filter(\.secondary).map { entry in
                Column(title: "\(entry.target) (\(Self.names[vendor]!) \(entry.wire))", target: entry.target, only: entry)
            }
        }
        return builtins + variants + customs
    }

    /// Fields an adapter carries beside its table (MIME type from NIM's `ext` and JMessage's `format`,
    /// JMessage's location address in `extras`).
    static func derived(_ vendor: String, _ target: NeutralTarget) -> Set<String> {
        guard case .builtin(let kind) = target else { return [] }
        let media: Set<ContentKind> = [.image, .gif, .voice, .video, .file]
        switch vendor {
        case "nim" where media.contains(kind): return ["mime_type"]
        case "jmessage" where media.contains(kind) && kind != .file: return ["mime_type"]
        case "jmessage" where kind == .location: return ["address"]
        default: return []
        }
    }

    func decoded(_ vendor: String, _ target: NeutralTarget, only: MappingEntry? = nil) -> (fields: Set<String>, exactDuration: Bool)? {
        let entries = only.map { $0.vendor == vendor ? [$0] : [] } ?? set.table(vendor).entries(for: target).filter { !$0.secondary }
        guard !entries.isEmpty else { return nil }
        var fields = Self.derived(vendor, target)
        var exact = false
        for rule in entries.flatMap(\.fields) {
            fields.insert(rule.neutral)
            if rule.neutral == "duration_ms", !rule.transform.isLossy { exact = true }
        }
        // A notice's rendered text and its template carry the same words.
        if target == .builtin(.notice), fields.contains("template") { fields.insert("text") }
        return (fields, exact)
    }

    func encoded(_ vendor: String, _ target: NeutralTarget) -> (fields: Set<String>, lossyDuration: Bool)? {
        let entries = set.table(vendor).entries(for: target).filter { !$0.decodeOnly && !$0.secondary }
        guard !entries.isEmpty else { return nil }
        var fields = Self.derived(vendor, target)
        var lossy = false
        for rule in entries.flatMap(\.fields) {
            fields.insert(rule.neutral)
            if rule.neutral == "duration_ms", rule.transform.isLossy { lossy = true }
        }
        if target == .builtin(.notice), fields.contains("text") || fields.contains("template") { fields.formUnion(["text", "template"]) }
        return (fields, lossy)
    }

    /// The vendors' own capabilities: commands are signals, and NIM carries them outside the tables
    /// (custom system notifications); a target that has neither drops them (they are never turned into text).
    static let presets: [String: Capabilities] = ["wukong": .wukong, "rongcloud": .rongCloud, "nim": .nim, "jmessage": .jMessage]

    func cell(from source: String, to target: String, _ column: Column) -> Cell {
        if column.target == .builtin(.command) {
            let produces = decoded(source, column.target) != nil || Self.presets[source]!.support(.commands).isNative
            guard produces else { return .absent }
            guard decoded(source, column.target) != nil, encoded(target, column.target) != nil else {
                return Self.presets[target]!.support(.commands).isNative ? .exact : .dropped
            }
        }
        guard let from = decoded(source, column.target, only: column.only) else { return .absent }
        guard let to = encoded(target, column.target) else { return .fallback }
        var notes = from.fields.subtracting(to.fields).sorted().map { "drops \($0)" }
        if from.exactDuration && to.lossyDuration && to.fields.contains("duration_ms") { notes.append("duration in whole seconds") }
        return notes.isEmpty ? .exact : .converted(notes)
    }

    /// The docs/fidelity.md section (between the markers).
    func markdown() -> String {
        let vendors = Vendors.names
        var out = "| from → to | " + columns.map { "`\($0.title)`" }.joined(separator: " | ") + " |\n"
        out += "|---|" + columns.map { _ in ":-:" }.joined(separator: "|") + "|\n"
        var details: [String] = []
        for source in vendors {
            for target in vendors where target != source {
                let pair = "\(Self.names[source]!) → \(Self.names[target]!)"
                let cells = columns.map { cell(from: source, to: target, $0) }
                out += "| \(pair) | " + cells.map(\.symbol).joined(separator: " | ") + " |\n"
                for (column, cell) in zip(columns, cells) {
                    if case .converted(let notes) = cell { details.append("- \(pair), `\(column.title)`: \(notes.joined(separator: ", "))") }
                }
            }
        }
        out += "\n✓ exact · ≈ converted (below) · ↓ fallback text (the digest, or the custom type's `fallback:` template) · "
            + "✕ dropped (commands are signals: never turned into text) · — the source has no such type. NIM carries commands as "
            + "custom system notifications, outside the tables. "
            + "A column such as `image (WuKong 104)` is a WuKong app type of the WuKongIM custom-message guide: what it drops on the way out is carried in the "
            + "target's message (`imbridge_carried`) and restored when the copy comes back to WuKong.\n"
        out += "\n<details><summary>What “converted” loses, per pair and kind</summary>\n\n" + details.joined(separator: "\n") + "\n\n</details>\n"
        return out
    }
}
