/// What a callback receiver remembers of a request whose signature does not cover its body (RongCloud's
/// message routing: SHA1(secret + nonce + timestamp)), so that a captured signature cannot carry another
/// body (docs/operations.md, "Forged and replayed callbacks").
///
/// - `key`: what the vendor signed once for this request (the signature, which names its nonce and
///   timestamp);
/// - `bodyDigest`: a digest of the body it arrived with;
/// - `expiresAt`: when the request's timestamp leaves the freshness window (ms): after that the
///   timestamp check refuses it anyway, and the mark may be forgotten.
public struct CallbackMark: Sendable, Hashable {
    public var backend: BackendID
    public var key: String
    public var bodyDigest: String
    public var expiresAt: Int64

    public init(backend: BackendID, key: String, bodyDigest: String, expiresAt: Int64) {
        self.backend = backend
        self.key = key
        self.bodyDigest = bodyDigest
        self.expiresAt = expiresAt
    }

    /// What remembering a mark found.
    public enum Outcome: String, Sendable, Hashable {
        /// Not seen before: now remembered.
        case first
        /// Seen with the same body: the vendor delivering the same request again (taken again; the
        /// ledger keeps its events once).
        case redelivery
        /// Seen with another body: a captured signature carrying a body it was not made for (refused).
        case reused
    }
}
