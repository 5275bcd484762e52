import Foundation
import IMCore
import IMHTTP
import RongCloud
@testable import RongCloudSandbox
import SandboxTestSupport
import Testing

/// Finding 12 (docs/reliability.md): the routing callbacks leave in the order the sandbox stored the
/// messages (their msgUID counter, their history order), also when publishes into one group race each
/// other — as the campaign's paced sender and a burst did in seed 40. The bridge records a RongCloud
/// conversation in the order its callbacks come (live traffic carries no sequence number that would show
/// a swap), so a sandbox that calls back out of order has the bridge relay out of order. The handler used
/// to store a message under the store's lock and only then await the deliverer: two concurrent publishes
/// could reach the deliverer the other way round.
@Suite(.serialized) struct RongCloudSandboxCallbackOrderTests {
    @Test func concurrentPublishesIntoOneGroupAreCalledBackInStoreOrder() async throws {
        try await RongCloudSandboxHelper.with { h in
            let sandbox = h.vendor
            let (senders, each) = (12, 20)
            let headers = RongCloudSandboxHelper.signedHeaders() + [("Content-Type", "application/x-www-form-urlencoded")]
            await withTaskGroup(of: Void.self) { group in
                for sender in 0..<senders {
                    // Straight into the handler, several at a time and at mixed priorities, so that requests
                    // reach the deliverer in whatever order the scheduler gives.
                    group.addTask(priority: sender.isMultiple(of: 2) ? .low : .high) {
                        for n in 0..<each {
                            let content = FormBody.escape(JSONValue.object(["content": .string("s\(sender)-\(n)")]).jsonString())
                            let body = "fromUserId=u\(sender)&toGroupId=g1&objectName=RC:TxtMsg&content=\(content)"
                            let response = await sandbox.handle(HTTPRequestData(method: "POST", path: RCPaths.groupPublish,
                                                                                headers: headers, body: Array(body.utf8)))
                            #expect(response.status == 200)
                        }
                    }
                }
            }
            let stored = sandbox.store.messages.map(\.msgUID)
            #expect(stored.count == senders * each)
            let called = await h.callbacks!.waitFor(senders * each, timeout: 150).compactMap { RongCloudSandboxHelper.fields($0)["msgUID"] }
            let first = zip(called, stored).enumerated().first { $0.element.0 != $0.element.1 }
            #expect(called == stored, "\(first.map { "callback \($0.offset + 1) carries \($0.element.0), the store's message \($0.offset + 1) is \($0.element.1)" } ?? "\(called.count) callbacks for \(stored.count) messages")")
        }
    }
}
