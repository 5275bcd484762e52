import Foundation
import IMCore
import IMTesting

/// What the conversation workload does besides sending texts (docs/reliability.md, "Workload"): changes
/// to earlier messages of the same group and replies, each drawn from the seed (its own stream, so the
/// topology and the fault schedule draw as they did before the workload became a conversation).
enum ChangeKind: String, Sendable, CaseIterable, Comparable {
    case edit, recall, delete, expand, react

    static func < (a: ChangeKind, b: ChangeKind) -> Bool { a.rawValue < b.rawValue }

    /// What a source's server API lets the workload do (docs/mappings.md, "Deletion"; the vendors'
    /// capabilities): WuKong edits, recalls, extends and reacts; RongCloud recalls, deletes for everyone
    /// and extends (messages sent with an expansion); NIM recalls and sends expansion carriers.
    static func offered(by vendor: String) -> [ChangeKind] {
        switch vendor {
        case "wukong": [.edit, .recall, .expand, .react]
        case "rongcloud": [.recall, .delete, .expand]
        case "nim": [.recall, .expand]
        default: []
        }
    }

    /// A recall or a deletion ends the message: nothing changes it afterwards.
    var ends: Bool { self == .recall || self == .delete }
}

/// One change: made right after text number `after` of its group was sent, to text number `target`.
struct Change: Sendable, Hashable {
    var kind: ChangeKind
    var target: Int
    var after: Int
    /// `expand`: the key, and the value set (nil: the key removed).
    var key: String = ""
    var value: String?
    /// `react`: the emoji, toggled by `bySecond` (the other sender) or the message's sender.
    var emoji: String = ""
    var bySecond = false
}

/// One paced group's script.
struct ConversationScript: Sendable {
    /// By the text number after whose send they are made, in order.
    var changes: [Int: [Change]] = [:]
    /// Text number → the earlier text number it replies to.
    var replies: [Int: Int] = [:]
    /// Text numbers sent with an expansion (RongCloud and the WuKong adapter extend only those).
    var extensible: Set<Int> = []

    static let keys = ["st", "pri", "note"]
    static let emoji = ["👍", "❤️", "😂"]

    /// Texts 1 (the warm-up) and 2 are left to `changes-while-down`; the script changes texts from 3 on,
    /// each at most a few messages back, about one text in four; about one text in eight replies (on a
    /// source with native replies: WuKong and RongCloud).
    static func draw(seed: UInt64, source: Side, conversations: [String], perConversation: Int) -> [String: ConversationScript] {
        var rng = SplitMix64(seed: seed ^ 0x00C0_FFEE_5EED_CAFE)
        let offered = ChangeKind.offered(by: source.vendor)
        let replies = ["wukong", "rongcloud"].contains(source.vendor)
        var scripts: [String: ConversationScript] = [:]
        for conversation in conversations {
            var script = ConversationScript()
            var ended = Set<Int>()
            var keysHeld: [Int: Set<String>] = [:]
            let last = perConversation + 1
            guard last >= 3 else { scripts[conversation] = script; continue }
            for after in 3...last {
                if replies, after > 3, Int.random(in: 0..<8, using: &rng) == 0 {
                    script.replies[after] = Int.random(in: max(2, after - 5)...(after - 1), using: &rng)
                }
                guard !offered.isEmpty, Int.random(in: 0..<4, using: &rng) == 0 else { continue }
                let candidates = (max(3, after - 6)...after).filter { !ended.contains($0) }
                guard !candidates.isEmpty else { continue }
                let target = candidates[Int.random(in: 0..<candidates.count, using: &rng)]
                // Recalls and deletions weigh half as much as the others: they end a message.
                let weighted = offered.flatMap { $0.ends ? [$0] : [$0, $0] }
                var change = Change(kind: weighted[Int.random(in: 0..<weighted.count, using: &rng)], target: target, after: after)
                switch change.kind {
                case .expand:
                    let held = keysHeld[target, default: []]
                    if let removed = held.sorted().first, Int.random(in: 0..<4, using: &rng) == 0 {
                        change.key = removed
                        keysHeld[target]?.remove(removed)
                    } else {
                        change.key = keys[Int.random(in: 0..<keys.count, using: &rng)]
                        change.value = "v\(after)"
                        keysHeld[target, default: []].insert(change.key)
                    }
                    script.extensible.insert(target)
                case .react:
                    change.emoji = emoji[Int.random(in: 0..<emoji.count, using: &rng)]
                    change.bySecond = Bool.random(using: &rng)
                case .recall, .delete: ended.insert(target)
                case .edit: break
                }
                script.changes[after, default: []].append(change)
            }
            // `changes-while-down` extends text 1 (RongCloud: sent with an expansion).
            script.extensible.insert(1)
            scripts[conversation] = script
        }
        return scripts
    }
}
