/// WuKong content type numbers (the `type` of the payload JSON), shared by the iOS/Android/JS SDKs and
/// TangSengDaoDao.
public enum WKContentType {
    public static let text = 1
    public static let image = 2
    public static let gif = 3
    public static let voice = 4
    public static let video = 5
    public static let location = 6
    public static let card = 7
    public static let file = 8
    public static let mergeForward = 11
    public static let lottieSticker = 12
    public static let emojiSticker = 13
    public static let cmd = 99
    public static let systemRange = 1000...2000
    /// The business server's "group created" notice, sent into every group it creates: the vendor's own
    /// bookkeeping, not a member's message (docs/adapters/wukong.md, "Users and groups").
    public static let groupCreated = 1001
    /// The plain tip notice, used for notices from other vendors.
    public static let tip = 2000

    /// IMBridge's carrier for custom types that have no WuKong number of their own (IMBridge's choice):
    /// `{"type":10000,"content_type":"<name>","data":"<exact payload text>"}`.
    public static let imbridgeCustom = 10000

    /// WuKong types the codec carries as `.custom` under these names by default (an app may register
    /// a `CustomMessageContent` with the same `contentType` to get typed values).
    public static let defaultCustomTypes: [Int: String] = [
        mergeForward: "wukong.merge_forward",
        lottieSticker: "wukong.sticker",
        emojiSticker: "wukong.emoji_sticker",
    ]
}
