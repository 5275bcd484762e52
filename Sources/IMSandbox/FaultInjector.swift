import Foundation
import IMCore
import IMHTTP
import Synchronization

/// Injected failures (`POST /_sandbox/faults`): the next `count` requests whose path starts with
/// `path_prefix` fail with `status` (and `vendor_code` in the vendor's envelope) — with `after_accept`,
/// the vendor first does what the request asks and only the answer is replaced (the caller cannot know
/// its request took effect: a gateway timeout after the accept); `retry_after` (seconds) sets the
/// answer's `Retry-After` header, `0` removes the one the vendor's envelope would carry (a 429 storm with
/// and without a wait to honour); `hold_ms` holds the answer back that long (with `after_accept`, after the
/// request was carried out; with no `status`, the vendor's own answer, late: a process can be killed
/// while its request has taken effect and its answer has not come); `method` limits a rule to one HTTP
/// method (a create beside reads of the same path); `body_contains` limits it to requests whose body holds
/// that text, as sent or form-decoded (an edit's notice among the sends of one path); `latency_ms` delays every vendor request. `echo` (text) and
/// `echo_headers` (true) make the fault answer quote what a careless vendor or proxy might: the body
/// starts with `echo <text> <the request's header values>` (before the vendor's envelope, so it is no
/// longer one), and each request header comes back as `X-Echo-<name>` — how tests plant configured
/// secrets in a vendor's error (docs/operations.md, "Secrets a vendor echoes"). Rules apply in the order
/// they were added; `DELETE /_sandbox/faults` clears all.
public final class FaultInjector: Sendable {
    public struct Rule: Codable, Sendable, Equatable {
        public var status: Int
        public var vendorCode: Int?
        public var count: Int
        public var pathPrefix: String?
        /// More prefixes, any of which also matches (an operation served by several endpoints: a
        /// RongCloud send is a private or a group publish); set from Swift, not by `POST /_sandbox/faults`.
        public var otherPathPrefixes: [String]?
        /// The request is carried out, then answered with the fault.
        public var afterAccept: Bool
        /// The answer's `Retry-After` in seconds; 0 removes it; nil leaves the vendor's envelope as it is.
        public var retryAfter: Int?
        /// Text the answer quotes, and whether it quotes the request's headers too.
        public var echo: String?
        public var echoHeaders: Bool = false
        /// How long the answer is held back (ms); nil: none. A rule with `status` 0 answers as the vendor does.
        public var holdMs: Int?
        /// The HTTP method the rule is limited to; nil: any.
        public var method: String?
        /// Text the request's body must hold (as sent, or form-decoded: `+` a space, `%XX` its byte); nil: any body.
        public var bodyContains: String?
        public init(status: Int, vendorCode: Int? = nil, count: Int = 1, pathPrefix: String? = nil, afterAccept: Bool = false,
                    retryAfter: Int? = nil, otherPathPrefixes: [String]? = nil, echo: String? = nil, echoHeaders: Bool = false, holdMs: Int? = nil, method: String? = nil,
                    bodyContains: String? = nil) {
            self.bodyContains = bodyContains
            self.holdMs = holdMs
            self.method = method
            self.otherPathPrefixes = otherPathPrefixes
            self.echo = echo
            self.echoHeaders = echoHeaders
            self.status = status
            self.vendorCode = vendorCode
            self.count = count
            self.pathPrefix = pathPrefix
            self.afterAccept = afterAccept
            self.retryAfter = retryAfter
        }
        enum CodingKeys: String, CodingKey {
            case status, count
            case vendorCode = "vendor_code"
            case pathPrefix = "path_prefix"
            case afterAccept = "after_accept"
            case retryAfter = "retry_after"
            case otherPathPrefixes = "other_path_prefixes"
            case echo
            case echoHeaders = "echo_headers"
            case holdMs = "hold_ms"
            case method
            case bodyContains = "body_contains"
        }

        /// Whether a request to `path` (with `method` and `body`, when given) meets this rule.
        public func matches(_ path: String, method: String? = nil, body: [UInt8]? = nil) -> Bool {
            if let wanted = self.method, let method, wanted.uppercased() != method.uppercased() { return false }
            if let bodyContains, !Self.holds(body ?? [], bodyContains) { return false }
            let prefixes = [pathPrefix].compactMap { $0 } + (otherPathPrefixes ?? [])
            return prefixes.isEmpty || prefixes.contains { path.hasPrefix($0) }
        }

        /// Whether `body`, as sent or form-decoded, holds `text`.
        static func holds(_ body: [UInt8], _ text: String) -> Bool {
            let sent = String(decoding: body, as: UTF8.self)
            if sent.contains(text) { return true }
            return sent.replacingOccurrences(of: "+", with: " ").removingPercentEncoding?.contains(text) ?? false
        }

