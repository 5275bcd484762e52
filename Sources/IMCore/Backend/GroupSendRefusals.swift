/// What a vendor's server refuses for a group message (docs/adapters/<vendor>.md, "Conversations"): one
/// into a group it does not have, one whose sender is not a member, and one into a dissolved group. The presets carry their vendor's
/// rules, so that `MemoryBackend` refuses what the vendor refuses, with the same error class and vendor
/// code; capabilities made without a preset refuse neither.
public struct GroupSendRefusals: Hashable, Sendable, Codable {
    /// One refusal: the `IMError` class the adapter maps the vendor's answer to, and the vendor's code.
    public struct Refusal: Hashable, Sendable, Codable {
        public var code: IMError.Code
        public var vendorCode: String?
        /// What the vendor's code means (the error message says it).
        public var text: String

        public init(_ code: IMError.Code, vendorCode: String?, _ text: String) {
            self.code = code
            self.vendorCode = vendorCode
            self.text = text
        }

        /// The error a send refused this way throws.
        public func error(vendor: String, _ detail: String) -> IMError {
            IMError(code, "\(vendor)\(vendorCode.map { " \($0)" } ?? ""): \(text) (\(detail))", vendorCode: vendorCode, vendorMessage: text)
        }
    }

    /// A message into a group the vendor does not have; nil: accepted.
    public var unknownGroup: Refusal?
    /// A message whose sender is not a member of the group; nil: accepted.
    public var nonMember: Refusal?
    /// A message into a group that was dissolved (`GroupDissolving`); nil: accepted.
    public var dissolvedGroup: Refusal?

    public init(unknownGroup: Refusal? = nil, nonMember: Refusal? = nil, dissolvedGroup: Refusal? = nil) {
        self.unknownGroup = unknownGroup
        self.nonMember = nonMember
        self.dissolvedGroup = dissolvedGroup
    }

    enum CodingKeys: String, CodingKey { case unknownGroup, nonMember, dissolvedGroup }

    /// Values written before `dissolvedGroup` existed decode with it nil.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        unknownGroup = try c.decodeIfPresent(Refusal.self, forKey: .unknownGroup)
        nonMember = try c.decodeIfPresent(Refusal.self, forKey: .nonMember)
        dissolvedGroup = try c.decodeIfPresent(Refusal.self, forKey: .dissolvedGroup)
    }

    /// Nothing refused (WuKong, RongCloud, and capabilities made without a preset).
    public static let none = GroupSendRefusals()
}
