import IMCore
import Testing
@testable import RongCloud

struct SignatureAndErrorTests {
    @Test func documentedTestVectors() {
        #expect(RongCloudSignature.sign(secret: "Y1W2MeFwwwRxa0", nonce: "14314", timestamp: "1408710653000")
                == "30be0bbca9c9b2e27578701e9fda2358a814c88f")
        #expect(RongCloudSignature.sign(secret: "secret", nonce: "95493253", timestamp: "1795258879")
                == "5c772994e494a96a6f14c4427dd7ae820f4ac41e")
    }

    @Test func verificationIgnoresHexCaseAndRejectsAnyOtherChange() {
        let good = "30BE0BBCA9C9B2E27578701E9FDA2358A814C88F"
        #expect(RongCloudSignature.isValid(good, secret: "Y1W2MeFwwwRxa0", nonce: "14314", timestamp: "1408710653000"))
        #expect(!RongCloudSignature.isValid(good, secret: "Y1W2MeFwwwRxa1", nonce: "14314", timestamp: "1408710653000"))
        #expect(!RongCloudSignature.isValid(good, secret: "Y1W2MeFwwwRxa0", nonce: "14315", timestamp: "1408710653000"))
        #expect(!RongCloudSignature.isValid(String(good.dropLast()), secret: "Y1W2MeFwwwRxa0", nonce: "14314", timestamp: "1408710653000"))
    }

    @Test func timestampsInSecondsOrMilliseconds() {
        #expect(RongCloudSignature.timestampMs("1795258879") == 1_795_258_879_000)
        #expect(RongCloudSignature.timestampMs("1408710653000") == 1_408_710_653_000)
        #expect(RongCloudSignature.timestampMs("abc") == nil)
    }

    @Test(arguments: [
        (1004, 401, IMError.Code.authenticationFailed, false),
        (1001, 403, .authenticationFailed, false),
        (1008, 429, .rateLimited, true),
        (1002, 400, .invalidArgument, false),
        (1501, 400, .invalidArgument, false),
        (1005, 400, .limitExceeded, false),
        (1502, 400, .limitExceeded, false),
        (1508, 413, .limitExceeded, false),
        (1009, 403, .permissionDenied, false),
        (1000, 500, .unavailable, true),
        (1050, 500, .unavailable, true),
        (4242, 400, .vendorError, false),
    ])
    func errorCodeTable(code: Int, status: Int, neutral: IMError.Code, retryable: Bool) {
        #expect(RongCloudErrorCode.httpStatus(for: code) == status)
        let error = RongCloudErrorCode.imError(code: code, message: nil)
        #expect(error.code == neutral && error.isRetryable == retryable && error.vendorCode == String(code))
        #expect(error.vendorMessage?.isEmpty == false)
    }

    @Test func rateLimitCarriesRetryAfter() {
        #expect(RongCloudErrorCode.imError(code: 1008, message: "too fast", retryAfterMs: 2500).retryAfterMs == 2500)
        #expect(RongCloudErrorCode.imError(code: 1008, message: "too fast").retryAfterMs == 1000)
        #expect(RongCloudErrorCode.imError(code: 1002, message: "bad").retryAfterMs == nil)
    }
}
