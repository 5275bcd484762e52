import Foundation
import IMCore
import IMMapping
import Testing

/// A seconds value too large for milliseconds in an Int64 is a malformed value (a clear error), never a
/// trap that takes the process down with every other conversation's traffic.
@Suite struct TransformRangeTests {
    @Test(arguments: [Transform.secondsCeil, .secondsRound, .secondsFraction])
    func outOfRangeSecondsAreNotConverted(_ transform: Transform) {
        #expect(transform.decode(.double(1e17)) == nil)
        #expect(transform.decode(.double(-1e300)) == nil)
        #expect(transform.decode(.int(Int64.max)) == nil)
        #expect(transform.decode(.double(9.2e15)) == .int(9_200_000_000_000_000_000))
        #expect(transform.decode(.double(1.5)) == .int(1500))
    }

    @Test func roundingNearTheTopOverflowsToNothing() {
        #expect(Transform.secondsCeil.encode(.int(Int64.max)) == nil)
        #expect(Transform.secondsRound.encode(.int(Int64.max - 100)) == nil)
        #expect(Transform.secondsCeil.encode(.int(1001)) == .int(2))
        #expect(Transform.secondsRound.encode(.int(1499)) == .int(1))
    }

    @Test func aVoiceMessageWithAnImpossibleDurationIsMalformed() throws {
        let table = MappingSet.shipped.table("rongcloud")
        guard case .object(let body) = try JSONValue.parse(#"{"remoteUrl":"https://cdn.example.com/v.aac","duration":1e17}"#) else { return }
        do {
            _ = try table.decode(wire: "RC:HQVCMsg", body: body, registry: ContentRegistry())
            Issue.record("decoded a duration of 1e17 s")
        } catch let error as IMError {
            #expect(error.code == .malformedPayload)
            #expect(error.details["field"] == "duration")
        }
    }
}
