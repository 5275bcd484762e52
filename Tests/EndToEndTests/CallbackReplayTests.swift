import BridgeTestSupport
import Foundation
import IMCore
@_spi(Testing) import IMStore
import IMHTTP
import IMLab
import PostgresTestSupport
import RongCloud
import Testing

/// A RongCloud routing signature (SHA1(secret + nonce + timestamp), no byte of the body) captured from
/// one callback is taken for that body only (docs/operations.md, "Forged and replayed callbacks"): over
/// loopback HTTP, the genuine callback is relayed once however often it is redelivered, and the same
/// signature with other bodies is refused 401 — on one bridge, and across two instances sharing one
/// PostgreSQL store.
@Suite(.serialized) struct CallbackReplayTests {
    static func body(from sender: String, uid: String, text: String, agoMs: Int64 = 0) -> [UInt8] {
        let now = Int64(Date().timeIntervalSince1970 * 1000) - agoMs
        return Array(RCRoutedMessage(fromUserId: sender, toUserId: "replay", objectName: "RC:TxtMsg", content: #"{"content":"\#(text)"}"#,
                                     channelType: "GROUP", msgTimestamp: now, msgUID: uid, source: "Android").form.encoded.utf8)
    }

    /// The query of one signed callback, as the vendor would send it (a fresh nonce, now).
    static func signedQuery() -> String {
        let nonce = String(UInt64.random(in: 0..<UInt64(1e12)))
        let timestamp = String(Int64(Date().timeIntervalSince1970 * 1000))
        let signature = RongCloudSignature.sign(secret: BridgeLab.appSecret, nonce: nonce, timestamp: timestamp)
        return "?appKey=\(BridgeLab.appKey)&nonce=\(nonce)&timestamp=\(timestamp)&signature=\(signature)"
    }

    static func post(_ base: String, query: String, body: [UInt8]) async throws -> HTTPResponseData {
        try await HTTPClientWrapper().send(OutboundRequest(url: base + "/callbacks/rc" + query,
                                                           headers: [("Content-Type", "application/x-www-form-urlencoded")], body: body))
    }

    /// The genuine body three times (two redeliveries), five other bodies with its signature: the first
    /// three 200, the five 401; `bases` are the instances' callback addresses, used in turn.
    static func replay(_ bases: [String]) async throws -> (genuine: [Int], forged: [Int]) {
        let query = signedQuery()
        let genuine = body(from: "alice", uid: "GENUINE-0001", text: "real")
        var answers: (genuine: [Int], forged: [Int]) = ([], [])
        answers.genuine.append(try await post(bases[0], query: query, body: genuine).status)
        for n in 0..<5 {
            let forged = body(from: "mallory", uid: "FORGED-000\(n)", text: "forged \(n)")
            answers.forged.append(try await post(bases[n % bases.count], query: query, body: forged).status)
        }
        for base in bases { answers.genuine.append(try await post(base, query: query, body: genuine).status) }
        return answers
    }

    @Test func aCapturedSignatureCarriesNoOtherBodyOnOneBridge() async throws {
        let env = try await InProcessBridge.start([BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member("wk", "wukong")],
                                                  routes: route("rc:group:*", "wk:group:*", direction: "forward"))
        defer { Task { await env.stop() } }
        let answers = try await Self.replay([env.listener.baseURL, env.listener.baseURL])
        #expect(answers.genuine == [200, 200, 200], "a redelivery of the genuine body is taken")
        #expect(answers.forged == [401, 401, 401, 401, 401])
        #expect(await eventually { (try? await env.records("wk", "replay").count) == 1 })
        try await Task.sleep(nanoseconds: 500_000_000)
        let records = try await env.records("wk", "replay")
        #expect(records.count == 1 && records.first?["text"]?.stringValue == "real", "\(records)")
        #expect(try env.bridge.store.read { try $0.ledgerCount() } == 1)
        let metrics = try await HTTPClientWrapper().send(OutboundRequest(method: "GET", url: env.listener.baseURL + "/metrics")).bodyString
        #expect(metrics.contains(#"imbridge_callbacks_refused_total{backend="rc",code="authentication_failed"} 5"#), "\(metrics.split(separator: "\n").filter { $0.contains("callbacks_refused") })")
    }

    @Test func aCapturedSignatureCarriesNoOtherBodyAcrossTwoInstances() async throws {
        let store = try TestPostgres.freshURL("replay")
        let rig = try await BridgeRig.make([BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member("wk", "wukong")],
                                           routes: route("rc:group:*", "wk:group:*", direction: "forward"), store: "\"\(store)\"",
                                           instances: 2, instanceYAML: { "ha:\n  instance: replay\($0)\n" })
        let bridges = try rig.ports.indices.map { try rig.launch($0, log: "bridge-\($0).log") }
        defer {
            for bridge in bridges { bridge.killWithoutWaiting() }
            Task { await rig.stop() }
        }
        for bridge in bridges { #expect(await bridge.waitUntilUp()) }
        let answers = try await Self.replay([rig.baseURL(0), rig.baseURL(1)])
        #expect(answers.genuine == [200, 200, 200], "a redelivery of the genuine body is taken by either instance")
        #expect(answers.forged == [401, 401, 401, 401, 401], "the signature one instance took is refused by the other")
        #expect(await eventually(30) { (try? await rig.lab.messages("wk").filter { $0["conversation_id"]?.stringValue == "replay" }.count) == 1 })
        try await Task.sleep(nanoseconds: 1_000_000_000)
        let records = try await rig.lab.messages("wk").filter { $0["conversation_id"]?.stringValue == "replay" }
        #expect(records.count == 1 && records.first?["text"]?.stringValue == "real", "\(records)")
    }

    /// A genuine callback redelivered after retention pruned its ledger row (a vendor's retries running late
    /// behind an outage, with a short `retention`): the id map, which is never pruned, still names the copy,
    /// and the lane does not send a second one (seed 587 in docs/reliability.md). Signed afresh each time, as
    /// a vendor signs each attempt. The message is four days old, past half the default retention of 7
    /// days, as a message whose ledger row was pruned is.
    @Test func aRedeliveryAfterItsLedgerRowWasPrunedIsNotRelayedAgain() async throws {
        let env = try await InProcessBridge.start([BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member("wk", "wukong")],
                                                  routes: route("rc:group:*", "wk:group:*", direction: "forward"))
        defer { Task { await env.stop() } }
        let genuine = Self.body(from: "alice", uid: "LATE-0001", text: "once", agoMs: 4 * 24 * 3_600_000)
        #expect(try await Self.post(env.listener.baseURL, query: Self.signedQuery(), body: genuine).status == 200)
        #expect(await eventually { (try? await env.records("wk", "replay").count) == 1 })
        #expect(await env.bridge.engine.waitUntilIdle())
        // Retention passed: the prune takes the ledger row and the done entry; the id map stays.
        let pruned = try env.bridge.store.transaction { try $0.prune(before: .max, limit: 100) }
        let ledgerLeft = try env.bridge.store.read { try $0.ledgerCount() }
        #expect(pruned.ledger == 1 && ledgerLeft == 0)
        #expect(try await Self.post(env.listener.baseURL, query: Self.signedQuery(), body: genuine).status == 200)
        #expect(await eventually { (try? env.bridge.store.read { try $0.ledgerCount() }) == 1 }, "the redelivery was recorded as new")
        #expect(await env.bridge.engine.waitUntilIdle())
        let records = try await env.records("wk", "replay")
        #expect(records.map { $0["text"]?.stringValue } == ["once"], "one copy: \(records)")
    }
}
