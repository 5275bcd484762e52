import BridgeTestSupport
import Foundation
import IMCore
import IMHTTP
import IMLab
import IMOutbox
import IMStore
import PostgresTestSupport
import Testing

/// Portals with two `imbridge run` on one PostgreSQL behind a round-robin forwarder (docs/architecture.md,
/// "Portals"; docs/high-availability.md): several RongCloud groups appear at once on a wildcard route into
/// NIM, each instance taking half of the callbacks, and NIM's creations answer slowly, so both instances meet
/// every new group while its creation is under way. Each source group gets exactly one team, and its
/// messages arrive once, in order.
extension CrashTests {
    @Suite(.serialized) struct PortalsTwoInstancesTests {
        static let groups = (1...5).map { "n\($0)" }
        static let perGroup = 6

        @Test func severalNewGroupsAtOnceOnTwoInstancesGetOneTeamEach() async throws {
            let routes = "  - from: \"rc:group:*\"\n    to: \"yx:group:*\"\n    direction: forward\n    users: puppet\n"
            let pair = try await InstancePair.start("portals", routes: routes,
                                                    members: [BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member("yx", "nim")])
            defer { pair.stop() }
            #expect(try await pair.healthy())
            let lab = pair.lab
            let rc = try #require(try await lab.userBackend("rc", registry: ContentRegistry()) as? any GroupDirectory)
            let nim = try #require(try await lab.userBackend("yx", registry: ContentRegistry()) as? any GroupDirectory)
            for (index, id) in Self.groups.enumerated() {
                _ = try await rc.createGroup(GroupProfile(id: GroupID(id), name: "新群\(index + 1)", owner: "alice", members: ["alice", UserID("m\(index)")]))
            }
            // Every NIM call answers 150 ms late: a team's creation is under way while the group's next
            // messages reach the other instance.
            _ = try await HTTPClientWrapper().send(.json(lab.url(of: "yx") + "/_sandbox/faults", Data(#"{"latency_ms":150}"#.utf8)))

            try await withThrowingTaskGroup(of: Void.self) { tasks in
                for (index, id) in Self.groups.enumerated() {
                    tasks.addTask {
                        for n in 1...Self.perGroup {
                            let sender = UserID(n % 2 == 0 ? "m\(index)" : "alice")
                            _ = try await rc.send(OutgoingMessage(conversation: .group(GroupID(id)), sender: sender, content: .text("\(id) #\(n)")))
                        }
                    }
                }
                try await tasks.waitForAll()
            }
            let total = Self.groups.count * Self.perGroup
            let arrived = try await eventually(180) { try await PortalsEndToEndTests.texts(lab, on: "yx").count >= total }
            let logs = pair.bridges.map { $0.output.suffix(2000) }.joined(separator: "\n---\n")
            #expect(arrived, "\(logs)")
            try await Task.sleep(nanoseconds: 2_000_000_000)

            let store = try BridgeStore(path: pair.store)
            var teams: [GroupID] = []
            for id in Self.groups {
                let key = PortalMap.key(source: "rc", conversation: .group(GroupID(id)), target: "yx")
                if let team = try store.read({ try PortalMap.group(key, $0) }) { teams.append(team) }
            }
            #expect(teams.count == Self.groups.count && Set(teams).count == teams.count, "one recorded team per group: \(teams)")
            // Every team the bridge made has alice's puppet in it (the owner of each): NIM lists them.
            let made = try await nim.groups(of: "rc_alice")
            #expect(Set(made) == Set(teams) && made.count == Self.groups.count, "exactly one NIM team per group: \(made) vs \(teams)")
            let texts = try await PortalsEndToEndTests.texts(lab, on: "yx")
            for (index, (id, team)) in zip(Self.groups, teams).enumerated() {
                #expect(texts.filter { $0.conversation == team.rawValue }.map(\.text) == (1...Self.perGroup).map { "\(id) #\($0)" }, "\(id) in \(team)")
                let members = Set(try await nim.group(team)?.members ?? [])
                #expect(members.isSuperset(of: ["rc_alice", UserID("rc_m\(index)")]), "\(id): \(members)")
            }
            #expect(texts.count == total, "nothing elsewhere, nothing twice: \(texts.count) of \(total)")
            #expect(try store.read { try $0.count(state: .dead) } == 0, "\(logs)")
            for bridge in pair.bridges { #expect(await bridge.terminate() == 0) }
        }
    }
}