        /// The fault answer quoting `echo` and, with `echoHeaders`, `request`'s headers (see the type).
        public func applyEcho(of request: HTTPRequestData, to response: HTTPResponseData) -> HTTPResponseData {
            guard echo != nil || echoHeaders else { return response }
            var response = response
            var quoted = ["echo", echo ?? ""]
            if echoHeaders {
                quoted += request.headers.map(\.value)
                response.headers += request.headers.map { ("X-Echo-\($0.name)", $0.value) }
            }
            response.body = Array((quoted.joined(separator: " ") + "\n").utf8) + response.body
            response.headers.removeAll { $0.name.lowercased() == "content-type" }
            response.headers.append(("Content-Type", "text/plain; charset=utf-8"))
            return response
        }

        /// The vendor's fault answer with `retryAfter` applied.
        public func applyRetryAfter(to response: HTTPResponseData) -> HTTPResponseData {
            guard let retryAfter else { return response }
            var response = response
            response.headers.removeAll { $0.name.lowercased() == "retry-after" }
            if retryAfter > 0 { response.headers.append(("Retry-After", String(retryAfter))) }
            return response
        }
    }

    private let state = Mutex<(rules: [Rule], latencyMs: Int64, injected: Int)>(([], 0, 0))

    public init() {}

    /// Adds what a `POST /_sandbox/faults` body asks for: a rule (`status` present) and/or a latency.
    public func configure(_ body: JSONValue) throws {
        let latency = body["latency_ms"]?.int64Value
        var rule: Rule?
        let hold = body["hold_ms"]?.int64Value
        if let hold, hold < 0 { throw IMError(.invalidArgument, "hold_ms must be ≥ 0") }
        if body["status"] == nil, let hold {
            let count = body["count"]?.int64Value ?? 1
            guard count > 0 else { throw IMError(.invalidArgument, "count must be positive") }
            rule = Rule(status: 0, count: Int(count), pathPrefix: body["path_prefix"]?.stringValue, holdMs: Int(hold),
                        method: body["method"]?.stringValue, bodyContains: body["body_contains"]?.stringValue)
        } else if let status = body["status"]?.int64Value {
            guard (100...599).contains(status) else { throw IMError(.invalidArgument, "status \(status) is not an HTTP status") }
            let count = body["count"]?.int64Value ?? 1
            guard count > 0 else { throw IMError(.invalidArgument, "count must be positive") }
            let retryAfter = body["retry_after"]?.int64Value
            if let retryAfter, retryAfter < 0 { throw IMError(.invalidArgument, "retry_after must be ≥ 0 (0 removes the header)") }
            rule = Rule(status: Int(status), vendorCode: body["vendor_code"]?.int64Value.map { Int($0) }, count: Int(count),
                        pathPrefix: body["path_prefix"]?.stringValue, afterAccept: body["after_accept"] == .bool(true),
                        retryAfter: retryAfter.map { Int($0) }, echo: body["echo"]?.stringValue, echoHeaders: body["echo_headers"] == .bool(true),
                        holdMs: hold.map { Int($0) }, method: body["method"]?.stringValue, bodyContains: body["body_contains"]?.stringValue)
        }
        guard rule != nil || latency != nil else {
            throw IMError(.invalidArgument, "a fault needs `status` (with optional vendor_code, count, path_prefix, method, body_contains, after_accept, retry_after, echo, echo_headers, hold_ms), `hold_ms` alone or `latency_ms`")
        }
        state.withLock { state in
            if let rule { state.rules.append(rule) }
            if let latency { state.latencyMs = max(0, latency) }
        }
    }

    public func add(_ rule: Rule) { state.withLock { $0.rules.append(rule) } }

    public func clear() { state.withLock { $0 = ([], 0, $0.injected) } }

    /// Consumes one matching rule for `path` (and `method`, `body`), if any.
    public func take(for path: String, method: String? = nil, body: [UInt8]? = nil) -> Rule? {
        state.withLock { state in
            guard let index = state.rules.firstIndex(where: { $0.matches(path, method: method, body: body) }) else { return nil }
            let rule = state.rules[index]
            state.rules[index].count -= 1
            if state.rules[index].count == 0 { state.rules.remove(at: index) }
            state.injected += 1
            return rule
        }
    }

    public var latencyMs: Int64 { state.withLock { $0.latencyMs } }

    /// Faults injected so far.
    public var injectedCount: Int { state.withLock { $0.injected } }

    public var pendingRules: [Rule] { state.withLock { $0.rules } }
}
