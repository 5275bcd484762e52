import Foundation
import IMCore
import IMHTTP
import IMSandbox
import Testing

/// `SecretMask` and `HTTPClientWrapper.secrets` (docs/operations.md, "Secrets a vendor echoes"): a secret
/// is masked as written and in the forms it travels in, in every header and in a text or error body of
/// a real answer over loopback; a binary success body is left byte for byte.
@Suite struct SecretMaskTests {
    static let secret = "s3cr/et key+é"

    @Test func everyFormIsMasked() {
        let mask = SecretMask([Self.secret, "abc"], pairs: [(user: "app-key", password: Self.secret)])
        let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        let encoded = Self.secret.addingPercentEncoding(withAllowedCharacters: unreserved)!
        #expect(encoded == "s3cr%2Fet%20key%2B%C3%A9")
        let base64 = Data(Self.secret.utf8).base64EncodedString()
        let basic = Data("app-key:\(Self.secret)".utf8).base64EncodedString()
        for form in [Self.secret, encoded, Self.lowercasedEscapes(encoded), encoded.replacingOccurrences(of: "%20", with: "+"), base64,
                     base64.replacingOccurrences(of: "=", with: ""), "Basic \(basic)", #"s3cr\/et key+é"#] {
            let text = "said: \(form)!"
            #expect(!mask.redact(text).contains(form) && mask.redact(text).hasPrefix("said: "), "\(form.prefix(4))…: \(mask.redact(text))")
        }
        #expect(mask.redact("abc abcd") == "abc abcd", "values shorter than 4 characters are not masked")
        let error = mask.redact(IMError(.vendorError, "x \(Self.secret)", vendorMessage: base64, details: ["k": encoded]))
        #expect(error.message == "x ***" && error.vendorMessage == "***" && error.details["k"] == "***")
        let binary: [UInt8] = [0xFF, 0xD8] + Array(Self.secret.utf8)
        #expect(mask.redact(binary) == binary, "bytes that are not UTF-8 text are left alone")
    }

    @Test func occursFindsEveryFormInText() {
        let mask = SecretMask([Self.secret, "plain-token"])
        #expect(mask.occurs(in: "Bearer plain-token"), "an ASCII form in ASCII text, found byte for byte")
        #expect(mask.occurs(in: "x=s3cr%2Fet%20key%2B%C3%A9;"), "an encoded form")
        #expect(mask.occurs(in: "value: \(Self.secret) é"), "a non-ASCII form in non-ASCII text")
        let decomposed = "s3cr/et key+e\u{301}"
        #expect(mask.occurs(in: "said \(decomposed)"), "a form canonically equal to the text's, compared as String")
        #expect(!mask.occurs(in: "plain-toke n, s3cr/et"), "no form: nothing found")
        #expect(!SecretMask().occurs(in: "plain-token"), "an empty mask finds nothing")
    }

    static func lowercasedEscapes(_ text: String) -> String {
        var result = "", escape = 0
        for character in text {
            if character == "%" { escape = 2; result.append(character); continue }
            if escape > 0 { escape -= 1; result += character.lowercased() } else { result.append(character) }
        }
        return result
    }

    /// Over loopback: an error body and headers quoting the secret (and the request's own `token`
    /// header) come back masked; a JSON success too; an image does not change.
    @Test func answersAreMaskedBeforeTheAdapterReadsThem() async throws {
        let secret = Self.secret
        let server = HTTPServer { request in
            let token = request.header("token") ?? ""
            switch request.normalizedPath {
            case "/error":
                return HTTPResponseData(status: 503, headers: [("X-Echo", "Basic " + Data("app-key:\(secret)".utf8).base64EncodedString())],
                                        body: Array("echo \(secret) \(token)".utf8))
            case "/json": return .json(JSONValue.object(["said": .string(secret), "n": .int(1)]))
            default:
                return HTTPResponseData(status: 200, headers: [("Content-Type", "image/png")], body: [0x89, 0x50] + Array(secret.utf8))
            }
        }
        try await server.start()
        defer { Task { await server.stop() } }
        let client = HTTPClientWrapper(timeoutSeconds: 5, secrets: SecretMask([], pairs: [(user: "app-key", password: secret)]))
        let derived = "puppet-token-1234"
        let error = try await client.send(OutboundRequest(method: "GET", url: server.baseURL + "/error", headers: [("token", derived)]))
        #expect(error.status == 503 && error.bodyString == "echo *** ***", "\(error.bodyString)")
        #expect(error.header("X-Echo") == "Basic ***" || error.header("X-Echo") == "***")
        let json = try await client.send(OutboundRequest(method: "GET", url: server.baseURL + "/json"))
        let said = try JSONValue.parse(Data(json.body))["said"]
        #expect(!json.bodyString.contains(secret) && said == .string("***"))
        let image = try await client.send(OutboundRequest(method: "GET", url: server.baseURL + "/image"))
        #expect(image.body == [0x89, 0x50] + Array(secret.utf8), "a binary success body is not touched")
        let plain = try await HTTPClientWrapper(timeoutSeconds: 5).send(OutboundRequest(method: "GET", url: server.baseURL + "/error"))
        #expect(plain.bodyString.contains(secret), "the control: without a mask the echo is there")
    }
}
