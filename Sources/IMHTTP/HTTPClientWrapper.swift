import AsyncHTTPClient
import Foundation
import IMCore
import NIOCore
import NIOHTTP1

/// An outgoing request as plain values.
public struct OutboundRequest: Sendable {
    public var method: String
    public var url: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]?

    public init(method: String = "POST", url: String, headers: [(name: String, value: String)] = [], body: [UInt8]? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    /// A form POST (`application/x-www-form-urlencoded; charset=utf-8`).
    public static func form(_ url: String, _ form: FormBody, headers: [(name: String, value: String)] = []) -> OutboundRequest {
        OutboundRequest(url: url, headers: headers + [("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")],
                        body: FormBody.encodeBytes(form.items))
    }

    /// A JSON POST.
    public static func json(_ url: String, _ body: Data, headers: [(name: String, value: String)] = []) -> OutboundRequest {
        OutboundRequest(url: url, headers: headers + [("Content-Type", "application/json; charset=utf-8")], body: Array(body))
    }
}

/// Sends requests over AsyncHTTPClient and returns plain responses.
///
/// Contract: an HTTP answer of any status is returned, not thrown (the adapter maps vendor envelopes);
/// a transport failure (connection refused, reset, timeout) throws a retryable `IMError(.unavailable)`
/// or `.timeout`. The shared AsyncHTTPClient instance is used; nothing to shut down.
public struct HTTPClientWrapper: Sendable {
    public var timeout: TimeAmount
    public var maxResponseBytes: Int

    /// False (the default): a connection that cannot be made (nothing listens) fails at once, as a
    /// vendor's webhook sees a stopped receiver. True: AsyncHTTPClient tries to connect again until the
    /// request's deadline. The bridge wants the first: a refused connection is then a failure its retry
    /// policy backs off from and its health board shows at once, instead of a send hanging for the whole
    /// timeout (15 s by default) before anything is known.
    public var retriesConnecting: Bool

    /// The secrets no answer may show to the adapter (`SecretMask`), with the credentials the request
    /// carried in its own headers (`credentials(of:)`): every header value, and the body of
    /// an answer that is not a success or is text (JSON, a form, plain text), have them replaced by `***`
    /// before `send` returns, and so has a transport error's text. The one place a vendor's words enter
    /// the bridge: what an adapter makes of them (errors, dead letters, logs, the status page, CLI
    /// output) cannot show a secret the vendor or a proxy in front of it echoed (docs/operations.md,
    /// "Secrets a vendor echoes"). A binary success body (a media download) is not touched.
    public var secrets: SecretMask

    public init(timeoutSeconds: Int64 = 15, maxResponseBytes: Int = 32 << 20, retriesConnecting: Bool = false,
                secrets: SecretMask = SecretMask()) {
        self.timeout = .seconds(timeoutSeconds)
        self.maxResponseBytes = maxResponseBytes
        self.retriesConnecting = retriesConnecting
        self.secrets = secrets
    }

    /// The credentials `request` carries in its own headers, as sent: `Authorization` (and its value
    /// after the scheme) and any header named like a token, secret or password (a puppet's session token
    /// derived at run time). Most requests carry none (a signature is not a secret).
    static func credentials(of request: OutboundRequest) -> [String] {
        var found: [String] = []
        // The name is looked at before the value's length: most headers are not credentials, and a
        // `String.contains` of Foundation on every header of every request cost 1 % of the relay bench
        // process (docs/performance.md, "Bytes, not text, on every request").
        for (name, value) in request.headers {
            let (credential, authorization) = credentialName(name)
            guard credential, value.count >= SecretMask.minimumLength else { continue }
            found.append(value)
            if authorization, let space = value.firstIndex(of: " ") { found.append(String(value[value.index(after: space)...])) }
        }
        return found
    }

    /// Whether a header named `name` carries a credential (`Authorization`, or a name holding `token`,
    /// `secret` or `password`, in any case), and whether it is `Authorization`. An ASCII name is read from
    /// its bytes; any other as text (`credentialNameAsText`), which answers the same for ASCII.
    static func credentialName(_ name: String) -> (credential: Bool, authorization: Bool) {
        var name = name
        let answer: (Bool, Bool)? = name.withUTF8 { utf8 in
            guard ASCIICase.isASCII(utf8) else { return nil }
            if utf8.count == 13 && ASCIICase.contains(utf8, "authorization", folding: true) { return (true, true) }
            return (ASCIICase.contains(utf8, "token", folding: true) || ASCIICase.contains(utf8, "secret", folding: true)
                || ASCIICase.contains(utf8, "password", folding: true), false)
        }
        return answer ?? credentialNameAsText(name)
    }

    static func credentialNameAsText(_ name: String) -> (credential: Bool, authorization: Bool) {
        let lowered = name.lowercased()
        let authorization = lowered == "authorization"
        return (authorization || lowered.contains("token") || lowered.contains("secret") || lowered.contains("password"), authorization)
    }

    /// `response` with `secrets` masked (see `secrets`).
    public func masked(_ response: HTTPResponseData) -> HTTPResponseData {
        masked(response, also: [])
    }

