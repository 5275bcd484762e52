import Foundation
import IMCore
import IMLab
import IMStore
import SandboxTestSupport
import Synchronization
@testable import WuKongSandbox

/// `new-groups` (docs/reliability.md, "Fault kinds"): a portals run. Every source group goes through one
/// wildcard route into a target that gives groups ids of its own, so the bridge sets up each target group
/// and keeps the pair in its conversation map (docs/architecture.md, "Portals"); more source groups appear
/// mid-run. The checker finds each target group's conversation through that map, and counts the target's
/// groups: exactly one per source group, whatever the faults did between a creation and its record.
enum ChaosPortals {
    /// The one route of a portals run.
    static func routes(_ plan: ChaosPlan) -> String {
        "  - from: \"\(plan.source.name):group:*\"\n    to: \"\(plan.target.name):group:*\"\n    direction: forward\n"
    }

    /// A group appearing on the source: on NIM a team made first (NIM refuses messages into a team it does
    /// not have), elsewhere its first text makes it (as the plan's other groups).
    static func appear(_ group: String, plan: ChaosPlan, lab: BridgeLab) async throws {
        guard plan.source.vendor == "nim" else { return }
        let senders = ChaosCampaign.senders.map(\.rawValue)
        try await SandboxRig.seedGroup(at: lab.url(of: plan.source.name), plan.source.groupID(group, of: plan.allGroups),
                                       owner: senders[0], members: Array(senders.dropFirst()), name: group)
    }

    /// The conversation map as the checker reads it: each target group → the conversation its source
    /// group stands for. The store is opened at the first read (after the bridge has made it) and kept;
    /// a read that fails (a fault on the store) gives the names read before.
    final class Names: Sendable {
        let plan: ChaosPlan
        let storePath: String
        private let state = Mutex<(store: BridgeStore?, names: [String: String])>((nil, [:]))

        init(plan: ChaosPlan, storePath: String) {
            self.plan = plan
            self.storePath = storePath
        }

        func current() -> [String: String] {
            guard plan.portals else { return [:] }
            let prefix = "portal:\(plan.source.name):group:", suffix = "->\(plan.target.name)"
            return state.withLock { state in
                if state.store == nil { state.store = try? BridgeStore(path: storePath) }
                guard let rows = try? state.store?.read({ try $0.checkpoints(prefix: prefix) }) else { return state.names }
                var names: [String: String] = [:]
                for (name, value) in rows where name.hasSuffix(suffix) && !value.isEmpty {
                    let group = String(name.dropFirst(prefix.count).dropLast(suffix.count))
                    names[value] = plan.source.conversation(ofGroup: group, in: plan.allGroups)
                }
                state.names = names
                return names
            }
        }

        func close() { state.withLock { $0.store?.close() } }
    }

    /// Exactly one target group per source group: one map entry per conversation of the run, and on the
    /// target as many groups as the run has, each one the map names.
    static func groupProblems(_ plan: ChaosPlan, lab: BridgeLab, names: [String: String]) async throws -> [String] {
        guard plan.portals else { return [] }
        var problems: [String] = []
        var byConversation: [String: [String]] = [:]
        for (group, conversation) in names { byConversation[conversation, default: []].append(group) }
        for conversation in plan.allGroups where byConversation[conversation]?.count != 1 {
            problems.append("TARGET GROUPS: conversation \(conversation) has \(byConversation[conversation]?.count ?? 0) target groups in the conversation map "
                            + "\((byConversation[conversation] ?? []).sorted())")
        }
        let present = try await targetGroups(plan, lab)
        let unmapped = present.subtracting(names.keys)
        if present.count != plan.allGroups.count || !unmapped.isEmpty {
            problems.append("TARGET GROUPS: \(present.count) groups on \(plan.target.name) for \(plan.allGroups.count) source groups; "
                            + "not in the conversation map: \(unmapped.sorted())")
        }
        return problems
    }

    /// The target's groups: WuKong's business server's (read from the sandbox: neither WuKongIM nor the
    /// business server lists groups); on NIM, which lists one account's teams, those of the senders' puppets
    /// (every team the bridge sets up has one of them).
    static func targetGroups(_ plan: ChaosPlan, _ lab: BridgeLab) async throws -> Set<String> {
        if let wukong = lab.sandboxes[plan.target.name]?.vendor as? WuKongSandbox {
            return Set(wukong.directory.withLock { Array($0.groups.keys) })
        }
        guard let directory = try await lab.userBackend(plan.target.name, registry: ContentRegistry()) as? any GroupDirectory else { return [] }
        var all = Set<String>()
        for sender in ChaosCampaign.senders {
            all.formUnion(try await directory.groups(of: UserID("\(plan.source.name)_\(sender.rawValue)")).map(\.rawValue))
        }
        return all
    }
}
