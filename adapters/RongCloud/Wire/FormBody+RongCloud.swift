import IMHTTP

/// The form spellings RongCloud uses: `true`/`false` for Boolean fields, `1`/`0` for the fields the
/// vendor documents as Int flags; lenient readings (`True`, `1` …) on the way in.
extension FormBody {
    mutating func append(_ name: String, _ value: Bool?) {
        if let value { append(name, value ? "true" : "false") }
    }

    /// Appends a 0/1 flag.
    mutating func appendFlag(_ name: String, _ value: Bool?) {
        if let value { append(name, value ? "1" : "0") }
    }

    func bool(_ name: String) -> Bool? { Lenient.bool(self[name]) }

    func int64(_ name: String) -> Int64? { Lenient.int64(self[name]) }
}
