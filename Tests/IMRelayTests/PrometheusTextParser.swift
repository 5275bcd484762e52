import Foundation

/// A strict parser of the Prometheus text exposition format (version 0.0.4), for tests: it throws on
/// anything a scraper could misread. Checked: metric and label name syntax, label value escapes
/// (`\\`, `\"`, `\n` only), one `# HELP` and one `# TYPE` per family, both before the family's samples,
/// each family's lines in one group, sample names that fit their family's type (`_bucket`/`_sum`/`_count`
/// for a histogram), no duplicate series, and histogram consistency (increasing `le`, a `+Inf` bucket,
/// cumulative counts, `_count` equal to the `+Inf` bucket, `_sum` present).
struct PrometheusExposition {
    struct Sample {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    struct Family {
        var name: String
        var type: String?
        var help: String?
        var samples: [Sample] = []
    }

    struct ParseError: Error, CustomStringConvertible {
        var line: Int
        var message: String
        var description: String { "line \(line): \(message)" }
    }

    var families: [String: Family] = [:]

    /// The value of the sample `name` with exactly `labels`, if there is one.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        families.values.lazy.flatMap(\.samples).first { $0.name == name && $0.labels == labels }?.value
    }

    /// Samples of `name` (any labels).
    func samples(_ name: String) -> [Sample] {
        families.values.flatMap(\.samples).filter { $0.name == name }
    }

    static let types: Set<String> = ["counter", "gauge", "histogram", "summary", "untyped"]

