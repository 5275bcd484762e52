import Crypto
import Foundation

/// The digests vendors sign with, as lowercase hex.
public enum Hashing {
    // Digests are written out from their bytes (`withUnsafeBytes`): iterated as a `Sequence`, a digest
    // gave no size ahead, and the hex buffer grew step by step on every signature and body digest
    // (docs/performance.md, "Bytes, not text, on every request").
    public static func sha1Hex(_ text: String) -> String { Insecure.SHA1.hash(data: Array(text.utf8)).withUnsafeBytes { hex($0) } }
    public static func sha1Hex(_ bytes: [UInt8]) -> String { Insecure.SHA1.hash(data: bytes).withUnsafeBytes { hex($0) } }
    public static func md5Hex(_ bytes: [UInt8]) -> String { Insecure.MD5.hash(data: bytes).withUnsafeBytes { hex($0) } }
    public static func md5Hex(_ text: String) -> String { md5Hex(Array(text.utf8)) }
    public static func sha256Hex(_ bytes: [UInt8]) -> String { SHA256.hash(data: bytes).withUnsafeBytes { hex($0) } }

    public static func hmacSHA256Hex(key: String, _ text: String) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: Array(text.utf8), using: SymmetricKey(data: Array(key.utf8)))
        return code.withUnsafeBytes { hex($0) }
    }

    /// CRC-32 (IEEE 802.3, as Go's `crc32.ChecksumIEEE`): WuKong's person-channel ids, JMessage's
    /// `media_crc32`.
    public static func crc32(_ text: String) -> UInt32 { crc32(Array(text.utf8)) }

    public static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = crc32Table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }

    private static let crc32Table: [UInt32] = (0..<256).map { index -> UInt32 in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    /// Compares two signatures in time independent of where they differ.
    public static func constantTimeEquals(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var difference: UInt8 = 0
        for index in x.indices { difference |= x[index] ^ y[index] }
        return difference == 0
    }

    /// Lowercase hex. (`String(format: "%02x")` per byte cost ≈ 4 % of the bridge's CPU: every
    /// RongCloud request is signed.)
    static func hex(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { utf8 in
            var index = 0
            for byte in bytes {
                utf8[index] = hexDigits[Int(byte >> 4)]
                utf8[index + 1] = hexDigits[Int(byte & 0x0F)]
                index += 2
            }
            return index
        }
    }

    static func hex(_ digest: some Sequence<UInt8>) -> String {
        var utf8: [UInt8] = []
        utf8.reserveCapacity(digest.underestimatedCount * 2)
        for byte in digest {
            utf8.append(hexDigits[Int(byte >> 4)])
            utf8.append(hexDigits[Int(byte & 0x0F)])
        }
        return String(decoding: utf8, as: UTF8.self)
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// A random UUID as 32 lowercase hex digits, without dashes (request ids, nonces): what
    /// `uuidString` without its dashes, lowercased, gives, without Foundation's string replacing
    /// (1.4 % of the relay's CPU when every RongCloud call made one so).
    public static func randomHexID() -> String {
        withUnsafeBytes(of: UUID().uuid) { hex($0) }
    }
}
