import Foundation
import IMCore
import IMConfig
import IMStore
import Synchronization
import IMOutbox

/// Puppets that carry their source users' names and avatars (docs/architecture.md, "Profiles").
///
/// - **First sight**: the first message of a source user on a puppet route queues a `profile` entry for
///   its puppet on the target, in the transaction that queues the message. The store remembers that it
///   was queued (checkpoint `profile:<target>:<puppet>`), so it is queued once per puppet, not once per
///   process.
/// - **Changes**: none of the four vendors' server APIs reports a user's profile change to the app
///   server (docs/adapters/*.md, "Profiles"), so the senders active since the last round are read again
///   every `profiles.refresh` (default 1h; at most `maxPerRound` of them a round, the rest in the
///   next one): each gets a `profile` entry, which writes only when the source's profile differs from the
///   target's.
/// - **The one delivery path**: a `profile` entry runs in a lane of its own per puppet
///   (`lane(target:puppet:)`), with the outbox's retries and dead letters, so a failing profile write never
///   holds a message back. It reads the source's profile when it runs and writes name and avatar through
///   `Delivery.syncProfile`; the profile written is kept in the checkpoint, and later provisioning of the
///   puppet (a restart) writes that instead of the bare id.
public enum ProfileSync {
    /// At most this many senders are read again per round; the others wait for the next round.
    public static let maxPerRound = 500

    /// One puppet whose profile follows a source user's.
    struct Subject: Hashable, Sendable {
        var source: BackendID
        var user: UserID
        var target: BackendID
        var puppet: UserID
        var route: Route

        var checkpoint: String { ProfileCheckpoint.name(target: target, puppet: puppet) }
    }

    /// What the engine remembers between rounds: puppets whose first entry is known to be queued, and
    /// the senders active since the last round (in the order first seen).
    final class Tracker: Sendable {
        private struct State {
            var queued: Set<String> = []
            var active: [Subject] = []
            var activeKeys: Set<String> = []
        }

        private let state = Mutex(State())

        func isQueued(_ subject: Subject) -> Bool { state.withLock { $0.queued.contains(subject.checkpoint) } }

        func markQueued(_ subjects: [Subject]) {
            state.withLock { state in for subject in subjects { state.queued.insert(subject.checkpoint) } }
        }

        func noteActive(_ subjects: [Subject]) {
            state.withLock { state in
                for subject in subjects where state.activeKeys.insert(subject.checkpoint).inserted { state.active.append(subject) }
            }
        }

        /// Up to `limit` active senders, oldest first, no longer counted as active.
        func takeActive(limit: Int) -> [Subject] {
            state.withLock { state in
                let taken = Array(state.active.prefix(limit))
                state.active.removeFirst(taken.count)
                for subject in taken { state.activeKeys.remove(subject.checkpoint) }
                return taken
            }
        }

        var activeCount: Int { state.withLock { $0.active.count } }
    }
}

/// `profiles:` in bridge.yaml.
public struct ProfileSettings: Sendable, Equatable {
    public static let defaultRefreshMinutes = 60.0
    /// How often active senders' profiles are read again (`refresh`; nil when 0s: only at first sight).
    public var refreshMs: Int64? = Int64(defaultRefreshMinutes * 60_000)

    public init(refreshMs: Int64? = Int64(defaultRefreshMinutes * 60_000)) {
        self.refreshMs = refreshMs
    }

    /// Decodes `profiles:`; `refresh` is a duration from 1s to 7d, or 0s: only at first sight.
    package static func decode(_ section: ConfigSection) -> ProfileSettings {
        ProfileSettings(refreshMs: decodeRefresh(section, default: ProfileSettings().refreshMs))
    }

    /// `refresh` of `profiles:` or `groups:` (the only key of either) in milliseconds; nil for 0s. The
    /// deprecated `refresh_minutes` took minutes, fractions allowed.
    static func decodeRefresh(_ section: ConfigSection, default fallback: Int64?) -> Int64? {
        guard let refresh = section.duration("refresh", range: DurationRange(minimum: .seconds(1), maximum: .days(7), zero: "only at first sight"),
                                             legacy: .init("refresh_minutes", .minutes, fractions: true)) else { return fallback }
        return refresh.value == .zero ? nil : refresh.value.milliseconds
    }
}