    static func parse(_ text: String) throws -> PrometheusExposition {
        var result = PrometheusExposition()
        guard !text.isEmpty else { return result }
        guard text.hasSuffix("\n") else { throw ParseError(line: 0, message: "the exposition must end with a line feed") }
        var current: String?
        var closed: Set<String> = []
        var seenSeries: Set<String> = []
        var lineNumber = 0

        /// Makes `family` the current group; a family whose group ended may not come back.
        func enter(_ family: String) throws {
            guard family != current else { return }
            if let current { closed.insert(current) }
            guard !closed.contains(family) else { throw ParseError(line: lineNumber, message: "lines of \(family) are not in one group") }
            current = family
        }

        for raw in text.dropLast().split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            let line = String(raw)
            if line.isEmpty { continue }
            if line.hasPrefix("#") {
                let parts = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
                guard parts.count >= 3, parts[0] == "#", parts[1] == "HELP" || parts[1] == "TYPE" else { continue }   // a plain comment
                let name = parts[2]
                guard isMetricName(name) else { throw ParseError(line: lineNumber, message: "bad metric name '\(name)'") }
                try enter(name)
                var family = result.families[name] ?? Family(name: name)
                guard family.samples.isEmpty else {
                    throw ParseError(line: lineNumber, message: "# \(parts[1]) of \(name) after its samples")
                }
                let rest = parts.count > 3 ? parts[3] : ""
                if parts[1] == "HELP" {
                    guard family.help == nil else { throw ParseError(line: lineNumber, message: "second # HELP for \(name)") }
                    family.help = try unescape(rest, allowQuote: false, line: lineNumber)
                } else {
                    guard family.type == nil else { throw ParseError(line: lineNumber, message: "second # TYPE for \(name)") }
                    guard types.contains(rest) else { throw ParseError(line: lineNumber, message: "unknown type '\(rest)'") }
                    family.type = rest
                }
                result.families[name] = family
                continue
            }
            let sample = try parseSample(line, line: lineNumber)
            let familyName = try family(of: sample, current: current, families: result.families, line: lineNumber)
            try enter(familyName)
            let key = sample.name + "{" + sample.labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.debugDescription)" }
                .joined(separator: ",") + "}"
            guard seenSeries.insert(key).inserted else { throw ParseError(line: lineNumber, message: "duplicate series \(key)") }
            result.families[familyName, default: Family(name: familyName)].samples.append(sample)
        }
        for family in result.families.values {
            switch family.type {
            case "counter":
                for sample in family.samples where !(sample.value >= 0) {
                    throw ParseError(line: 0, message: "counter \(sample.name) has value \(sample.value)")
                }
            case "histogram": try checkHistogram(family)
            default: break
            }
        }
        return result
    }

    /// The family a sample belongs to: its own name, or for `_bucket`/`_sum`/`_count` the histogram
    /// (or summary) it names. A sample of a family without `# TYPE` is refused (strict).
    static func family(of sample: Sample, current: String?, families: [String: Family], line: Int) throws -> String {
        if let family = families[sample.name], let type = family.type {
            guard type != "histogram" else { throw ParseError(line: line, message: "histogram \(sample.name) has a bare sample") }
            return sample.name
        }
        for suffix in ["_bucket", "_sum", "_count"] where sample.name.hasSuffix(suffix) {
            let base = String(sample.name.dropLast(suffix.count))
            guard let type = families[base]?.type else { continue }
            guard type == "histogram" || (type == "summary" && suffix != "_bucket") else {
                throw ParseError(line: line, message: "\(sample.name) does not fit the type \(type) of \(base)")
            }
            if suffix == "_bucket" && sample.labels["le"] == nil { throw ParseError(line: line, message: "\(sample.name) without le") }
            return base
        }
        throw ParseError(line: line, message: "sample \(sample.name) has no # TYPE before it")
    }

    static func checkHistogram(_ family: Family) throws {
        var groups: [[String: String]: (buckets: [(Double, Double)], sum: Double?, count: Double?)] = [:]
        for sample in family.samples {
            var labels = sample.labels
            let le = labels.removeValue(forKey: "le")
            var group = groups[labels] ?? ([], nil, nil)
            switch String(sample.name.dropFirst(family.name.count)) {
            case "_bucket":
                guard let le, let bound = Double(le == "+Inf" ? "inf" : le) else {
                    throw ParseError(line: 0, message: "\(family.name): bad le '\(le ?? "")'")
                }
                if let last = group.buckets.last, !(bound > last.0) {
                    throw ParseError(line: 0, message: "\(family.name): le \(le) not above \(last.0)")
                }
                if let last = group.buckets.last, sample.value < last.1 {
                    throw ParseError(line: 0, message: "\(family.name): bucket le=\(le) counts less than the bucket below")
                }
                group.buckets.append((bound, sample.value))
            case "_sum": group.sum = sample.value
            case "_count": group.count = sample.value
            default: break
            }
            groups[labels] = group
        }
        for (labels, group) in groups {
            guard let inf = group.buckets.last, inf.0 == .infinity else { throw ParseError(line: 0, message: "\(family.name)\(labels): no +Inf bucket") }
            guard group.sum != nil else { throw ParseError(line: 0, message: "\(family.name)\(labels): no _sum") }
            guard let count = group.count, count == inf.1 else {
                throw ParseError(line: 0, message: "\(family.name)\(labels): _count differs from the +Inf bucket")
            }
        }
    }

    static func parseSample(_ line: String, line lineNumber: Int) throws -> Sample {
        let chars = Array(line)
        var i = 0
        func fail(_ message: String) -> ParseError { ParseError(line: lineNumber, message: "\(message): \(line.debugDescription)") }
        var name = ""
        while i < chars.count, chars[i] != "{", chars[i] != " " { name.append(chars[i]); i += 1 }
        guard isMetricName(name) else { throw fail("bad metric name '\(name)'") }
        var labels: [String: String] = [:]
        if i < chars.count, chars[i] == "{" {
            i += 1
            while true {
                guard i < chars.count else { throw fail("unterminated label set") }
                if chars[i] == "}" { i += 1; break }
                var label = ""
                while i < chars.count, chars[i] != "=" { label.append(chars[i]); i += 1 }
                guard isLabelName(label), !label.hasPrefix("__") else { throw fail("bad label name '\(label)'") }
                guard i + 1 < chars.count, chars[i] == "=", chars[i + 1] == "\"" else { throw fail("expected =\" after \(label)") }
                i += 2
                var value = ""
                while true {
                    guard i < chars.count else { throw fail("unterminated label value") }
                    let c = chars[i]
                    if c == "\"" { i += 1; break }
                    if c == "\\" {
                        guard i + 1 < chars.count else { throw fail("dangling backslash") }
                        switch chars[i + 1] {
                        case "\\": value.append("\\")
                        case "\"": value.append("\"")
                        case "n": value.append("\n")
                        default: throw fail("unknown escape \\\(chars[i + 1])")
                        }
                        i += 2
                        continue
                    }
                    value.append(c)
                    i += 1
                }
                guard labels.updateValue(value, forKey: label) == nil else { throw fail("label \(label) twice") }
                guard i < chars.count else { throw fail("unterminated label set") }
                if chars[i] == "," { i += 1; continue }
                guard chars[i] == "}" else { throw fail("expected , or } after a label") }
            }
        }
        guard i < chars.count, chars[i] == " " else { throw fail("expected a space before the value") }
        let fields = String(chars[(i + 1)...]).split(separator: " ", omittingEmptySubsequences: false)
        guard (1...2).contains(fields.count), let value = number(String(fields[0])) else { throw fail("bad value") }
        if fields.count == 2, Int64(fields[1]) == nil { throw fail("bad timestamp") }
        return Sample(name: name, labels: labels, value: value)
    }

    static func number(_ text: String) -> Double? {
        switch text {
        case "+Inf": return .infinity
        case "-Inf": return -.infinity
        case "NaN": return .nan
        default:
            guard !text.isEmpty, text.allSatisfy({ "0123456789+-.eE".contains($0) }) else { return nil }
            return Double(text)
        }
    }

    /// HELP text escapes: `\\` and `\n` (and `\"` in label values).
    static func unescape(_ text: String, allowQuote: Bool, line: Int) throws -> String {
        var out = ""
        var iterator = text.makeIterator()
        while let c = iterator.next() {
            guard c == "\\" else { out.append(c); continue }
            switch iterator.next() {
            case "\\": out.append("\\")
            case "n": out.append("\n")
            case "\"" where allowQuote: out.append("\"")
            default: throw ParseError(line: line, message: "bad escape in \(text.debugDescription)")
            }
        }
        return out
    }

    static func isMetricName(_ name: String) -> Bool {
        guard let first = name.first, first.isASCII, first.isLetter || first == "_" || first == ":" else { return false }
        return name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == ":") }
    }

    static func isLabelName(_ name: String) -> Bool {
        guard let first = name.first, first.isASCII, first.isLetter || first == "_" else { return false }
        return name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
    }
}
