import Foundation

/// Configured secrets and the forms they travel in, masked by value wherever a vendor's words may
/// quote them (docs/operations.md, "Secrets a vendor echoes"): an answer's body and headers are masked
/// before an adapter reads them (`HTTPClientWrapper.secrets`), so no error, log line, dead letter, status
/// page or CLI output made from them can show one.
///
/// Each secret is masked as written and in its encodings: percent-encoded (as in a URL or a form,
/// upper- and lower-case hex, `+` for a space), base64 (with and without padding, and URL-safe),
/// JSON-escaped; a user and password pair also as the HTTP Basic credentials `base64(user:password)`.
/// Values shorter than `minimumLength` are not masked (they would blank out ordinary words).
public struct SecretMask: Sendable, Hashable {
    public static let minimumLength = 4
    /// What a masked value is replaced by.
    public static let shown = "***"

    /// Every form, longest first (a form containing another is replaced whole).
    public private(set) var forms: [String] = []
    /// The forms as UTF-8 bytes, for `occurs(in:)`.
    private var formBytes: [[UInt8]] = []
    /// Whether every form is ASCII (then a text that is ASCII too is searched byte for byte alone).
    private var formsAreASCII = true

    public init() {}

    /// `secrets` and their encodings; `pairs` (user, password) also as Basic credentials.
    public init(_ secrets: some Sequence<String>, pairs: [(user: String, password: String)] = []) {
        for secret in secrets { add(secret) }
        for pair in pairs { addBasic(user: pair.user, password: pair.password) }
    }

    public var isEmpty: Bool { forms.isEmpty }

    /// Adds `secret` and its encodings.
    public mutating func add(_ secret: String) {
        guard secret.count >= Self.minimumLength else { return }
        var found = [secret]
        if let encoded = secret.addingPercentEncoding(withAllowedCharacters: Self.unreserved) {
            found += [encoded, Self.lowercasingEscapes(encoded), encoded.replacingOccurrences(of: "%20", with: "+")]
        }
        found += Self.base64Forms(Data(secret.utf8))
        found.append(secret.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "/", with: "\\/"))
        insert(found)
    }

    /// Adds the HTTP Basic credentials of `user` and `password` (`base64(user:password)`), and `password`.
    public mutating func addBasic(user: String, password: String) {
        add(password)
        guard password.count >= Self.minimumLength else { return }
        insert(Self.base64Forms(Data("\(user):\(password)".utf8)))
    }

    public mutating func merge(_ other: SecretMask) { insert(other.forms) }

    public func merging(_ other: SecretMask) -> SecretMask {
        var merged = self
        merged.merge(other)
        return merged
    }

    /// `text` with every form replaced by `***`.
    public func redact(_ text: String) -> String {
        var text = text
        for form in forms where text.contains(form) { text = text.replacingOccurrences(of: form, with: Self.shown) }
        return text
    }

    /// `bytes` masked when they are UTF-8 text holding a form; other bytes (an image) come back as they are.
    public func redact(_ bytes: [UInt8]) -> [UInt8] {
        guard !forms.isEmpty, let text = String(validating: bytes, as: UTF8.self) else { return bytes }
        let masked = redact(text)
        return masked == text ? bytes : Array(masked.utf8)
    }

    /// `error` with its message, vendor message and details masked.
    public func redact(_ error: IMError) -> IMError {
        guard !forms.isEmpty else { return error }
        var error = error
        error.message = redact(error.message)
        error.vendorMessage = error.vendorMessage.map(redact)
        error.details = error.details.mapValues(redact)
        return error
    }

    /// Adds `found` as they are (no encodings): values already in the form they travel in.
    public mutating func insert(_ found: [String]) {
        for form in found where form.count >= Self.minimumLength && !forms.contains(form) { forms.append(form) }
        forms.sort { $0.count > $1.count }
        formBytes = forms.map { Array($0.utf8) }
        formsAreASCII = formBytes.allSatisfy { $0.allSatisfy { $0 < 0x80 } }
    }

    /// Whether any form occurs in `text` (no copy). Searched byte for byte, which finds every match
    /// `String.contains` finds when text and forms are ASCII (Foundation's `contains` would bridge each
    /// comparison through `NSString`: the relay asks this of every header of every vendor answer,
    /// docs/performance.md, "Profile"); other text is also compared as `String`, as before.
    public func occurs(in text: String) -> Bool {
        guard !forms.isEmpty else { return false }
        var text = text
        let (found, ascii) = text.withUTF8 { bytes in
            (formBytes.contains { Self.find($0, in: bytes) }, bytes.allSatisfy { $0 < 0x80 })
        }
        if found { return true }
        return !(ascii && formsAreASCII) && forms.contains { text.contains($0) }
    }

    /// Whether any form occurs in `bytes`, compared byte for byte (no copy, no decoding).
    public func occurs(in bytes: [UInt8]) -> Bool {
        formBytes.contains { Self.find($0, in: bytes) }
    }

    /// Whether `needle` occurs in `haystack`.
    public static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Bool {
        haystack.withUnsafeBufferPointer { find(needle, in: $0) }
    }

    static func find(_ needle: [UInt8], in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = needle.first, needle.count <= bytes.count else { return false }
        var index = 0
        let last = bytes.count - needle.count
        while index <= last {
            if bytes[index] == first, bytes[index..<(index + needle.count)].elementsEqual(needle) { return true }
            index += 1
        }
        return false
    }

    /// RFC 3986's unreserved characters: everything else is percent-encoded.
    static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    static func lowercasingEscapes(_ text: String) -> String {
        var result = "", escape = 0
        for character in text {
            if character == "%" { escape = 2; result.append(character); continue }
            if escape > 0 { escape -= 1; result += character.lowercased() } else { result.append(character) }
        }
        return result
    }

    static func base64Forms(_ data: Data) -> [String] {
        let padded = data.base64EncodedString()
        let unpadded = padded.replacingOccurrences(of: "=", with: "")
        let urlSafe = unpadded.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        return [padded, unpadded, urlSafe]
    }
}
