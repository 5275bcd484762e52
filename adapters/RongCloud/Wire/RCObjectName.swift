/// RongCloud `objectName` values the adapter understands (docs/adapters/rongcloud.md).
///
/// Any other `RC:`-prefixed name is a vendor type the adapter does not model (kept raw as
/// `.unsupported`); a name without the `RC:` prefix is an app's custom type (`.custom`).
public enum RCObjectName {
    public static let text = "RC:TxtMsg"
    public static let image = "RC:ImgMsg"
    public static let gif = "RC:GIFMsg"
    public static let hqVoice = "RC:HQVCMsg"
    public static let voice = "RC:VcMsg"
    public static let sight = "RC:SightMsg"
    public static let file = "RC:FileMsg"
    public static let location = "RC:LBSMsg"
    public static let reference = "RC:ReferenceMsg"
    public static let command = "RC:CmdMsg"
    public static let infoNotification = "RC:InfoNtf"
    /// The group notification apps send for group operations (`operatorUserId`, `operation`, `data`,
    /// `message`, `extra`); `operation` "Dismiss" is a dismissal.
    public static let groupNotification = "RC:GrpNtf"
    public static let recallCommand = "RC:RcCmd"
    public static let recallNotification = "RC:RcNtf"
    public static let expansionSignal = "RC:MsgExMsg"
    /// IMKit's contact-card plugin type (not in the Server API type table; see docs).
    public static let card = "RC:CardMsg"

    /// The longest `objectName` the server accepts.
    public static let maxLength = 32

    /// Whether `name` is in the vendor's reserved namespace.
    public static func isBuiltIn(_ name: String) -> Bool { name.hasPrefix("RC:") }

    /// RongCloud's own types, as its message-type tables list them (docs/adapters/rongcloud.md, "Publish
    /// refusals"): content, notification, signalling and status types, IMKit's contact card, and the
    /// `RC:VC…` call signalling family. A custom type must not start with `RC:`.
    public static let vendorTypes: Set<String> = [
        text, image, gif, hqVoice, voice, sight, file, location, "RC:ImgTextMsg", reference, "RC:CombineMsg",
        infoNotification, groupNotification, "RC:ContactNtf", "RC:ProfileNtf", "RC:CmdNtf", command, "RC:TypSts",
        "RC:ReadNtf", recallCommand, recallNotification, expansionSignal, "RC:chrmKVNotiMsg", "RC:SRSMsg",
        "RC:RRReqMsg", "RC:RRRspMsg", card,
    ]

    /// Whether `name` is one of RongCloud's own types (`vendorTypes`, or the `RC:VC…` call signalling).
    public static func isVendorType(_ name: String) -> Bool { vendorTypes.contains(name) || name.hasPrefix("RC:VC") }
}

/// RongCloud `conversationType` numbers (recall, expansion and history calls).
public enum RCConversationType: Int, Sendable, Codable, CaseIterable {
    case `private` = 1
    case discussion = 2
    case group = 3
    case chatroom = 4
    case customerService = 5
    case system = 6
    case ultragroup = 10
}

/// The routing callback's `channelType` names (docs/adapters/rongcloud.md; SealTalk's enum).
public enum RCChannelType: String, Sendable, Codable, CaseIterable {
    case person = "PERSON"
    case persons = "PERSONS"
    case group = "GROUP"
    case tempGroup = "TEMPGROUP"
    case customerService = "CUSTOMERSERVICE"
    case notify = "NOTIFY"
    case mc = "MC"
    case mp = "MP"
    case ultragroup = "ULTRAGROUP"
}
