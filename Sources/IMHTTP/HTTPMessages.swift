import Foundation

/// A received HTTP request as plain values: what sandboxes and callback receivers work with, free of
/// any server framework. Header lookup is case-insensitive; the query keeps repeated keys in order.
public struct HTTPRequestData: Sendable {
    public var method: String
    public var path: String
    /// The raw query string without `?` (nil when absent).
    public var rawQuery: String?
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(method: String, path: String, rawQuery: String? = nil, headers: [(name: String, value: String)] = [],
                body: [UInt8] = []) {
        self.method = method.uppercased()
        self.path = path
        self.rawQuery = rawQuery
        self.headers = headers
        self.body = body
    }

    /// The first header with this name, compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { ASCIICase.equal($0.name, name) ?? ($0.name.caseInsensitiveCompare(name) == .orderedSame) }?.value
    }

    /// The first of several alternative header names that is present (`App-Key` / `RC-App-Key`).
    public func header(anyOf names: [String]) -> String? {
        for name in names { if let value = header(name) { return value } }
        return nil
    }

    /// Query items in order, decoded leniently (see `FormBody.parse`).
    public var query: [(name: String, value: String)] { rawQuery.map(FormBody.parse) ?? [] }

    public func queryValue(_ name: String) -> String? { query.first { $0.name == name }?.value }

    public var bodyString: String { String(decoding: body, as: UTF8.self) }

    /// The body as a form (`application/x-www-form-urlencoded`), decoded leniently.
    public var form: FormBody { FormBody(items: FormBody.parse(bodyString)) }

    /// The path without trailing slashes ("/user/getToken.json/" → "/user/getToken.json").
    public var normalizedPath: String {
        var path = self.path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        return path
    }
}

/// A response as plain values.
public struct HTTPResponseData: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? {
        headers.first { ASCIICase.equal($0.name, name) ?? ($0.name.caseInsensitiveCompare(name) == .orderedSame) }?.value
    }

    public var bodyString: String { String(decoding: body, as: UTF8.self) }

    /// A JSON response with `Content-Type: application/json; charset=utf-8`.
    public static func json(_ data: Data, status: Int = 200) -> HTTPResponseData {
        HTTPResponseData(status: status, headers: [("Content-Type", "application/json; charset=utf-8")], body: Array(data))
    }

    public static func json<T: Encodable>(_ value: T, status: Int = 200) -> HTTPResponseData {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return json((try? encoder.encode(value)) ?? Data("{}".utf8), status: status)
    }

    public static func text(_ text: String, status: Int = 200) -> HTTPResponseData {
        HTTPResponseData(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Array(text.utf8))
    }

    /// Milliseconds from a `Retry-After` header given in seconds, when present.
    public var retryAfterMs: Int64? {
        guard let value = header("Retry-After")?.trimmingCharacters(in: .whitespaces), let seconds = Double(value) else { return nil }
        return Int64(seconds * 1000)
    }
}
