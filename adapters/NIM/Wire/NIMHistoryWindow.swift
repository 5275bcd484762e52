/// The form of `/history/querySessionMsg.action` (person) and `/history/queryTeamMsg.action` (team)
/// (docs/adapters/nim.md).
public struct NIMHistoryWindow: Hashable, Sendable {
    public var conversation: NIMConversationType
    /// Person: the two accids (`from`, `to`); team: (`accid` of a member, `tid`).
    public var first: String
    public var second: String
    public var beginTime: Int64
    public var endTime: Int64
    public var limit: Int
    /// true: ascending (`reverse` 1); false: descending (`reverse` 2).
    public var ascending: Bool
    public var excludeMsgid: Int64?

    public init(conversation: NIMConversationType, first: String, second: String, beginTime: Int64, endTime: Int64,
                limit: Int, ascending: Bool, excludeMsgid: Int64? = nil) {
        self.conversation = conversation
        self.first = first
        self.second = second
        self.beginTime = beginTime
        self.endTime = endTime
        self.limit = limit
        self.ascending = ascending
        self.excludeMsgid = excludeMsgid
    }

    var path: String { conversation == .person ? "/history/querySessionMsg.action" : "/history/queryTeamMsg.action" }

    var fields: [(String, String)] {
        var fields: [(String, String)] = conversation == .person
            ? [("from", first), ("to", second)] : [("tid", second), ("accid", first)]
        fields += [("begintime", String(beginTime)), ("endtime", String(endTime)), ("limit", String(limit)),
                   ("reverse", ascending ? "1" : "2")]
        if let excludeMsgid { fields.append(("excludeMsgid", String(excludeMsgid))) }
        // A team read as a member who has since left (a puppet the bridge kicked, the sender of an old
        // message): `checkTeamValid=false` asks NIM only that the team exists and `accid` was ever a member
        // (docs/adapters/nim.md), where the default refuses anyone not in the team now.
        if conversation == .team { fields.append(("checkTeamValid", "false")) }
        return fields
    }
}
