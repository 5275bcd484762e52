import IMCore

/// Finds where an event goes, and recognises the bridge's own identities (echo suppression, layer 3).
public struct RouteTable: Sendable {
    public let routes: [Route]

    public init(_ routes: [Route]) {
        self.routes = routes
    }

    /// Every leg an event in `conversation` on `backend` travels, in route order.
    public func legs(from backend: BackendID, conversation: ConversationRef) -> [RouteLeg] {
        var legs: [RouteLeg] = []
        for route in routes {
            if let target = Self.match(route.from, route.to, backend, conversation, users: route.usersOnTarget) {
                legs.append(RouteLeg(route: route, target: route.to.backend, targetConversation: target, users: route.usersOnTarget))
            }
            if route.direction == .both,
               let target = Self.match(route.to, route.from, backend, conversation, users: route.usersOnSource) {
                legs.append(RouteLeg(route: route, target: route.from.backend, targetConversation: target, users: route.usersOnSource))
            }
        }
        return legs
    }

    static func match(_ source: RouteEndpoint, _ target: RouteEndpoint, _ backend: BackendID, _ conversation: ConversationRef,
                      users: UserMode) -> ConversationRef? {
        guard source.backend == backend, source.kind == conversation.kind else { return nil }
        if let id = source.id {
            let expected = try? ConversationRef(parsing: "\(source.kind):\(id)")
            guard expected == conversation else { return nil }
            return try? ConversationRef(parsing: "\(target.kind):\(target.id ?? id)")
        }
        let leg = RouteLeg(route: Route(from: source, to: target), target: target.backend, targetConversation: conversation, users: users)
        if conversation.kind == .direct { return leg.mapConversation(conversation) }
        return try? ConversationRef(parsing: "\(target.kind):\(conversation.id)")
    }

    /// Whether `user` on `backend` is one of the bridge's puppets or relay accounts.
    public func isBridgeIdentity(_ user: UserID, on backend: BackendID) -> Bool {
        for route in routes {
            if route.to.backend == backend, Self.owns(route.usersOnTarget, user) { return true }
            if route.direction == .both, route.from.backend == backend, Self.owns(route.usersOnSource, user) { return true }
        }
        return false
    }

    static func owns(_ mode: UserMode, _ user: UserID) -> Bool {
        switch mode {
        case .puppet(let prefix): !prefix.isEmpty && user.rawValue.hasPrefix(prefix)
        case .relay(let account, _): user == account
        }
    }
}
