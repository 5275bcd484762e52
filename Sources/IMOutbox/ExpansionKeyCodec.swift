import Foundation
import IMCore
import IMHTTP

/// Expansion keys a target refuses, written there under a reversible encoding it accepts, and decoded
/// back when they return (docs/mappings.md, "Expansion keys across vendors").
///
/// A key is encoded for a target when the target's limits refuse it (too long, or a character outside
/// its key alphabet) or when it begins with `=` (the encoding's marker, so the encoding stays one to one):
/// - `=` + the key's UTF-8 bytes in unpadded base64url (`A-Z a-z 0-9 - _`), when that fits the target's
///   key length — decoded from the key alone;
/// - otherwise `==` + the first hex digits of the key's SHA-256 (to the target's key length) — decoded by
///   finding the original among the keys the bridge keeps for that copy of the message (every key the
///   bridge writes or sends there is kept).
/// Targets without a key alphabet limit (`extraKeyCharacters` nil) get keys as they are unless too long.
public enum ExpansionKeyCodec {
    package static let marker: Character = "="

    /// Whether `key` must be encoded for a target with these limits.
    public static func needsEncoding(_ key: String, for limits: ExpansionLimits?) -> Bool {
        guard let limits else { return false }
        if key.first == marker { return limits.extraKeyCharacters != nil }
        return key.count > limits.maxKeyLength || !limits.isValidKey(key)
    }

    /// The key as written on a target with these limits.
    public static func encode(_ key: String, for limits: ExpansionLimits?) -> String {
        guard let limits, needsEncoding(key, for: limits) else { return key }
        let plain = "=" + base64url(Array(key.utf8))
        if plain.count <= limits.maxKeyLength { return plain }
        return "==" + Hashing.sha256Hex(Array(key.utf8)).prefix(max(8, limits.maxKeyLength - 2))
    }

    /// The original of a key read from a target with these limits; `known` are the original keys the bridge
    /// keeps for that copy (to decode the hashed form). A key that is not an encoding is returned as is.
    public static func decode(_ key: String, for limits: ExpansionLimits?, known: some Sequence<String>) -> String {
        guard let limits, key.first == marker else { return key }
        if key.hasPrefix("==") {
            return known.first { encode($0, for: limits) == key } ?? key
        }
        guard let bytes = unbase64url(String(key.dropFirst())), let original = String(bytes: bytes, encoding: .utf8),
              needsEncoding(original, for: limits), encode(original, for: limits) == key else { return key }
        return original
    }

    /// The delta with every key encoded for the target.
    package static func encode(_ delta: ExpansionDelta, for limits: ExpansionLimits?) -> ExpansionDelta {
        guard limits != nil else { return delta }
        var encoded = ExpansionDelta(version: delta.version, removed: delta.removed.map { encode($0, for: limits) }, cleared: delta.cleared)
        for (key, value) in delta.set { encoded.set[encode(key, for: limits)] = value }
        return encoded
    }

    /// The delta with every key decoded (see `decode`).
    package static func decode(_ delta: ExpansionDelta, for limits: ExpansionLimits?, known: [String]) -> ExpansionDelta {
        guard limits != nil else { return delta }
        var decoded = ExpansionDelta(version: delta.version, removed: delta.removed.map { decode($0, for: limits, known: known) },
                                     cleared: delta.cleared)
        for (key, value) in delta.set { decoded.set[decode(key, for: limits, known: known)] = value }
        return decoded
    }

    package static func base64url(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    package static func unbase64url(_ text: String) -> [UInt8]? {
        guard text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64.append("=") }
        return Data(base64Encoded: base64).map(Array.init)
    }
}
