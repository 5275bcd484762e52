import Foundation

/// The strict checker's comparisons, on plain values so that they are tested on their own
/// (`ChaosCheckerTests`): one conversation's texts on the target against its source, and log lines
/// against the configured secrets.
enum ChaosChecker {
    /// Nil when `got` is `expected` exactly (every message once, in source order); else one line naming
    /// the first differing message and what kind of break it is (doubles, losses, foreign, order).
    static func compare(conversation: String, expected: [String], got: [String]) -> String? {
        guard got != expected else { return nil }
        let position = zip(expected, got).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(expected.count, got.count)
        let wanted = position < expected.count ? "\"\(expected[position])\"" : "nothing more"
        let found = position < got.count ? "\"\(got[position])\"" : "nothing (the target ends here)"
        var counts: [String: Int] = [:]
        for text in got { counts[text, default: 0] += 1 }
        let expectedSet = Set(expected)
        let doubled = expected.filter { (counts[$0] ?? 0) > 1 }
        let missing = expected.filter { counts[$0] == nil }
        let foreign = got.filter { !expectedSet.contains($0) }
        // Order among the messages that did arrive, each taken at its first copy.
        var seen = Set<String>()
        let firsts = got.filter { expectedSet.contains($0) && seen.insert($0).inserted }
        let inOrder = firsts == expected.filter { counts[$0] != nil }
        var parts = ["conversation \(conversation): first difference at position \(position + 1): expected \(wanted), got \(found)",
                     "\(expected.count) sent, \(got.count) on the target"]
        if !doubled.isEmpty { parts.append("DOUBLED \(doubled.count): \(Self.sample(doubled))") }
        if !missing.isEmpty { parts.append("LOST \(missing.count): \(Self.sample(missing))") }
        if !foreign.isEmpty { parts.append("not sent \(foreign.count): \(Self.sample(foreign))") }
        if !inOrder {
            let expectedOrder = expected.filter { counts[$0] != nil }
            let at = zip(expectedOrder, firsts).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? 0
            parts.append("ORDER broken: \"\(firsts[at])\" arrived where \"\(expectedOrder[at])\" was due")
        }
        return parts.joined(separator: "; ")
    }

    /// Lines of `log` that contain one of `secrets` (name → value), as `name: line N`.
    static func secretsIn(log: String, file: String, secrets: [String: String]) -> [String] {
        var found: [String] = []
        for (number, line) in log.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            for (name, value) in secrets.sorted(by: { $0.key < $1.key }) where value.count >= 4 && line.contains(value) {
                found.append("secret \(name) in \(file) line \(number + 1): \(line.prefix(200))")
            }
        }
        return found
    }

    static func sample(_ texts: [String]) -> String {
        texts.count <= 8 ? texts.joined(separator: ", ") : texts.prefix(8).joined(separator: ", ") + " …"
    }
}
