import IMCore

/// RongCloud's capabilities, with figures from docs/adapters/rongcloud.md (each with its public source). The adapter's
/// descriptor carries this preset; the testing kit (`IMTesting`) links this target alone, without the
/// adapter, to simulate the vendor (docs/architecture.md, "Adding a vendor").
///
/// Where the vendor's documents leave a point open, the rule chosen is written next to the figure.
extension Capabilities {
    private static let minute: Int64 = 60_000
    private static let second: Int64 = 1_000

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
                // `group/dismiss`: its rate is not documented where the others are; taken as theirs (docs/adapters/rongcloud.md).
                + ["group/create", "group/join", "group/quit", "group/refresh", "group/user/query", "user/group/query", "group/dismiss"]
                .map { RateLimit(api: $0, requests: 100, perMs: second) },
            notes: [.media: "the Server API has no upload: media travel as URLs",
                    .readReceipts: "RC:ReadNtf is client signalling; the Server API keeps no read state (routed RC:ReadNtf still arrive as read events)",
                    .history: "per-conversation query API; hourly log files otherwise"])
        // Inbound changes carry the routed RC:MsgExMsg's msgTimestamp (docs/adapters/rongcloud.md).
        capabilities.expansionVersionIsChangeTime = true
        // A delete for everyone is the sender's recall with `isDelete=1`, routed back with it.
        capabilities.deletionScopes = [.everyone]
        capabilities.deleteBySenderOnly = true
        // The adapter's Server API calls cover direct and group conversations (docs/adapters/rongcloud.md, "Facts on the preset").
        capabilities.sendConversationKinds = ConversationKinds([.direct, .group])
        // A recall (and so a delete) by another user is refused as 1002 "not the sender" (RongCloudRefusal).
        capabilities.notSenderRefusal = GroupSendRefusals.Refusal(.permissionDenied, vendorCode: "1002", "not the sender of the message")
        // No user listing; groups have no owner (docs/adapters/rongcloud.md, "Facts on the preset").
        capabilities.directory = DirectorySupport(listsAllUsers: false, keepsGroupOwner: false)
        // `/group/dismiss.json` routes nothing; the `RC:GrpNtf` "Dismiss" an app sends is read (docs/adapters/rongcloud.md).
        capabilities.reportsDissolution = false
        // 1008 with HTTP 429 (Retry-After 1 s), 1000 with HTTP 500 (docs/adapters/rongcloud.md, "Facts on the preset").
        capabilities.faultAnswers = FaultAnswers(
            rateLimited: .init(.rateLimited, vendorCode: "1008", "调用频率超限", retryAfterMs: 1000),
            serverError: .init(.unavailable, vendorCode: "1000", "服务内部错误，请稍后重试"))
        capabilities.history = HistoryPositioning(cursorForm: .timeAndID,
                                                  refusalTemplate: "'{cursor}' is not a RongCloud history cursor (msgTime:msgUID)")
        return capabilities
    }()
}