    /// `response` with `secrets` and `also` (the request's own credentials, as sent) masked. Nothing is
    /// copied unless something is found (the relay's answers rarely hold anything).
    func masked(_ response: HTTPResponseData, also: [String]) -> HTTPResponseData {
        guard !secrets.isEmpty || !also.isEmpty else { return response }
        let alsoBytes = also.map { Array($0.utf8) }
        let inHeaders = response.headers.contains { header in
            secrets.occurs(in: header.value) || also.contains { header.value.contains($0) }
        }
        let type = response.header("Content-Type")?.lowercased() ?? ""
        func holds(_ word: StaticString) -> Bool { ASCIICase.contains(type, word) ?? type.contains(String(describing: word)) }
        let isText = type.isEmpty || holds("json") || type.hasPrefix("text/") || holds("form") || holds("xml")
        let inBody = (!(200..<300).contains(response.status) || isText)
            && (secrets.occurs(in: response.body) || alsoBytes.contains { SecretMask.find($0, in: response.body) })
        guard inHeaders || inBody else { return response }
        var mask = secrets
        mask.insert(also)
        var response = response
        if inHeaders { response.headers = response.headers.map { ($0.name, mask.redact($0.value)) } }
        if inBody { response.body = mask.redact(response.body) }
        return response
    }

    /// The client for `retriesConnecting: false`: the shared client's settings, but one connection attempt
    /// with 5 s to connect (as WuKongIM's webhook), and no tracing span.
    static let connectOnce: HTTPClient = {
        var configuration = untraced
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout.connect = .seconds(5)
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// The client for `retriesConnecting: true`: the shared client's settings without a tracing span.
    static let retrying = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: untraced)

    /// The shared client's settings with no tracer and no idle-read timer. The bridge bootstraps no
    /// tracer, and AsyncHTTPClient otherwise makes a span and its attributes for every request with the
    /// no-op one: 1.7 % of the relay bench process (docs/performance.md, "The HTTP floor"). The idle-read
    /// timer (90 s in these settings) is armed when a request is written and cancelled and armed again on
    /// every read of its answer — timers allocated and cancelled several times per request — while every
    /// request already has its deadline (`timeout`), which bounds the wait for its answer on its own
    /// (docs/performance.md, "The eighth sitting").
    private static var untraced: HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration.singletonConfiguration
        configuration.tracing.tracer = nil
        configuration.timeout.read = nil
        return configuration
    }

    public func send(_ request: OutboundRequest) async throws -> HTTPResponseData {
        var outgoing = HTTPClientRequest(url: request.url)
        outgoing.method = HTTPMethod(rawValue: request.method)
        for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
        // The message's trace context, when this request is part of one's way (`TraceParent.current`).
        if let trace = TraceParent.current, !outgoing.headers.contains(name: "traceparent") {
            outgoing.headers.add(name: "traceparent", value: trace.header)
        }
        let gate = WriteGate.check.map { check in { @Sendable in try check.pass() } }
        let refusal = gate.map { _ in WriteGate.Refusal() }
        if let body = request.body {
            if let gate, let refusal {
                let gated = WriteGate.GatedBody(bytes: ByteBuffer(bytes: body), check: gate, refusal: refusal)
                outgoing.body = .stream(gated, length: .known(Int64(body.count)))
            } else {
                outgoing.body = .bytes(ByteBuffer(bytes: body))
            }
        } else {
            try gate?()
        }
        do {
            let response = try await (retriesConnecting ? Self.retrying : Self.connectOnce).execute(outgoing, timeout: timeout)
            let body = try await response.body.collect(upTo: maxResponseBytes)
            return masked(HTTPResponseData(status: Int(response.status.code),
                                           headers: response.headers.map { ($0.name, $0.value) }, body: Array(buffer: body)),
                          also: Self.credentials(of: request))
        } catch where refusal?.refused != nil {
            // The write gate refused: the body was never written, so the server carried nothing out.
            throw refusal!.refused!
        } catch let error as HTTPClientError where error == .connectTimeout {
            throw IMError(.timeout, "\(request.method) \(request.url) timed out connecting", isRetryable: true, details: ["transport": "timeout"])
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            // The request went out and may still be carried out: `abandoned_after_ms` tells the caller how
            // long it was in flight (Delivery waits as long again before it trusts "no copy there").
            throw IMError(.timeout, "\(request.method) \(request.url) timed out", isRetryable: true,
                          details: ["transport": "timeout", IMError.abandonedAfterMsKey: "\(timeout.nanoseconds / 1_000_000)"])
        } catch {
            throw secrets.redact(IMError(.unavailable, "\(request.method) \(request.url) failed: \(error)", isRetryable: true,
                                         details: ["transport": Self.transportClass(error)]))
        }
    }

    /// A transport failure's class for `/healthz` (`connection_refused`, `connection_reset`, `dns`,
    /// `tls`, `network`): a fixed word, never the URL or host.
    static func transportClass(_ error: any Error) -> String {
        let text = String(describing: error).lowercased()
        if text.contains("connection refused") { return "connection_refused" }
        if text.contains("connection reset") || text.contains("remoteconnectionclosed") { return "connection_reset" }
        if text.contains("dns") || text.contains("resolve") || text.contains("unknown host") { return "dns" }
        if text.contains("tls") || text.contains("ssl") || text.contains("certificate") { return "tls" }
        return "network"
    }
}
