import IMCore

/// Profiles, group membership and deletion (docs/testing-kit.md, "People, groups, deletion"): each check
/// runs where the backend offers the opt-in protocol, and events are awaited only where the subject says
/// the vendor reports them (`reportsDeletions`, `reportsMembershipChanges`).
extension ConformanceChecks {
    static let people: [ConformanceCheck] = [
        ConformanceCheck(name: "profile.save-reads-back") { ctx in
            guard let directory = ctx.backend as? any UserDirectory else { throw ctx.skip("no UserDirectory") }
            let name = "Conformance \(ctx.alice.rawValue)"
            try await directory.saveUser(UserProfile(id: ctx.alice, name: name))
            let read = try await directory.users([ctx.alice]).first
            try ctx.expect(read?.name == name, "after saveUser the name reads \(String(describing: read?.name)), expected \(name)")
        },
        ConformanceCheck(name: "group.members.remove") { ctx in
            guard let directory = ctx.backend as? any GroupMemberRemoving else { throw ctx.skip("no GroupMemberRemoving") }
            guard ctx.backend.capabilities.directory.removesMembers else { throw ctx.skip("the vendor's adapter removes no members") }
            // Vendors that take only known accounts into a group (NIM) get them first.
            if let users = ctx.backend as? any UserProvisioning {
                for user in [ctx.alice, ctx.bob, ctx.carol] { try await users.ensureUser(UserProfile(id: user)) }
            }
            let asked = GroupID("conf\(UInt32.random(in: 1...UInt32.max))")
            let id = try await directory.createGroup(GroupProfile(id: asked, name: "Conformance", owner: ctx.alice,
                                                                  members: [ctx.alice, ctx.bob, ctx.carol]))
            let stream = ctx.backend.events()
            try await directory.removeMembers([ctx.carol], from: id)
            let members = try await directory.group(id)?.members ?? []
            try ctx.expect(!members.contains(ctx.carol), "\(ctx.carol) is still a member of \(id) after removeMembers: \(members)")
            try ctx.expect(members.contains(ctx.alice) && members.contains(ctx.bob), "removeMembers took others too: \(members)")
            let groups = try? await directory.groups(of: ctx.carol)
            try ctx.expect(groups.map { !$0.contains(id) } ?? true, "groups(of: \(ctx.carol)) still lists \(id)")
            try await directory.removeMembers([ctx.carol], from: id)   // not a member any more: skipped, no error
            guard ctx.subject.reportsMembershipChanges else { return }
            let event = try await ctx.waitFor("membersChanged", on: stream) {
                if case .membersChanged(let group, _, let left, _, _) = $0.kind { group == id && left.contains(ctx.carol) } else { false }
            }
            try ctx.expect(event.conversation == .group(id), "membersChanged names \(event.conversation)")
        },
        ConformanceCheck(name: "group.members.join-event") { ctx in
            guard ctx.subject.reportsMembershipChanges else { throw ctx.skip("the vendor reports no membership changes") }
            guard let directory = ctx.backend as? any GroupDirectory else { throw ctx.skip("no GroupDirectory") }
            let id = try await directory.createGroup(GroupProfile(id: GroupID("conf\(UInt32.random(in: 1...UInt32.max))"), name: "Joins",
                                                                  owner: ctx.alice, members: [ctx.alice, ctx.bob]))
            let stream = ctx.backend.events()
            try await directory.updateGroup(GroupProfile(id: id, members: [ctx.carol]))
            _ = try await ctx.waitFor("membersChanged", on: stream) {
                if case .membersChanged(let group, let joined, _, _, _) = $0.kind { group == id && joined == [ctx.carol] } else { false }
            }
        },
        ConformanceCheck(name: "delete.for-everyone") { ctx in
            guard let backend = ctx.backend as? any Deleting else { throw ctx.skip("no Deleting") }
            let sent = try await ctx.send(.text("delete me"))
            guard backend.deletionScopes.contains(.everyone) else {
                try await ctx.expectError(.unsupported, "delete for everyone") { try await backend.delete(sent.id, in: ctx.direct, by: ctx.alice, forUser: nil) }
                return
            }
            let stream = ctx.backend.events()
            try await backend.delete(sent.id, in: ctx.direct, by: ctx.alice, forUser: nil)
            let page = try await ctx.backend.history(HistoryQuery(conversation: ctx.direct, anchor: .latest, limit: 50))
            try ctx.expect(!page.messages.contains { $0.id == sent.id }, "history still shows \(sent.id) after its deletion")
            try await backend.delete(sent.id, in: ctx.direct, by: ctx.alice, forUser: nil)   // again: no error
            guard ctx.subject.reportsDeletions else { return }
            let event = try await ctx.waitFor("deleted", on: stream) {
                if case .deleted(let id, _, _, _, _) = $0.kind { id == sent.id } else { false }
            }
            if case .deleted(_, let conversation, let by, let forUser, _) = event.kind {
                try ctx.expect(conversation == ctx.direct && by == ctx.alice && forUser == nil, "deleted event says \(conversation) by \(by) for \(String(describing: forUser))")
            }
        },
        ConformanceCheck(name: "delete.for-one-user") { ctx in
            guard let backend = ctx.backend as? any Deleting else { throw ctx.skip("no Deleting") }
            let sent = try await ctx.send(.text("hide me from bob"))
            guard backend.deletionScopes.contains(.oneUser) else {
                try await ctx.expectError(.unsupported, "delete for one user") { try await backend.delete(sent.id, in: ctx.direct, by: ctx.bob, forUser: ctx.bob) }
                return
            }
            try await backend.delete(sent.id, in: ctx.direct, by: ctx.bob, forUser: ctx.bob)
            func shown(to viewer: UserID) async throws -> Bool {
                var query = HistoryQuery(conversation: ctx.direct, anchor: .latest, limit: 50)
                query.viewer = viewer
                return try await ctx.backend.history(query).messages.contains { $0.id == sent.id }
            }
            try ctx.expect(try await !shown(to: ctx.bob), "\(ctx.bob) still sees \(sent.id) after deleting it for himself")
            try ctx.expect(try await shown(to: ctx.alice), "\(ctx.alice) no longer sees \(sent.id), deleted for \(ctx.bob) only")
        },
    ]
}
