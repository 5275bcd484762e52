import IMCore

/// NetEase Yunxin (NIM)'s capabilities, with figures from docs/adapters/nim.md (each with its public source). The adapter's
/// descriptor carries this preset; the testing kit (`IMTesting`) links this target alone, without the
/// adapter, to simulate the vendor (docs/architecture.md, "Adding a vendor").
///
/// Where the vendor's documents leave a point open, the rule chosen is written next to the figure.
extension Capabilities {
    private static let minute: Int64 = 60_000
    private static let second: Int64 = 1_000

    /// NetEase Yunxin server API v1. Recall window 2 minutes by default (the console can raise it; set
    /// `recallWindowMs`); no edits and no key/value expansions in v1: expansion changes are carried as a
    /// type-100 custom message the NIM adapter recognises on the way back in (`fallback`).
    public static let nim: Capabilities = {
        var capabilities = nimBase
        capabilities.recallsInHistory = .removed
        capabilities.groupCreationAssignsID = true
        capabilities.deletionScopes = []
        capabilities.reportsDeletions = false
        // The message copy carries team operations, but the adapter does not read them (their attach
        // fields are not confirmed): it reports no membership change (docs/adapters/nim.md).
        capabilities.reportsMembershipChanges = false
        // A dismissal's team notification (attach `id` 4) is read: the team is reported dissolved.
        capabilities.reportsDissolution = true
        capabilities.sendConversationKinds = ConversationKinds([.direct, .group])
        // getUinfos reads known accids only: no user listing. Members are removed with /team/kick.action.
        capabilities.directory = DirectorySupport(listsAllUsers: false)
        // 416 blocks the app for 10 s; a 5xx is a gateway's answer without NIM's envelope (docs/adapters/nim.md, "Facts on the preset").
        capabilities.faultAnswers = FaultAnswers(
            rateLimited: .init(.rateLimited, vendorCode: "416", "frequency control", retryAfterMs: 10_000),
            serverError: FaultAnswers.http.serverError)
        // A carrier may name any message, however it was sent: copies elsewhere must take later changes.
        capabilities.expansionOnAnyMessage = true
        // A carrier's change is versioned by the carrier's NIM time (`NIMExpansionCarrier.event`).
        capabilities.expansionVersionIsChangeTime = true
        // A team message needs a team that exists and a sender in it (codes from NIM's status table;
        // which one sendMsg answers is the strict reading, docs/adapters/nim.md, "Conversations").
        capabilities.groupSendRefusals = GroupSendRefusals(
            unknownGroup: .init(.notFound, vendorCode: "803", "team does not exist"),
            nonMember: .init(.permissionDenied, vendorCode: "804", "not a member of the team"),
            // A team removed with /team/remove.action no longer exists.
            dissolvedGroup: .init(.notFound, vendorCode: "803", "team does not exist"))
        capabilities.history = HistoryPositioning(cursorForm: .timeAndID, numericMessageIDs: true,
                                                  refusalTemplate: "'{cursor}' is not a NIM history cursor (<ms>:<msgid>)")
        return capabilities
    }()

    private static let nimBase = Capabilities(
        vendor: "nim",
        features: [.customContent: .full, .mentions: .partial, .replies: .partial, .commands: .partial, .recall: .full,
                   .edit: .rejected, .expansion: .fallback, .reactions: .rejected, .readReceipts: .rejected, .media: .full,
                   .conversationList: .rejected, .userProvisioning: .full, .history: .full, .sendAsAnyUser: .full],
        textMaxLength: 5000,
        recallWindowMs: 2 * minute,
        expansionLimits: .rongCloud,
        rateLimits: [RateLimit(api: "msg/sendMsg", requests: 100, perMs: second, blockMs: 10 * second),
                     RateLimit(api: "msg/recall", requests: 100, perMs: second, blockMs: 10 * second),
                     RateLimit(api: "msg/sendBatchMsg", requests: 120, perMs: minute)],
        notes: [.expansion: "carried as a type-100 custom message recognised by the NIM adapter",
                .mentions: "via the forcepush option only",
                .replies: "quoted id and digest carried in `ext`",
                .commands: "custom system notifications, not stored"])
}
