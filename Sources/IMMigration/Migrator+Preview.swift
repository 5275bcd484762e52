import Foundation
import IMCore
import IMOutbox

/// A dry run's account phase: what the run would do to users and groups, read from the target through
/// `Delivery` (`bringUser`, `bringGroup` with `dryRun`), which decide as the account entries do and
/// write nothing. Nothing is queued.
extension Migrator {
    func previewUser(_ user: UserID, _ plan: MigrationPlan) async {
        let (desired, known) = await desiredUser(user, plan)
        do {
            switch try await delivery.bringUser(desired, known: known, dryRun: true, calls: RetriedCalls(migrator: self)) {
            case .userCreated: account.usersCreated += 1
            case .userUpdated: account.usersUpdated += 1
            case .userProvisioned: account.usersProvisioned += 1
            default: account.usersSkipped += 1
            }
        } catch {
            account.failures.append("user \(user): \(error)")
        }
    }

    /// The id the group would have on the target (nil: one the target would give).
    func previewGroup(_ group: GroupID, _ profile: GroupProfile, id: GroupID?, _ plan: MigrationPlan) async -> GroupID? {
        let desired = Delivery.targetGroup(profile, user: plan.targetUser)
        let id = id ?? (target.capabilities.groupCreationAssignsID ? nil : group)
        do {
            switch try await delivery.bringGroup(desired, id: id, calls: RetriedCalls(migrator: self), dryRun: true) {
            case .created: account.groupsCreated += 1
            case .updated(_, let added):
                account.groupsUpdated += 1
                account.membersAdded += added
            case .unchanged: account.groupsSkipped += 1
            }
        } catch {
            account.failures.append("group \(group): \(error)")
        }
        return id
    }

    /// A dry run's reads: paced by the target's global limits and retried in place.
    struct RetriedCalls: TargetCalls {
        let migrator: Migrator
        func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T { try await migrator.onTarget(body) }
    }
}
