import IMCore

/// Users and created groups on a target, for the account entries (`RelayAction.user`, `.group` with a
/// mapped target) that live relay and migration queue alike.
extension Delivery {
    /// Brings the user `desired.id` onto the target (docs/migration.md, "Users"): created where the target
    /// says it is missing; updated where it is there and `known` (the source described it) and its name,
    /// avatar or a shared extra field differ; left alone otherwise. A target that cannot say whether the
    /// user exists gets the profile written unseen (`userProvisioned`); one without a directory but with
    /// provisioning gets `ensureUser`; else nothing is written (`userSkipped`). `dryRun` reads and decides.
    public func bringUser(_ desired: UserProfile, known: Bool, dryRun: Bool = false, calls: some TargetCalls = DirectCalls(),
                          beforeWrite: @Sendable () throws -> Void = {}) async throws -> AccountOutcome {
        // One write per user at a time, as provisioning's (`userWrites`): a bare-id provisioning never
        // lands between this read and this write.
        try await userWrites.run(desired.id) {
            let outcome: AccountOutcome
            if let directory = target as? any UserDirectory {
                var existing: UserProfile?? = nil
                do {
                    existing = .some(try await calls.run { try await directory.users([desired.id]).first })
                } catch let error as IMError where error.code == .unsupported {}
                switch existing {
                case .some(.some(let existing)):
                    outcome = known && desired.differs(from: existing) ? .userUpdated : .userUnchanged
                case .some(.none): outcome = .userCreated
                case .none: outcome = .userProvisioned
                }
                if !dryRun, outcome != .userUnchanged {
                    try beforeWrite()
                    try await calls.run { try await directory.saveUser(desired) }
                }
            } else if let provisioning = target as? any UserProvisioning, target.capabilities.support(.userProvisioning).isNative {
                outcome = .userProvisioned
                if !dryRun {
                    try beforeWrite()
                    try await calls.run { try await provisioning.ensureUser(desired) }
                }
            } else {
                return .userSkipped
            }
            if !dryRun { markProvisioned(desired.id) }
            return outcome
        }
    }

    /// A group an earlier attempt created without its id being recorded: among the owner's groups on the
    /// target, one with the same name that no source group is mapped to (`taken`). Nil when the target
    /// cannot list a user's groups.
    public func earlierGroup(_ profile: GroupProfile, taken: Set<String>, calls: some TargetCalls = DirectCalls()) async throws -> GroupID? {
        guard let owner = profile.owner, let directory = target as? any GroupDirectory else { return nil }
        let candidates: [GroupID]
        do {
            candidates = try await calls.run { try await directory.groups(of: owner) }
        } catch let error as IMError where error.code == .unsupported {
            return nil
        }
        for candidate in candidates where !taken.contains(candidate.rawValue) {
            if let found = try await calls.run({ try await directory.group(candidate) }), found.name == profile.name { return candidate }
        }
        return nil
    }
}
