/// How well a backend supports one feature. The bridge reads this to decide, per feature, whether to
/// relay natively or apply the route's fallback, and counts every downgrade.
public enum SupportLevel: String, Hashable, Sendable, Codable, Comparable {
    /// Native, as the neutral model describes it.
    case full
    /// Native with restrictions stated in `Capabilities.notes`.
    case partial
    /// Not native; the adapter carries it by a documented substitute (stated in `notes`).
    case fallback
    /// Accepted and silently not carried (the call succeeds, nothing reaches users).
    case dropped
    /// Refused: the opt-in call throws `IMError(.unsupported)`.
    case rejected

    private var rank: Int {
        switch self {
        case .full: 0
        case .partial: 1
        case .fallback: 2
        case .dropped: 3
        case .rejected: 4
        }
    }
    public static func < (lhs: SupportLevel, rhs: SupportLevel) -> Bool { lhs.rank < rhs.rank }

    /// Whether the backend performs the operation itself (full or partial).
    public var isNative: Bool { self == .full || self == .partial }
}

/// The features a backend may have beyond plain sending.
public enum Feature: String, Hashable, Sendable, Codable, CaseIterable {
    case customContent = "custom_content"
    case mentions, replies, commands
    case recall, edit, expansion, reactions
    case readReceipts = "read_receipts"
    case media
    case conversationList = "conversation_list"
    case userProvisioning = "user_provisioning"
    case history
    /// Sending as any user (puppets). Where rejected, only a relay/admin account can send.
    case sendAsAnyUser = "send_as_any_user"
}

/// A documented API rate limit: `requests` per `perMs`, and how long the vendor blocks on excess.
public struct RateLimit: Hashable, Sendable, Codable {
    public var api: String
    public var requests: Int
    public var perMs: Int64
    public var blockMs: Int64?
    public init(api: String, requests: Int, perMs: Int64, blockMs: Int64? = nil) {
        self.api = api
        self.requests = requests
        self.perMs = perMs
        self.blockMs = blockMs
    }
    public var perSecond: Double { Double(requests) * 1000 / Double(perMs) }
}

/// How text length is counted against `textMaxLength`.
public enum LengthUnit: String, Hashable, Sendable, Codable {
    case characters, utf8Bytes = "utf8_bytes"
}

/// How a recalled message shows in a vendor's history (docs/adapters/<vendor>.md, "Verify").
public enum RecallsInHistory: String, Hashable, Sendable, Codable {
    /// Still there, marked recalled (WuKong, RongCloud's `RC:RcNtf` row).
    case marked
    /// Gone from history (NIM).
    case removed
    /// Still there and not marked (JMessage report v2): only the process that recalled it knows.
    case unmarked
}

