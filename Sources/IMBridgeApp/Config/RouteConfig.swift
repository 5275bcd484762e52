import Foundation
import IMConfig
import IMCore
import IMRelay
import IMOutbox

extension BridgeConfig {
    /// The keys of a route (which of them apply depends on `users:`, so this list is kept beside the
    /// decoder rather than read from it).
    public static let routeKeys = ["from", "to", "direction", "users", "puppet_prefix", "reverse_prefix", "relay_account",
                                   "name_format", "media", "fallbacks", "group_ids", "on_dissolve"]

    /// The conversation kinds a route may name (`BACKEND:KIND:ID`).
    public static let routeKinds: [ConversationRef.Kind] = [.direct, .group, .chatroom, .system]

    static func parseRoute(_ node: ConfigNode, backends: Set<BackendID>, problems: inout ConfigProblems) -> Route? {
        guard problems.attempt({ try node.expectMapping() }) != nil, node.isMapping else {
            if !node.isPresent { problems.add(node.error("expected a mapping with from: and to:")) }
            return nil
        }
        let before = problems.count
        problems.attempt { try node.allowOnly(Set(routeKeys)) }
        func endpoint(_ key: String) -> RouteEndpoint? {
            problems.attempt {
                let text = try node[key].string()
                let endpoint: RouteEndpoint
                // A part of a value from the environment is not shown either: the message names the variable.
                let shown = node[key].substitution.map { ConfigNode.describeSubstitution($0) + ": " }
                do { endpoint = try RouteEndpoint(parsing: text) } catch let error as IMError {
                    throw node[key].error(shown.map { $0 + "not BACKEND:KIND:ID (or BACKEND:KIND:*)" } ?? error.message)
                }
                guard backends.contains(endpoint.backend) else {
                    throw node[key].error((shown ?? "") + "backend \(shown == nil ? "'\(endpoint.backend)' " : "")is not configured under backends")
                }
                guard Self.routeKinds.contains(endpoint.kind) else {
                    throw node[key].error((shown ?? "") + "unknown conversation kind \(shown == nil ? "'\(endpoint.kind)' " : "")(expected one of: \(Self.routeKinds.map(\.description).joined(separator: ", ")))")
                }
                return endpoint
            }
        }
        let from = endpoint("from"), to = endpoint("to")
        if let from, let to {
            if from.backend == to.backend { problems.add(node["to"].error("a route joins two different backends")) }
            if (from.id == nil) != (to.id == nil) { problems.add(node["to"].error("use '*' on both sides or on neither")) }
            else if from.kind != to.kind && from.id == nil { problems.add(node["to"].error("a '*' route maps one kind to the same kind")) }
        }
        let direction = problems.attempt { () throws -> Route.Direction in
            let text = try node["direction"].optionalString() ?? "both"
            guard let direction = Route.Direction(rawValue: text) else { throw node["direction"].error("expected both or forward") }
            return direction
        }
        let modes = problems.attempt { () throws -> (UserMode, UserMode) in
            let mode = try node["users"].optionalString() ?? "puppet"
            switch mode {
            case "puppet":
                return (.puppet(prefix: try node["puppet_prefix"].optionalString() ?? "\(from?.backend.rawValue ?? "")_"),
                        .puppet(prefix: try node["reverse_prefix"].optionalString() ?? "\(to?.backend.rawValue ?? "")_"))
            case "relay":
                let account = UserID(try node["relay_account"].string())
                let format = try node["name_format"].optionalString() ?? "[{name}] "
                return (.relay(account: account, nameFormat: format), .relay(account: account, nameFormat: format))
            default:
                throw node["users"].error("expected puppet or relay, got \(node["users"].quoted(mode))")
            }
        }
        let media = problems.attempt { () throws -> Route.Media in
            let text = try node["media"].optionalString() ?? "link"
            guard let media = Route.Media(rawValue: text) else { throw node["media"].error("expected link or rehost") }
            return media
        }
        let groupIDs = problems.attempt { () throws -> Route.GroupIDs in
            let text = try node["group_ids"].optionalString() ?? "map"
            guard let mode = Route.GroupIDs(rawValue: text) else { throw node["group_ids"].error("expected map or same") }
            return mode
        }
        let onDissolve = problems.attempt { () throws -> Route.OnDissolve in
            let text = try node["on_dissolve"].optionalString() ?? "dissolve"
            guard let mode = Route.OnDissolve(rawValue: text) else { throw node["on_dissolve"].error("expected dissolve or keep") }
            return mode
        }
        var fallbacks: [Feature: FallbackPolicy] = [:]
        let fallbackNode = node["fallbacks"]
        if fallbackNode.isPresent, problems.attempt({ try fallbackNode.expectMapping() }) != nil {
            for key in (try? fallbackNode.keys()) ?? [] {
                problems.attempt {
                    guard let feature = Feature(rawValue: key) else {
                        throw fallbackNode[key].error("unknown feature (expected one of: \(Feature.allCases.map(\.rawValue).joined(separator: ", ")))")
                    }
                    let text = try fallbackNode[key].string()
                    guard let policy = FallbackPolicy(rawValue: text) else { throw fallbackNode[key].error("expected notice or drop") }
                    fallbacks[feature] = policy
                }
            }
        }
        guard problems.count == before, let from, let to, let direction, let modes, let media, let groupIDs, let onDissolve else { return nil }
        return Route(from: from, to: to, direction: direction, usersOnTarget: modes.0, usersOnSource: modes.1, media: media,
                     fallbacks: fallbacks, groupIDs: groupIDs == .same ? .same : nil,
                     onDissolve: onDissolve == .keep ? .keep : nil)
    }
}

