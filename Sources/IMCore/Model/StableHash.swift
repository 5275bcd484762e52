/// A hash that stays the same across processes and releases (unlike `hashValue`, seeded per process):
/// for ids and keys the bridge derives from text and finds again later, or another process must derive
/// alike (a PostgreSQL lock key, an event id part, RongCloud's `msgRandom`).
public enum StableHash {
    /// 64-bit FNV-1a of `text`'s UTF-8 bytes.
    public static func fnv1a64(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }
}