/// What a backend can do, as a value. Presets for the four vendors carry the figures of the vendor
/// docs (docs/adapters/<vendor>.md, with their public sources); an adapter may adjust them from its configuration (a NIM console can
/// raise the recall window, for instance).
public struct Capabilities: Hashable, Sendable, Codable {
    public var vendor: String
    public var features: [Feature: SupportLevel]
    public var textMaxLength: Int
    public var textLengthUnit: LengthUnit
    /// nil: no time limit.
    public var recallWindowMs: Int64?
    public var recallBySenderOnly: Bool
    public var editWindowMs: Int64?
    public var editBySenderOnly: Bool
    /// nil when the backend has no expansions.
    public var expansionLimits: ExpansionLimits?
    /// Who issues expansion changes through this backend (client SDK or server API limits).
    public var expansionCaller: ExpansionLimits.Caller
    /// True where every message can get expansion keys later (WuKong's `extra` dictionary has no
    /// send-time switch; NIM's expansion carrier may name any message); false where it must be enabled at
    /// send time (RongCloud). The bridge then
    /// sends copies of such messages with expansion enabled, so later changes can follow.
    public var expansionOnAnyMessage: Bool = false
    /// True where an expansion change's version (`ExpansionDelta.version` of an inbound
    /// `expansionChanged`) is the vendor's time of the change in epoch milliseconds (RongCloud's routed
    /// `msgTimestamp`); the bridge then orders changes by it. Elsewhere (WuKong's `extra_version` is a
    /// per-channel counter) the bridge stamps the change with its own intake time (docs/expansions.md).
    public var expansionVersionIsChangeTime: Bool = false
    /// True where an inbound expansion change's version is the bridge's clock when the adapter asked the
    /// vendor for the state it was read from (WuKong: the extras sync that served the row). The bridge
    /// orders such changes by it (never past its intake time): a read served before another but recorded
    /// after it — a catch-up's read beside a callback's sync — does not outrank what the later read found
    /// (seed 293, docs/reliability.md).
    public var expansionVersionIsReadTime: Bool = false
    /// How a recalled message shows in the vendor's history read by another process (`imbridge verify`
    /// compares recall state only where it is `marked`; docs/verify.md).
    public var recallsInHistory: RecallsInHistory = .marked
    /// True where creating a group gives it an id of the vendor's own, whatever id was asked for (NIM's
    /// `tid`, JMessage's `gid`, the WuKong business server's `group_no`; docs/adapters/<vendor>.md): a
    /// group reached by a route cannot be made under the source's id there, and a migration maps ids.
    public var groupCreationAssignsID: Bool = false
    /// What the vendor refuses for a group message: one into a group it does not have, one from a
    /// sender outside the group (NIM: 803 / 804; JMessage: 899006; WuKongIM and RongCloud refuse
    /// neither). docs/adapters/<vendor>.md, "Conversations".
    public var groupSendRefusals: GroupSendRefusals = .none
    /// The conversation kinds the vendor's adapter sends into (RongCloud and NIM: direct and group;
    /// JMessage adds chatrooms; WuKong chatrooms and its numbered channel types). docs/adapters/<vendor>.md, "Conversations".
    public var sendConversationKinds: ConversationKinds = .all
    /// What the adapter throws for a rate limit and a server error (the vendor's code and wait), as the
    /// testing kit's injected faults report them (docs/testing-kit.md, "Faults").
    public var faultAnswers: FaultAnswers = .http
    /// Whether the vendor keeps a per-user mute flag for conversations (`ConversationListing.setMuted`);
    /// WuKongIM lists conversations and unread counts but keeps no mute state.
    public var keepsMuteState: Bool = true
    /// The conversation state operations the vendor's server API offers (`ConversationStateSetting`).
    public var conversationState: Set<ConversationStateOperation> = []
    /// What the vendor's adapter can delete (`Deleting.deletionScopes`, docs/mappings.md, "Deletion"):
    /// RongCloud for everyone (a recall with `isDelete=1`); WuKong, NIM and JMessage nothing. A value
    /// made without a preset can do both, so that apps can test either.
    public var deletionScopes: Set<DeletionScope> = [.everyone, .oneUser]
    /// True where only the sender may delete a message for everyone (RongCloud: the delete is its recall).
    public var deleteBySenderOnly: Bool = false
    /// The vendor's refusal of a recall or a delete by someone other than the sender, where its adapter
    /// reports a vendor code for it (RongCloud: 1002); nil: `permission_denied` without one.
    public var notSenderRefusal: GroupSendRefusals.Refusal?
    /// The directory calls the vendor's adapter serves (`DirectorySupport`).
    public var directory: DirectorySupport = .all
    /// Whether deletions reach the app server as `deleted` events: RongCloud routes its recall command
    /// with `isDelete` 1; WuKongIM's webhook, NIM's copy and JMessage's routing carry none.
    public var reportsDeletions: Bool = true
    /// Whether the vendor reports group membership changes to the app server (`membersChanged`): NIM
    /// copies team operations in its message copy (docs/adapters/nim.md); the others send none.
    public var reportsMembershipChanges: Bool = false
    /// Whether the vendor reports a group's dissolution to the app server (`groupDissolved`): NIM copies
    /// the team notification of a dismissal (docs/adapters/nim.md); RongCloud routes the `RC:GrpNtf`
    /// `Dismiss` an app sends, not the dismissal itself; WuKongIM and JMessage send none. A value made
    /// without a preset reports them.
    public var reportsDissolution: Bool = true
    /// How the vendor's adapter positions history: cursor form, message ids, and its refusal of a
    /// cursor of another form.
    public var history: HistoryPositioning = .seq
    public var rateLimits: [RateLimit]
    public var contentKinds: Set<ContentKind>
    /// Human notes per feature: the restriction behind `partial`, the substitute behind `fallback`.
    public var notes: [Feature: String]

    public init(vendor: String, features: [Feature: SupportLevel], textMaxLength: Int, textLengthUnit: LengthUnit = .characters,
                recallWindowMs: Int64?, recallBySenderOnly: Bool = true, editWindowMs: Int64? = nil,
                editBySenderOnly: Bool = true, expansionLimits: ExpansionLimits?, expansionCaller: ExpansionLimits.Caller = .server,
                rateLimits: [RateLimit] = [], contentKinds: Set<ContentKind> = Set(ContentKind.allCases),
                notes: [Feature: String] = [:]) {
        self.vendor = vendor
        self.features = features
        self.textMaxLength = textMaxLength
        self.textLengthUnit = textLengthUnit
        self.recallWindowMs = recallWindowMs
        self.recallBySenderOnly = recallBySenderOnly
        self.editWindowMs = editWindowMs
        self.editBySenderOnly = editBySenderOnly
        self.expansionLimits = expansionLimits
        self.expansionCaller = expansionCaller
        self.rateLimits = rateLimits
        self.contentKinds = contentKinds
        self.notes = notes
    }

    /// The support level of a feature; features a preset does not list are `rejected`.
    public func support(_ feature: Feature) -> SupportLevel { features[feature] ?? .rejected }

    /// Throws `unsupported` unless the feature is native (full or partial).
    public func require(_ feature: Feature) throws {
        let level = support(feature)
        guard level.isNative else {
            throw IMError(.unsupported, "\(vendor) does not support \(feature.rawValue) (\(level.rawValue))"
                          + (notes[feature].map { ": \($0)" } ?? ""), details: ["feature": feature.rawValue])
        }
    }

    /// The length of `text` as this backend counts it.
    public func length(of text: String) -> Int {
        textLengthUnit == .characters ? text.count : text.utf8.count
    }

    /// Checks a content against the text limit and the content kinds this backend carries.
    public func check(_ content: MessageContent) throws {
        guard contentKinds.contains(content.kind) else {
            throw IMError(.unsupported, "\(vendor) cannot carry \(content.kind.rawValue) content",
                          details: ["kind": content.kind.rawValue])
        }
        if case .text(let text) = content, length(of: text.text) > textMaxLength {
            throw IMError(.limitExceeded, "text is \(length(of: text.text)) \(textLengthUnit.rawValue); \(vendor) allows \(textMaxLength)",
                          details: ["limit": "text_length"])
        }
        try content.validate()
    }

    public func rateLimit(for api: String) -> RateLimit? { rateLimits.first { $0.api == api } }
}
