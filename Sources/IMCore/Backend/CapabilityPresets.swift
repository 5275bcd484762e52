/// The four vendors' capabilities, with figures from docs/adapters/<vendor>.md (each with its public source).
///
/// Where the vendors differ, the rule chosen is written next to the figure.
extension Capabilities {
    private static let minute: Int64 = 60_000
    private static let second: Int64 = 1_000

    /// WuKongIM + its companion business server. Edit, revoke, reactions, read receipts and the remote
    /// `extra` dictionary (our expansion) live in the business server. Neither documents a recall/edit
    /// window or expansion limits: no window, and expansion limits are ours (keys ≤ 64 characters of any
    /// kind, values ≤ 4096, ≤ 100 keys per change, ≤ 300 per message) so a WuKong ⇄ RongCloud bridge
    /// rarely meets a refusal on one side only.
    public static let wukong: Capabilities = {
        var capabilities = wukongBase
        capabilities.expansionOnAnyMessage = true
        capabilities.keepsMuteState = false
        capabilities.groupCreationAssignsID = true
        // `/conversations/clearUnread`; pinning and reminders live in the business server, whose APIs
        // for them are not documented (docs/adapters/wukong.md): not offered.
        capabilities.conversationState = [.clearUnread]
        // The adapter writes no deletion, and the webhook carries none.
        capabilities.deletionScopes = []
        capabilities.reportsDeletions = false
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

    /// RongCloud classic Server API. Recall has no time limit and is for the sender's own messages;
    /// there is no edit or reaction API for private/group messages; expansion limits are the documented
    /// ones for a server caller (`expansionCaller` `.server`, as the adapter calls the Server API: ≤ 100 keys
    /// per change), not a client SDK caller's (≤ 20 keys per call, the RongCloud expansion guide); rate limits
    /// per endpoint as documented (1008 / HTTP 429 on excess).
    public static let rongCloud: Capabilities = {
        var capabilities = Capabilities(
            vendor: "rongcloud",
            features: [.customContent: .full, .mentions: .full, .replies: .full, .commands: .full, .recall: .full,
                       .edit: .rejected, .expansion: .full, .reactions: .rejected, .readReceipts: .rejected, .media: .partial,
                       .conversationList: .rejected, .userProvisioning: .full, .history: .partial, .sendAsAnyUser: .full],
            textMaxLength: 128 * 1024, textLengthUnit: .utf8Bytes,
            recallWindowMs: nil,
            expansionLimits: .rongCloud,
            // Per endpoint, named by its path without `/` and `.json`; the sandbox enforces these with
            // `--option rate_limits=true` (docs/adapters/rongcloud.md, "Rate limits").
            rateLimits: [RateLimit(api: "message/private/publish", requests: 6000, perMs: minute),
                         RateLimit(api: "message/group/publish", requests: 20, perMs: second),
                         RateLimit(api: "message/system/publish", requests: 100, perMs: second),
                         RateLimit(api: "message/recall", requests: 100, perMs: second),
                         RateLimit(api: "message/expansion/set", requests: 100, perMs: second),
                         RateLimit(api: "message/expansion/delete", requests: 100, perMs: second),
                         RateLimit(api: "message/expansion/query", requests: 100, perMs: second),
                         RateLimit(api: "user/getToken", requests: 200, perMs: second),
                         RateLimit(api: "user/info", requests: 100, perMs: second),
                         RateLimit(api: "user/refresh", requests: 100, perMs: second),
                         RateLimit(api: "user/checkOnline", requests: 100, perMs: second)]
                + ["group/create", "group/join", "group/quit", "group/refresh", "group/user/query", "user/group/query"]
                .map { RateLimit(api: $0, requests: 100, perMs: second) },
            notes: [.media: "the Server API has no upload: media travel as URLs",
                    .readReceipts: "RC:ReadNtf is client signalling; the Server API keeps no read state (routed RC:ReadNtf still arrive as read events)",
                    .history: "per-conversation query API; hourly log files otherwise"])
        // Inbound changes carry the routed RC:MsgExMsg's msgTimestamp (docs/adapters/rongcloud.md).
        capabilities.expansionVersionIsChangeTime = true
        // A delete for everyone is the sender's recall with `isDelete=1`, routed back with it.
        capabilities.deletionScopes = [.everyone]
        capabilities.deleteBySenderOnly = true
        capabilities.history = HistoryPositioning(cursorForm: .timeAndID,
                                                  refusalTemplate: "'{cursor}' is not a RongCloud history cursor (msgTime:msgUID)")
        return capabilities
    }()

    /// NetEase Yunxin server API v1. Recall window 2 minutes by default (the console can raise it; set
    /// `recallWindowMs`); no edits and no key/value expansions in v1: expansion changes are carried as a
    /// type-100 custom message the NIM adapter recognises on the way back in (`fallback`).
    public static let nim: Capabilities = {
        var capabilities = nimBase
        capabilities.recallsInHistory = .removed
        capabilities.groupCreationAssignsID = true
        capabilities.deletionScopes = []
        capabilities.reportsDeletions = false
        // Team operations come in the message copy (docs/adapters/nim.md).
        capabilities.reportsMembershipChanges = true
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

    /// JMessage REST v1 + report v2. Retract within 3 minutes by the sender; only an admin can send over
    /// REST, so other senders are carried by attribution (admin + `from_name` + `extras.imbridge_sender`,
    /// `fallback`); no expansions, edits, reactions, mentions, read receipts or transparent commands over
    /// REST; no card or notice message types. `msg_body` ≤ 4096 bytes: text is capped at 3584 bytes so
    /// the JSON framing and our extras fit (the adapter still refuses a body over 4096 bytes); 600
    /// calls/min on the free plan.
    public static let jMessage: Capabilities = {
        var capabilities = jMessageBase
        capabilities.recallsInHistory = .unmarked
        capabilities.groupCreationAssignsID = true
        capabilities.deletionScopes = []
        capabilities.reportsDeletions = false
        capabilities.history = HistoryPositioning(cursorForm: .timeAndID, numericMessageIDs: true,
                                                  refusalTemplate: "'{cursor}' is not a jmessage history cursor")
        return capabilities
    }()

    private static let jMessageBase = Capabilities(
        vendor: "jmessage",
        features: [.customContent: .full, .mentions: .rejected, .replies: .fallback, .commands: .rejected, .recall: .partial,
                   .edit: .rejected, .expansion: .rejected, .reactions: .rejected, .readReceipts: .rejected, .media: .full,
                   .conversationList: .rejected, .userProvisioning: .full, .history: .partial, .sendAsAnyUser: .fallback],
        textMaxLength: 3584, textLengthUnit: .utf8Bytes,
        recallWindowMs: 3 * minute,
        expansionLimits: nil,
        rateLimits: [RateLimit(api: "*", requests: 600, perMs: minute)],
        contentKinds: [.text, .image, .gif, .voice, .video, .file, .location, .custom, .unsupported],
        notes: [.sendAsAnyUser: "REST sends as an admin; other senders travel as from_name + extras.imbridge_sender and are restored on read",
                .replies: "quoted id, sender and digest carried in extras (imbridge_reply_*); JMessage clients do not render them",
                .recall: "retract within 3 min; report v2 does not mark retracts, so history shows those made through this backend process",
                .history: "report v2: 7-day windows, cursor valid 120 s, 60 days kept; direct history reads both users' feeds",
                .media: "media travel as JMessage media_id (upload via /v1/resource); gif is an image with format gif"])

    /// The preset whose `vendor` is `name` (the adapter's name, any case).
    public static func preset(named name: String) -> Capabilities? {
        allPresets.first { $0.vendor == name.lowercased() }
    }

    /// Every preset, in the registry's order (each adapter's descriptor carries its own: `Vendors.all`).
    public static let allPresets: [Capabilities] = [.wukong, .rongCloud, .nim, .jMessage]
}
