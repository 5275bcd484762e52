import Foundation

/// Printable forms of URLs and error texts that may hold credentials (docs/architecture.md,
/// "Secrets in errors and logs"). The rule is: when in doubt, hide more — a malformed URL is
/// redacted as if every `@` in it could end a password.
public enum Redaction {
    /// Query parameters whose values `url(_:)` may show by default (none: every value is `***`).
    public static let noParameters: Set<String> = []

    /// One URL (or text meant to be one) with its credentials replaced by `***`:
    /// - the password of `scheme://user:password@host`, where the user info runs to the **last** `@`
    ///   (a password with an unencoded `@`, `/`, `?` or `#` is hidden whole); user info with an `@` and
    ///   no `:` is hidden whole; without `://` the text from its start (or after a leading `//`) is taken
    ///   as the user info;
    /// - with no `@`, a `host:port` whose port is not a number (`postgres://user:password/db`, the `@`
    ///   forgotten): the part after the `:`;
    /// - every query parameter value except those named in `shown`, and a query item without `=`;
    /// - the fragment.
    public static func url(_ text: String, showingParameters shown: Set<String> = noParameters) -> String {
        let start: String.Index
        if let scheme = text.range(of: "://") {
            start = scheme.upperBound
        } else if text.hasPrefix("//") {
            start = text.index(text.startIndex, offsetBy: 2)
        } else {
            start = text.startIndex
        }
        var result = String(text[..<start])
        var rest = text[start...]
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            if let colon = userInfo.firstIndex(of: ":") {
                result += userInfo[..<colon] + ":***"
            } else if userInfo.contains("@") || userInfo.contains("%") {
                result += "***"
            } else {
                result += userInfo
            }
            rest = rest[at...]
        }
        // The host part (after the `@`, or all of it): host[:port], path, query, fragment.
        var fragment = ""
        if let hash = rest.firstIndex(of: "#") {
            fragment = "#***"
            rest = rest[..<hash]
        }
        var query = ""
        if let question = rest.firstIndex(of: "?") {
            query = "?" + parameters(rest[rest.index(after: question)...], showing: shown)
            rest = rest[..<question]
        }
        let authorityEnd = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        if let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") {
            let port = authority[authority.index(after: colon)...]
            if !port.allSatisfy(\.isASCII) || !port.allSatisfy(\.isNumber) {
                result += authority[...colon] + "***" + rest[authorityEnd...]
                return result + query + fragment
            }
        }
        return result + rest + query + fragment
    }

    /// `a=1&password=x&flag` with every value but those named in `shown` (and every item without `=`)
    /// as `***`.
    static func parameters(_ query: Substring, showing shown: Set<String>) -> String {
        query.split(separator: "&", omittingEmptySubsequences: false).map { item -> String in
            guard let equals = item.firstIndex(of: "=") else { return item.isEmpty ? "" : "***" }
            let name = item[..<equals]
            let decoded = (String(name).removingPercentEncoding ?? String(name)).lowercased()
            return shown.contains(decoded) ? String(item) : "\(name)=***"
        }.joined(separator: "&")
    }

    /// Free text (an error message, a vendor's answer) with the credentials of every URL in it hidden:
    /// the user info of each `scheme://…@` (to the last `@` before white space or a quote) becomes
    /// `***@`, and the value of every query parameter whose name suggests a credential (`password`,
    /// `sslpassword`, `secret`, `token`, `key`, `sig` …) becomes `***`.
    public static func text(_ text: String) -> String {
        text.replacing(userInfo) { match -> Substring in
            // `user:***@`, already redacted, stays.
            let found = match.output
            return found.hasSuffix(":***@") && !found.dropLast().contains("@") ? found : "://***@"
        }.replacing(credentialParameter) { match in
            match.output.1 + "***"
        }
    }

    /// `://` then user info (anything but white space and quotes, to the last `@` of the word) then `@`.
    nonisolated(unsafe) static let userInfo = try! Regex(#"://[^\s"'<>]*@"#, as: Substring.self)
    /// `?name=` or `&name=` with a credential-like name, and its value.
    nonisolated(unsafe) static let credentialParameter = try! Regex(
        #"(?i)([?&;](?:[a-z0-9_.%-]*(?:pass|pwd|secret|token|key|sig|auth|credential)[a-z0-9_.%-]*)=)[^&;\s"'<>#]*"#,
        as: (Substring, Substring).self)
}
