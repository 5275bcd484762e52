/// Finds the raw text of the members of a top-level JSON object without re-serialising anything, so a
/// custom payload nested in NIM's `{"type":…,"data":…}` envelope comes out byte for byte.
enum NIMJSONScanner {
    /// `[(key, raw value text)]` of a JSON object, or nil when `text` is not a well-formed object.
    /// Keys are unescaped only for the simple case (no backslashes); escaped keys are returned as written.
    static func members(of text: String) -> [(key: String, raw: Substring)]? {
        let scalars = text.unicodeScalars
        var index = scalars.startIndex
        func skipSpace() {
            while index < scalars.endIndex, [" ", "\n", "\r", "\t"].contains(scalars[index]) { index = scalars.index(after: index) }
        }
        func skipString() -> Bool {
            guard index < scalars.endIndex, scalars[index] == "\"" else { return false }
            index = scalars.index(after: index)
            while index < scalars.endIndex {
                let scalar = scalars[index]
                index = scalars.index(after: index)
                if scalar == "\\" {
                    guard index < scalars.endIndex else { return false }
                    index = scalars.index(after: index)
                } else if scalar == "\"" {
                    return true
                }
            }
            return false
        }
        func skipValue() -> Bool {
            guard index < scalars.endIndex else { return false }
            switch scalars[index] {
            case "\"":
                return skipString()
            case "{", "[":
                var depth = 0
                while index < scalars.endIndex {
                    let scalar = scalars[index]
                    if scalar == "\"" {
                        guard skipString() else { return false }
                        continue
                    }
                    if scalar == "{" || scalar == "[" { depth += 1 }
                    if scalar == "}" || scalar == "]" { depth -= 1 }
                    index = scalars.index(after: index)
                    if depth == 0 { return true }
                }
                return false
            default:
                let start = index
                while index < scalars.endIndex, ![",", "}", "]", " ", "\n", "\r", "\t"].contains(scalars[index]) {
                    index = scalars.index(after: index)
                }
                return index > start
            }
        }
        skipSpace()
        guard index < scalars.endIndex, scalars[index] == "{" else { return nil }
        index = scalars.index(after: index)
        var members: [(String, Substring)] = []
        skipSpace()
        if index < scalars.endIndex, scalars[index] == "}" {
            index = scalars.index(after: index)
            skipSpace()
            return index == scalars.endIndex ? [] : nil
        }
        while true {
            skipSpace()
            let keyStart = index
            guard skipString() else { return nil }
            let key = String(text[scalars.index(after: keyStart)..<scalars.index(before: index)])
            skipSpace()
            guard index < scalars.endIndex, scalars[index] == ":" else { return nil }
            index = scalars.index(after: index)
            skipSpace()
            let valueStart = index
            guard skipValue() else { return nil }
            members.append((key, text[valueStart..<index]))
            skipSpace()
            guard index < scalars.endIndex else { return nil }
            if scalars[index] == "," { index = scalars.index(after: index); continue }
            guard scalars[index] == "}" else { return nil }
            index = scalars.index(after: index)
            skipSpace()
            return index == scalars.endIndex ? members : nil
        }
    }
}
