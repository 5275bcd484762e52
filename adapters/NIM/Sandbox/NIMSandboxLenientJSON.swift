import IMCore

/// The lenient reading the NIM sandbox gives the form fields that carry JSON (`body`, `option`,
/// `toAccids`, `accids`, `targetOs`), as the production server does (docs/adapters/nim.md, "Request-shape
/// tolerances"): strict JSON first; otherwise a Python literal as `str(dict)` prints it — single- or
/// double-quoted strings with Python escapes, `True`/`False`/`None`, tuples as arrays, trailing commas.
/// Anything else is nil (the caller answers 414).
enum NIMLenientJSON {
    static func parse(_ text: String) -> JSONValue? {
        if let strict = try? JSONValue.parse(text) { return strict }
        var reader = Reader(scalars: Array(text.unicodeScalars))
        guard let value = reader.value() else { return nil }
        reader.skipSpace()
        return reader.position == reader.scalars.count ? value : nil
    }

    /// Whether `text` is strict JSON already (then the sandbox keeps its bytes as they came).
    static func isStrict(_ text: String) -> Bool { (try? JSONValue.parse(text)) != nil }

    private struct Reader {
        let scalars: [Unicode.Scalar]
        var position = 0
        var depth = 0

        mutating func skipSpace() {
            while position < scalars.count, [" ", "\t", "\n", "\r"].contains(scalars[position]) { position += 1 }
        }

        mutating func value() -> JSONValue? {
            skipSpace()
            guard position < scalars.count, depth < 64 else { return nil }
            switch scalars[position] {
            case "{": return container(close: "}", object: true)
            case "[": return container(close: "]", object: false)
            case "(": return container(close: ")", object: false)
            case "'", "\"": return string().map(JSONValue.string)
            default: return word()
            }
        }

        mutating func container(close: Unicode.Scalar, object: Bool) -> JSONValue? {
            position += 1
            depth += 1
            defer { depth -= 1 }
            var members: [String: JSONValue] = [:], items: [JSONValue] = []
            while true {
                skipSpace()
                guard position < scalars.count else { return nil }
                if scalars[position] == close { position += 1; break }
                if object {
                    guard case .string(let key)? = value() else { return nil }
                    skipSpace()
                    guard position < scalars.count, scalars[position] == ":" else { return nil }
                    position += 1
                    guard let item = value() else { return nil }
                    members[key] = item
                } else {
                    guard let item = value() else { return nil }
                    items.append(item)
                }
                skipSpace()
                guard position < scalars.count else { return nil }
                if scalars[position] == "," { position += 1 } else if scalars[position] != close { return nil }
            }
            return object ? .object(members) : .array(items)
        }

        mutating func string() -> String? {
            let quote = scalars[position]
            position += 1
            var out = String.UnicodeScalarView()
            while position < scalars.count {
                let scalar = scalars[position]
                position += 1
                if scalar == quote { return String(out) }
                guard scalar == "\\" else { out.append(scalar); continue }
                guard position < scalars.count else { return nil }
                let escaped = scalars[position]
                position += 1
                switch escaped {
                case "n": out.append("\n")
                case "t": out.append("\t")
                case "r": out.append("\r")
                case "b": out.append("\u{8}")
                case "f": out.append("\u{c}")
                case "0": out.append("\0")
                case "x", "u", "U":
                    let count = escaped == "x" ? 2 : escaped == "u" ? 4 : 8
                    guard position + count <= scalars.count,
                          let code = UInt32(String(String.UnicodeScalarView(scalars[position..<position + count])), radix: 16) else { return nil }
                    position += count
                    // A JSON-style surrogate pair (\uD83D\uDE00) is joined; Python prints \U0001F600 instead.
                    if (0xD800...0xDBFF).contains(code), position + 6 <= scalars.count, scalars[position] == "\\", scalars[position + 1] == "u",
                       let low = UInt32(String(String.UnicodeScalarView(scalars[position + 2..<position + 6])), radix: 16),
                       (0xDC00...0xDFFF).contains(low) {
                        position += 6
                        out.append(Unicode.Scalar(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00))!)
                    } else {
                        guard let value = Unicode.Scalar(code) else { return nil }
                        out.append(value)
                    }
                default: out.append(escaped)  // \\ \' \" \/
                }
            }
            return nil
        }

        mutating func word() -> JSONValue? {
            let start = position
            while position < scalars.count, !" \t\r\n,:]})".unicodeScalars.contains(scalars[position]) { position += 1 }
            let text = String(String.UnicodeScalarView(scalars[start..<position]))
            switch text {
            case "True", "true": return .bool(true)
            case "False", "false": return .bool(false)
            case "None", "null": return .null
            default:
                if let int = Int64(text) { return .int(int) }
                if let double = Double(text), double.isFinite { return .double(double) }
                return nil
            }
        }
    }
}
