import Foundation
import IMCore
import IMHTTP

/// RongCloud's request signature (docs/adapters/rongcloud.md): `Signature` = lowercase hex
/// `SHA1(appSecret + nonce + timestamp)`, the three strings concatenated as UTF-8.
///
/// The same rule signs Server API calls (headers `App-Key`, `Nonce`, `Timestamp`, `Signature`, or the
/// `RC-` prefixed names, matched case-insensitively) and the message-routing callback (query
/// `nonce`, `timestamp`, `signature`). Timestamps are milliseconds in the docs and seconds in every
/// official SDK; both are accepted (the signature covers the text as sent, so the unit only matters
/// for the optional freshness check).
public enum RongCloudSignature {
    public static func sign(secret: String, nonce: String, timestamp: String) -> String {
        Hashing.sha1Hex(secret + nonce + timestamp)
    }

    /// Constant-time comparison of a received signature (any hex case) with the expected one.
    public static func isValid(_ signature: String, secret: String, nonce: String, timestamp: String) -> Bool {
        Hashing.constantTimeEquals(sign(secret: secret, nonce: nonce, timestamp: timestamp), signature.lowercased())
    }

    /// A signature timestamp in milliseconds: 13 digits are milliseconds, 10 digits (or fewer) seconds.
    public static func timestampMs(_ text: String) -> Int64? { Lenient.epochMs(text) }

    /// The four request headers for an API call, in the documented (unprefixed) spelling.
    public static func headers(appKey: String, secret: String, nonce: String, timestamp: String) -> [(name: String, value: String)] {
        [("App-Key", appKey), ("Nonce", nonce), ("Timestamp", timestamp),
         ("Signature", sign(secret: secret, nonce: nonce, timestamp: timestamp))]
    }
}
