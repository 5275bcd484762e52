import Foundation
import IMCore
import IMStore
import IMOutbox

/// `imbridge portals list|link|unlink`: the conversation map (docs/architecture.md, "Portals") as an
/// operator reads and changes it. A link made here is what the bridge would have recorded had it set
/// the group up itself: the next event of the source group goes into the linked target group.
public enum PortalsAdmin {
    /// One `BACKEND:group:ID` argument.
    public static func endpoint(_ text: String) throws -> (backend: BackendID, group: GroupID) {
        let endpoint = try RouteEndpoint(parsing: text)
        guard endpoint.kind == .group, let id = endpoint.id else {
            throw IMError(.invalidArgument, "'\(text)' is not BACKEND:group:ID (a portal joins two groups)")
        }
        return (endpoint.backend, GroupID(id))
    }

    /// Every portal, a line each (or JSON).
    public static func listing(_ store: BridgeStore, json: Bool) throws -> String {
        let portals = try store.read { try PortalMap.all($0) }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            return String(decoding: try encoder.encode(portals), as: UTF8.self) + "\n"
        }
        guard !portals.isEmpty else { return "no portals: no group has been set up on a target that assigns group ids, and none was linked\n" }
        var lines = ["\(portals.count) portal\(portals.count == 1 ? "" : "s"):"]
        for portal in portals {
            lines.append("  \(portal.source):group:\(portal.group)  ⇄  \(portal.target):group:\(portal.targetGroup)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Links `source`'s group to `target`'s existing group. Refused when either is linked to another
    /// group already (unlink it first).
    public static func link(_ store: BridgeStore, source: String, target: String, at now: Int64) throws -> String {
        let (from, group) = try endpoint(source), (to, id) = try endpoint(target)
        guard from != to else { throw IMError(.invalidArgument, "a portal joins groups of two different backends") }
        try store.transaction { tx in
            let forward = try PortalMap.group(PortalMap.key(source: from, conversation: .group(group), target: to), tx)
            let back = try PortalMap.group(PortalMap.key(source: to, conversation: .group(id), target: from), tx)
            if let forward, forward != id {
                throw IMError(.conflict, "\(source) is linked to \(to):group:\(forward) already (imbridge portals unlink first)")
            }
            if let back, back != group {
                throw IMError(.conflict, "\(target) is linked to \(from):group:\(back) already (imbridge portals unlink first)")
            }
            try PortalMap.link(group, on: from, to: id, on: to, at: now, tx)
        }
        return "linked \(source) ⇄ \(target)\n"
    }

    /// Forgets the portal of `source`'s group on `target` (both directions). The target group is left as
    /// it is; the source group's next event sets a new one up (a running bridge that knew the old one
    /// keeps using it until it restarts).
    public static func unlink(_ store: BridgeStore, source: String, target: BackendID, at now: Int64) throws -> String {
        let (from, group) = try endpoint(source)
        let id = try store.transaction { try PortalMap.unlink(group, on: from, target: target, at: now, $0) }
        guard let id else { throw IMError(.notFound, "\(source) has no portal on \(target)") }
        return "unlinked \(source) from \(target):group:\(id)\n"
    }
}
