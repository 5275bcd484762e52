import IMCore

/// Finds where an event goes, and recognises the bridge's own identities (echo suppression, layer 3).
public struct RouteTable: Sendable {
    public let routes: [Route]

    public init(_ routes: [Route]) {
        self.routes = routes
    }

    /// Every leg an event in `conversation` on `backend` travels, in route order. Overlapping routes
    /// (`wk:group:* → rc:group:*` beside `wk:group:g1 ⇄ rc:group:g1`) deliver once: of several legs to
    /// the same target conversation, the first route's wins.
    public func legs(from backend: BackendID, conversation: ConversationRef) -> [RouteLeg] {
        var legs: [RouteLeg] = []
        func add(_ leg: RouteLeg) {
            if !legs.contains(where: { $0.target == leg.target && $0.targetConversation == leg.targetConversation }) { legs.append(leg) }
        }
        for route in routes {
            if let target = Self.match(route.from, route.to, backend, conversation, users: route.usersOnTarget) {
                add(RouteLeg(route: route, target: route.to.backend, targetConversation: target, users: route.usersOnTarget,
                             targetIsWildcard: route.to.id == nil, sourceIdentities: route.direction == .both ? route.usersOnSource : nil))
            }
            if route.direction == .both,
               let target = Self.match(route.to, route.from, backend, conversation, users: route.usersOnSource) {
                add(RouteLeg(route: route, target: route.from.backend, targetConversation: target, users: route.usersOnSource,
                             targetIsWildcard: route.from.id == nil, sourceIdentities: route.usersOnTarget))
            }
        }
        return legs
    }

    /// Pairs of routes that overlap: some source conversation reaches the same target through both
    /// (`imbridge check` lists them; the relay delivers such a message once, through the first).
    public func overlaps() -> [(first: Int, second: Int)] {
        var found: [(Int, Int)] = []
        func directions(_ route: Route) -> [(from: RouteEndpoint, to: RouteEndpoint)] {
            route.direction == .both ? [(route.from, route.to), (route.to, route.from)] : [(route.from, route.to)]
        }
        // Two directions clash when some source conversation id reaches the same target id through both
        // (a `*` route keeps the id; a route between two named conversations maps one to the other).
        func clash(_ x: (from: RouteEndpoint, to: RouteEndpoint), _ y: (from: RouteEndpoint, to: RouteEndpoint)) -> Bool {
            guard x.from.backend == y.from.backend, x.from.kind == y.from.kind, x.to.backend == y.to.backend,
                  x.to.kind == y.to.kind else { return false }
            switch (x.from.id, y.from.id) {
            case (nil, nil): return true
            case (nil, let id?): return y.to.id == id
            case (let id?, nil): return x.to.id == id
            case (let a?, let b?): return a == b && x.to.id == y.to.id
            }
        }
        for i in routes.indices {
            for j in routes.indices where j > i {
                if directions(routes[i]).contains(where: { x in directions(routes[j]).contains { y in clash(x, y) } }) {
                    found.append((i, j))
                }
            }
        }
        return found
    }

    package static func match(_ source: RouteEndpoint, _ target: RouteEndpoint, _ backend: BackendID, _ conversation: ConversationRef,
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

    package static func owns(_ mode: UserMode, _ user: UserID) -> Bool {
        switch mode {
        case .puppet(let prefix): !prefix.isEmpty && user.rawValue.hasPrefix(prefix)
        case .relay(let account, _): user == account
        }
    }
}
