/// WuKong channel types (the protocol's numbers).
public enum WKChannelType {
    public static let person: UInt8 = 1
    public static let group: UInt8 = 2
    public static let customerService: UInt8 = 3
    public static let community: UInt8 = 4
    public static let communityTopic: UInt8 = 5
    public static let info: UInt8 = 6
    public static let data: UInt8 = 7
    public static let temp: UInt8 = 8
    public static let live: UInt8 = 9
    public static let visitors: UInt8 = 10
    public static let agent: UInt8 = 11
    public static let agentGroup: UInt8 = 12
}
