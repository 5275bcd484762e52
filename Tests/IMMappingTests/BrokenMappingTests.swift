import Foundation
import IMCore
import IMMapping
import Testing

/// Broken mapping files (Tests/IMMappingTests/Fixtures/<case>/, laid out like `mappings/`): each class of
/// mistake is reported with the file, the line and what is wrong, and nothing is loaded.
@Suite struct BrokenMappingTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    func problems(_ fixture: String) -> [String] {
        do {
            _ = try MappingSet.load(overrides: Self.fixtures.appendingPathComponent(fixture))
            Issue.record("\(fixture) loaded without a problem")
            return []
        } catch let error as MappingProblems {
            return error.problems
        } catch {
            Issue.record("unexpected error \(error)")
            return []
        }
    }

    func expectProblem(_ fixture: String, file: String, line: Int, says text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let found = problems(fixture)
        let location = "\(Self.fixtures.appendingPathComponent(fixture).appendingPathComponent(file).path):\(line):"
        #expect(found.contains { $0.hasPrefix(location) && $0.contains(text) },
                "expected '\(location) … \(text)' in \(found)", sourceLocation: sourceLocation)
    }

    @Test func unknownKind() {
        expectProblem("unknown-kind", file: "wukong.yaml", line: 8, says: "types[1].kind: unknown kind 'sticker'")
    }

    @Test func duplicateWireType() {
        expectProblem("duplicate-wire", file: "custom/coupon.yaml", line: 7, says: "wukong wire type 2 → custom 'coupon' is already mapped at")
        #expect(problems("duplicate-wire").first?.contains("wukong.yaml:") == true, "names where the first mapping is")
    }

    @Test func fieldMappedTwice() {
        expectProblem("field-twice", file: "rongcloud.yaml", line: 8, says: "wire field 'content' is mapped twice (also by 'thumbnail')")
    }

    @Test func unknownTransform() {
        expectProblem("unknown-transform", file: "nim.yaml", line: 7, says: "unknown transform 'minutes' (known: none, seconds_ceil")
    }

    @Test func unknownNeutralField() {
        expectProblem("unknown-field", file: "jmessage.yaml", line: 7, says: "'colour' is not a field of image")
    }

    @Test func unknownTemplateFilter() {
        expectProblem("bad-template", file: "custom/gift.yaml", line: 5, says: "unknown filter 'dollars'")
    }

    @Test func yamlSyntax() {
        let found = problems("yaml-syntax")
        #expect(found.count == 1 && found[0].contains("yaml-syntax/wukong.yaml") && found[0].contains("not valid YAML"), "\(found)")
    }

    @Test func misspelledKey() {
        expectProblem("unknown-key", file: "wukong.yaml", line: 5, says: "types[0].feilds: unknown key")
    }

    /// Every problem of every file is reported, not only the first.
    @Test func everyProblemIsReported() {
        let found = problems("several")
        #expect(found.count == 3, "\(found)")
        expectProblem("several", file: "wukong.yaml", line: 8, says: "unknown kind 'picture'")
        expectProblem("several", file: "wukong.yaml", line: 14, says: "unknown transform 'hours'")
        expectProblem("several", file: "custom/order_card.yaml", line: 7, says: "wukong wire type 1 → custom 'order_card' is already mapped")
    }
}
