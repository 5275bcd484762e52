import IMCore
import NIM
import Testing

@Suite struct SignatureTests {
    /// The vendor doc's API test vector (§1.2).
    @Test func requestCheckSumMatchesTheDocVector() {
        #expect(NIMSignature.requestCheckSum(appSecret: "0123456789ab", nonce: "4tgggergigwow323t23t", curTime: "1443592222")
            == "2b3c3ba113c760606d5830e4d807ad8490040efd")
    }

    /// The vendor doc's message-copy test vector (§6.1).
    @Test func callbackSignatureMatchesTheDocVector() {
        let body = #"{"eventType":"1","convType":"PERSON","to":"222","fromAccount":"111","msgType":"TEXT","body":"hello","msgTimestamp":"1441977355557","msgidClient":"1234567","msgidServer":"3456789"}"#
        let md5 = NIMSignature.md5Hex(Array(body.utf8))
        #expect(md5 == "98e89cb5e7688a2f419583195c3f6c4a")
        #expect(NIMSignature.callbackCheckSum(appSecret: "0123456789ab", md5: md5, curTime: "1440570500855")
            == "ca35845e3c6fe4fb7aa85c358ffa91bc75f70043")
    }
}
