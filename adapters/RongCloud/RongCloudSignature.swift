import Crypto
import Foundation
import IMCore

/// RongCloud's request signature (vendor doc §1.1): `Signature` = lowercase hex
/// `SHA1(appSecret + nonce + timestamp)`, the three strings concatenated as UTF-8.
///
/// The same rule signs Server API calls (headers `App-Key`, `Nonce`, `Timestamp`, `Signature`, or the
/// `RC-` prefixed names, matched case-insensitively) and the message-routing callback (query
/// `nonce`, `timestamp`, `signature`). Timestamps are milliseconds in the docs and seconds in every
/// official SDK; both are accepted (the signature covers the text as sent, so the unit only matters
/// for the optional freshness check).
public enum RongCloudSignature {
    public static func sign(secret: String, nonce: String, timestamp: String) -> String {
        let digest = Insecure.SHA1.hash(data: Data((secret + nonce + timestamp).utf8))
        return digest.map { String(format: "%02x", $0) }.joined()
    }

    /// Constant-time comparison of a received signature (any hex case) with the expected one.
    public static func isValid(_ signature: String, secret: String, nonce: String, timestamp: String) -> Bool {
        let expected = Array(sign(secret: secret, nonce: nonce, timestamp: timestamp).utf8)
        let received = Array(signature.lowercased().utf8)
        guard expected.count == received.count else { return false }
        var difference: UInt8 = 0
        for index in expected.indices { difference |= expected[index] ^ received[index] }
        return difference == 0
    }

    /// A signature timestamp in milliseconds: 13 digits are milliseconds, 10 digits (or fewer) seconds.
    public static func timestampMs(_ text: String) -> Int64? {
        guard let value = Int64(text.trimmingCharacters(in: .whitespaces)), value >= 0 else { return nil }
        return value >= 100_000_000_000 ? value : value * 1000
    }

    /// The four request headers for an API call, in the documented (unprefixed) spelling.
    public static func headers(appKey: String, secret: String, nonce: String, timestamp: String) -> [(String, String)] {
        [("App-Key", appKey), ("Nonce", nonce), ("Timestamp", timestamp),
         ("Signature", sign(secret: secret, nonce: nonce, timestamp: timestamp))]
    }

    /// Looks a signing header up by its name or its `RC-` prefixed name, ignoring case.
    /// `headers` may hold any spelling; the unprefixed name wins when both are present.
    public static func header(_ name: String, in headers: [(String, String)]) -> String? {
        let plain = name.lowercased()
        let prefixed = "rc-" + plain
        return headers.first { $0.0.lowercased() == plain }?.1 ?? headers.first { $0.0.lowercased() == prefixed }?.1
    }
}