extension RelayEngine {
    /// The profile subject of a new message on `leg`: its sender's puppet on a puppet route between two
    /// backends that read and write profiles; nil otherwise.
    nonisolated func profileSubject(_ event: IMEvent, leg: RouteLeg) -> ProfileSync.Subject? {
        guard case .message(let message) = event.kind, case .puppet = leg.users,
              backends[event.backend] is any UserDirectory, backends[leg.target] is any UserDirectory else { return nil }
        return ProfileSync.Subject(source: event.backend, user: message.sender, target: leg.target,
                                   puppet: leg.targetUser(message.sender), route: leg.route)
    }

    /// Adds the `profile` entries a callback's transaction queues: one per puppet never queued before (the
    /// store's checkpoint says so), each marked queued in the same transaction.
    nonisolated func firstSightProfiles(_ subjects: [ProfileSync.Subject], event: IMEvent, _ tx: StoreTransaction, at now: Int64,
                                        to draft: inout OutboxDraft) throws {
        for subject in subjects where !people.profiles.isQueued(subject) {
            guard try tx.checkpoint(subject.checkpoint) == nil else { continue }
            try tx.setCheckpoint(subject.checkpoint, "", at: now)
            try addProfileEntry(subject, eventID: event.eventID, at: now, to: &draft)
        }
    }

    nonisolated func addProfileEntry(_ subject: ProfileSync.Subject, eventID: EventID, at now: Int64, to draft: inout OutboxDraft) throws {
        let action = RelayAction.profile(source: subject.user, puppet: subject.puppet)
        let payload = OutboxPayload(action: action, route: subject.route, eventTimeMs: now)
        try draft.add(payload, lane: ProfileCheckpoint.lane(target: subject.target, puppet: subject.puppet), source: subject.source, eventID: eventID)
    }

    /// Queues a `profile` entry for each sender active since the last round (at most
    /// `ProfileSync.maxPerRound`); returns how many.
    @discardableResult
    public nonisolated func refreshProfiles() async throws -> Int {
        let subjects = people.profiles.takeActive(limit: ProfileSync.maxPerRound)
        guard !subjects.isEmpty else { return 0 }
        let now = clock.nowMs()
        var draft = OutboxDraft()
        do {
            for subject in subjects { try addProfileEntry(subject, eventID: EventID("profile-refresh:\(now)"), at: now, to: &draft) }
            try await queue(draft, at: now)
        } catch {
            people.profiles.noteActive(subjects)
            throw error
        }
        return draft.count
    }

    /// Every `profileSettings.refreshMs`, `refreshProfiles`; returns when the task is cancelled. Each
    /// instance re-reads the senders it took callbacks for (a write happens only on a difference, so two
    /// instances reading the same sender write once).
    func profileLoop() async {
        guard let interval = people.profileSettings.refreshMs else { return }
        while !Task.isCancelled {
            try? await Task.sleep(nanoseconds: UInt64(interval) * 1_000_000)
            if Task.isCancelled { return }
            do {
                try await refreshProfiles()
            } catch {
                logStoreError("profile refresh", error)
            }
        }
    }

    /// Runs a `profile` entry: reads the source user's profile and brings the puppet's name and avatar up
    /// to it. A source that cannot read profiles, or does not know the user, leaves the puppet as it is.
    /// True when the target was called.
    nonisolated func syncProfile(of user: UserID, from source: BackendID, as puppet: UserID, delivery: Delivery,
                                 mayWrite: @Sendable () throws -> Void) async throws -> Bool {
        guard let directory = backends[source] as? any UserDirectory else { return false }
        let found: UserProfile?
        do {
            found = try await directory.users([user]).first
        } catch let error as IMError where error.code == .unsupported {
            return false
        }
        guard let found, found.name != nil || found.avatar != nil else { return false }
        let wanted = UserProfile(id: puppet, name: found.name, avatar: found.avatar)
        _ = try await delivery.syncProfile(wanted, beforeWrite: mayWrite)
        let name = ProfileCheckpoint.name(target: delivery.target.id, puppet: puppet)
        let now = clock.nowMs()
        try await store.groupedTransaction { try $0.setCheckpoint(name, ProfileCheckpoint.encode(wanted), at: now) }
        return true
    }
}
