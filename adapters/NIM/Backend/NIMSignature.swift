import Foundation
import IMHTTP

/// NIM's two signatures (docs/adapters/nim.md), both lowercase hex:
/// - API requests: `CheckSum = SHA1(AppSecret + Nonce + CurTime)`, `CurTime` in seconds, `Nonce` ≤ 128 chars;
/// - message-copy callbacks: `MD5 = md5(raw body)`, `CheckSum = SHA1(AppSecret + MD5 + CurTime)`, no Nonce,
///   `CurTime` in milliseconds in the doc's examples (treated as opaque text).
public enum NIMSignature {
    /// The API request CheckSum.
    public static func requestCheckSum(appSecret: String, nonce: String, curTime: String) -> String {
        sha1Hex(appSecret + nonce + curTime)
    }

    /// The callback CheckSum over the body's MD5.
    public static func callbackCheckSum(appSecret: String, md5: String, curTime: String) -> String {
        sha1Hex(appSecret + md5 + curTime)
    }

    public static func md5Hex(_ bytes: [UInt8]) -> String { Hashing.md5Hex(bytes) }

    public static func sha1Hex(_ text: String) -> String { Hashing.sha1Hex(text) }

    /// Compares two hex strings case-insensitively in time independent of where they differ.
    public static func equalHex(_ a: String, _ b: String) -> Bool {
        Hashing.constantTimeEquals(a.lowercased(), b.lowercased())
    }

    /// The four request headers for a call signed now (`CurTime` = `nowMs / 1000`).
    public static func requestHeaders(appKey: String, appSecret: String, nowMs: Int64,
                                      nonce: String = Hashing.randomHexID())
        -> [(String, String)] {
        let curTime = String(nowMs / 1000)
        return [("AppKey", appKey), ("Nonce", nonce), ("CurTime", curTime),
                ("CheckSum", requestCheckSum(appSecret: appSecret, nonce: nonce, curTime: curTime))]
    }

    /// The four callback headers for a body signed at `curTimeMs`.
    public static func callbackHeaders(appKey: String, appSecret: String, body: [UInt8], curTimeMs: Int64) -> [(String, String)] {
        let md5 = md5Hex(body)
        let curTime = String(curTimeMs)
        return [("AppKey", appKey), ("CurTime", curTime), ("MD5", md5),
                ("CheckSum", callbackCheckSum(appSecret: appSecret, md5: md5, curTime: curTime))]
    }
}
