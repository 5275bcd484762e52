import IMCore

/// WuKongIM's capabilities, with figures from docs/adapters/wukong.md (each with its public source). The adapter's
/// descriptor carries this preset; the testing kit (`IMTesting`) links this target alone, without the
/// adapter, to simulate the vendor (docs/architecture.md, "Adding a vendor").
///
/// Where the vendor's documents leave a point open, the rule chosen is written next to the figure.
extension Capabilities {
    /// WuKongIM + its companion business server. Edit, revoke, reactions, read receipts and the remote
    /// `extra` dictionary (our expansion) live in the business server. Neither documents a recall/edit
    /// window or expansion limits: no window, and expansion limits are ours (keys ≤ 64 characters of any
    /// kind, values ≤ 4096, ≤ 100 keys per change, ≤ 300 per message) so a WuKong ⇄ RongCloud bridge
    /// rarely meets a refusal on one side only.
    public static let wukong: Capabilities = {
        var capabilities = wukongBase
        capabilities.expansionOnAnyMessage = true
        capabilities.expansionVersionIsReadTime = true
        capabilities.keepsMuteState = false
        capabilities.groupCreationAssignsID = true
        // `/conversations/clearUnread`; pinning and reminders live in the business server, whose APIs
        // for them are not documented (docs/adapters/wukong.md): not offered.
        capabilities.conversationState = [.clearUnread]
        // The adapter writes no deletion, and the webhook carries none.
        capabilities.deletionScopes = []
        capabilities.reportsDeletions = false
        capabilities.reportsDissolution = false
        // Person, group and live (chatroom) channels and numbered channel types `wk<N>`; no system
        // conversations (docs/adapters/wukong.md, "Facts on the preset"). Rate limits and server errors are
        // plain HTTP answers without a wait (`FaultAnswers.http`).
        capabilities.sendConversationKinds = ConversationKinds([.direct, .group, .chatroom], otherKindPrefix: "wk")
        // Neither WuKongIM nor the business server lists users; a user's groups are the group channels of the
        // user's conversations (every created group gets the business server's 1001 notice); the adapter
        // removes members through the business server (docs/adapters/wukong.md, "Users and groups").
        capabilities.directory = DirectorySupport(listsAllUsers: false)
        // An API send skips membership checks but not a disbanded channel: the business server's disband
        // deletes the channel (`/channel/delete` marks it disbanded), and `/message/send` answers 400
        // 频道已解散！ (docs/adapters/wukong.md, "Groups in live relay").
        capabilities.groupSendRefusals = GroupSendRefusals(dissolvedGroup: .init(.invalidArgument, vendorCode: "400", "channel is disbanded"))
        capabilities.history = HistoryPositioning(cursorForm: .seq, sendAnswersSeq: false,
                                                  refusalTemplate: "WuKong history cursors are message_seq numbers, not '{cursor}'")
        return capabilities
    }()

    private static let wukongBase = Capabilities(
        vendor: "wukong",
        features: [.customContent: .full, .mentions: .full, .replies: .full, .commands: .full, .recall: .full,
                   .edit: .full, .expansion: .full, .reactions: .full, .readReceipts: .full, .media: .partial,
                   .conversationList: .partial, .userProvisioning: .full, .history: .full, .sendAsAnyUser: .full],
        textMaxLength: 10_000,
        recallWindowMs: nil,
        expansionLimits: ExpansionLimits(maxKeyLength: 64, extraKeyCharacters: nil, maxValueLength: 4096,
                                         maxKeysPerClientChange: 100, maxKeysPerServerCall: 100, maxKeysPerMessage: 300),
        rateLimits: [],
        notes: [.media: "WuKongIM stores no files: attachments travel as URLs (links); upload is the app's file service",
                .expansion: "mapped onto the business server's remote `extra` dictionary, versioned by extra_version",
                .conversationList: "WuKongIM keeps no mute state: setMuted is refused"])
}
