import IMCore

/// JMessage's capabilities, with figures from docs/adapters/jmessage.md (each with its public source). The adapter's
/// descriptor carries this preset; the testing kit (`IMTesting`) links this target alone, without the
/// adapter, to simulate the vendor (docs/architecture.md, "Adding a vendor").
///
/// Where the vendor's documents leave a point open, the rule chosen is written next to the figure.
extension Capabilities {
    private static let minute: Int64 = 60_000
    private static let second: Int64 = 1_000

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
        capabilities.reportsDissolution = false
        // A group message needs a group that exists (899006). Its sender is always the adapter's admin, who
        // must be in the group (803005; the adapter makes it a member of every group it creates): the
        // neutral sender is not checked (docs/adapters/jmessage.md, "Conversations").
        // A group deleted with DELETE /v1/groups/{gid} no longer exists.
        capabilities.groupSendRefusals = GroupSendRefusals(unknownGroup: .init(.notFound, vendorCode: "899006", "group id does not exist"),
                                                           dissolvedGroup: .init(.notFound, vendorCode: "899006", "group id does not exist"))
        capabilities.history = HistoryPositioning(cursorForm: .timeAndID, numericMessageIDs: true,
                                                  refusalTemplate: "'{cursor}' is not a jmessage history cursor")
        capabilities.sendConversationKinds = ConversationKinds([.direct, .group, .chatroom])
        // The adapter removes group members (`POST /v1/groups/{gid}/members` `remove`; docs/adapters/jmessage.md).
        capabilities.directory = DirectorySupport()
        // HTTP 429 with 899030 and X-Rate-Limit-Reset 1 s; 899000 with HTTP 500 (docs/adapters/jmessage.md, "Facts on the preset").
        capabilities.faultAnswers = FaultAnswers(
            rateLimited: .init(.rateLimited, vendorCode: "899030", "server busy, retry later", retryAfterMs: 1000),
            serverError: .init(.unavailable, vendorCode: "899000", "server internal error"))
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
}
