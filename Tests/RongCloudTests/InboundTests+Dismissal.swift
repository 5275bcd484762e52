import Foundation
import IMCore
import IMHTTP
@testable import RongCloud
import Testing

/// The `RC:GrpNtf` an app sends when it dismisses a group (`operation` "Dismiss") becomes `groupDissolved`;
/// any other group notification stays a message (docs/adapters/rongcloud.md, "Groups in live relay").
extension RongCloudInboundTests {
    @Test func aDismissGroupNotificationIsAGroupDissolvedEvent() async throws {
        let dismiss = #"{"operatorUserId":"alice","operation":"Dismiss","data":{},"message":"","extra":""}"#
        let found = await events(query: signedQuery(), body: routed("RC:GrpNtf", dismiss, channel: "GROUP"))
        #expect(found.count == 1)
        guard case .groupDissolved(let group, let by, let at)? = found.first?.kind else { Issue.record("\(found)"); return }
        #expect(group == "u2" && by == "alice" && at == 1_795_258_878_000 && found[0].eventID == "dismiss:BRGM-DEN2-01E4-BN66")
        let rename = #"{"operatorUserId":"alice","operation":"Rename","data":{},"message":"","extra":""}"#
        let other = await events(query: signedQuery(nonce: "n2"), body: routed("RC:GrpNtf", rename, uid: "BRGM-DEN2-01E4-BN67", channel: "GROUP"))
        guard case .message? = other.first?.kind else { Issue.record("a rename stays a message: \(other)"); return }
    }
}
