import BridgeTestSupport
import Foundation
import IMBridgeApp
import IMCore
import IMHTTP
import IMLab
import IMOutbox
import IMStore
import Synchronization
import Testing
@testable import WuKongSandbox

/// Portals under a crash (docs/architecture.md, "Portals"; docs/reliability.md, "Portals"): the bridge is
/// SIGKILLed after the target carried out a group's creation and before the bridge recorded the pair. The
/// target's answer is held back (`hold_ms` on `POST /_sandbox/faults`), so the kill falls in that gap every
/// time, not by chance. After the restart each source group has exactly one target group and every message
/// arrives once, in order.
extension PortalsEndToEndTests {
    /// The path of a group's creation on each target.
    static let createPaths: [BackendID: String] = ["yx": "/team/create.action", "jm": "/v1/groups", "wk": "/v1/group/create"]

    /// Every group on `target` that has one of `owners` in it (NIM lists an account's teams only), or the
    /// app's groups (JMessage), or the business server's (WuKong, read from the sandbox: neither WuKongIM nor
    /// its business server lists groups).
    static func targetGroups(_ lab: BridgeLab, _ target: BackendID, owners: [UserID]) async throws -> Set<GroupID> {
        if let wukong = lab.sandboxes[target]?.vendor as? WuKongSandbox {
            return Set(wukong.directory.withLock { $0.groups.keys.map { GroupID($0) } })
        }
        let far = try #require(try await lab.userBackend(target, registry: ContentRegistry()) as? any GroupDirectory)
        if target == "yx" {
            var all = Set<GroupID>()
            for owner in owners { all.formUnion(try await far.groups(of: owner)) }
            return all
        }
        return Set(try await far.allGroups())
    }

    @Test(arguments: targets) func killedBetweenACreationAndItsRecordTheRestartFindsTheGroupAndMakesNoSecond(_ target: Target) async throws {
        let routes = "  - from: \"rc:group:*\"\n    to: \"\(target.id):group:*\"\n    direction: forward\n    users: puppet\n"
        // The target's answers may take 30 s: the held one is not given up on before the kill.
        let rig = try await BridgeRig.make([BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member(target.id, target.vendor, settings: ["timeout": "30s"])],
                                           routes: routes)
        defer { Task { await rig.stop() } }
        let lab = rig.lab
        let rc = try #require(try await lab.userBackend("rc", registry: ContentRegistry()) as? any GroupDirectory)
        _ = try await rc.createGroup(GroupProfile(id: "k1", name: "断点一", owner: "alice", members: ["alice", "bob"]))
        _ = try await rc.createGroup(GroupProfile(id: "k2", name: "断点二", owner: "carol", members: ["carol", "alice"]))
        let owners: [UserID] = ["rc_alice", "rc_carol"]
        let sandbox = try #require(lab.sandboxes[target.id])
        // The first creation on the target is carried out at once; its answer waits 25 s.
        let path = try #require(Self.createPaths[target.id])
        let hold = #"{"hold_ms":25000,"count":1,"method":"POST","path_prefix":"\#(path)"}"#
        #expect(try await HTTPClientWrapper().send(.json(lab.url(of: target.id) + "/_sandbox/faults", Data(hold.utf8))).status == 200)
        let first = try await rig.start()
        defer { first.killWithoutWaiting() }

        for n in 1...3 {
            _ = try await rc.send(OutgoingMessage(conversation: .group("k1"), sender: n == 2 ? "bob" : "alice", content: .text("k1 #\(n)")))
        }
        // k1's creation was taken by the hold, and its three messages wait behind it in the portal's lane.
        let store = try BridgeStore(path: rig.sqlitePath)
        let lane = PortalMap.lane(target: target.id, source: "rc", group: "k1")
        let held = try await eventually(60) {
            let queued = try store.read { try $0.pendingEntries(of: lane, limit: 10) }.count
            return sandbox.faults.injectedCount == 1 && queued >= 4
        }
        #expect(held, "\(first.output.suffix(3000))")
        // The sandbox counts the fault when it takes the request, before the vendor has carried it out: the
        // group shows once the handler ran, which on a loaded machine can be a moment after the count.
        var created = Set<GroupID>()
        _ = try await eventually(30) {
            created = try await Self.targetGroups(lab, target.id, owners: owners)
            return !created.isEmpty
        }
        #expect(created.count == 1, "the held creation was carried out: \(created)")
        // A second group meanwhile: its creation is not held, and it is recorded.
        for n in 1...3 { _ = try await rc.send(OutgoingMessage(conversation: .group("k2"), sender: "carol", content: .text("k2 #\(n)"))) }
        #expect(try await eventually(60) { try await Self.texts(lab, on: target.id).count == 3 }, "\(first.output.suffix(3000))")

        await first.kill()
        let key = PortalMap.key(source: "rc", conversation: .group("k1"), target: target.id)
        let (recorded, pending) = try store.read { (try PortalMap.group(key, $0), try $0.checkpoint(PortalMap.pendingKey(key))) }
        #expect(recorded == nil && pending?.isEmpty == false, "killed after the creation, before its record: \(String(describing: recorded)) \(String(describing: pending))")

        _ = try await HTTPClientWrapper().send(OutboundRequest(method: "DELETE", url: lab.url(of: target.id) + "/_sandbox/faults"))
        let second = try await rig.start(log: "bridge-2.log")
        defer { second.killWithoutWaiting() }
        _ = try await rc.send(OutgoingMessage(conversation: .group("k1"), sender: "alice", content: .text("k1 #4")))
        _ = try await rc.send(OutgoingMessage(conversation: .group("k2"), sender: "carol", content: .text("k2 #4")))
        let arrived = try await eventually(60) { try await Self.texts(lab, on: target.id).count >= 8 }
        #expect(arrived, "\(second.output.suffix(3000))")

        let k1 = try #require(try Self.portal(lab, "k1", on: target.id)), k2 = try #require(try Self.portal(lab, "k2", on: target.id))
        let groups = try await Self.targetGroups(lab, target.id, owners: owners)
        let oneEach = {
            #expect(created == [k1], "the group the killed run created is the one recorded: \(created) vs \(k1)")
            #expect(groups == [k1, k2], "exactly one target group per source group: \(groups)")
        }
        oneEach()
        try await Task.sleep(nanoseconds: 1_000_000_000)
        let texts = try await Self.texts(lab, on: target.id)
        #expect(texts.filter { $0.conversation == k1.rawValue }.map(\.text) == ["k1 #1", "k1 #2", "k1 #3", "k1 #4"])
        #expect(texts.filter { $0.conversation == k2.rawValue }.map(\.text) == ["k2 #1", "k2 #2", "k2 #3", "k2 #4"])
        #expect(texts.count == 8, "nothing elsewhere, nothing twice: \(texts)")
        #expect(try store.read { try $0.count(state: .dead) } == 0, "\(second.output.suffix(3000))")
        #expect(await second.terminate() == 0)
    }
}
