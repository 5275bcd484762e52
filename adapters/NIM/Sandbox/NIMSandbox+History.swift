import IMCore
import IMHTTP
import NIM

extension NIMSandbox {
    /// `/history/querySessionMsg.action` (`from`, `to`: both directions) and `/history/queryTeamMsg.action`
    /// (`tid`, `accid`: 803 for a team that does not exist, 804 for an `accid` not in it — with
    /// `checkTeamValid=false`, one never in it). Rules: `begintime` < `endtime`, both bounds inclusive (UNCONFIRMED,
    /// docs/adapters/nim.md); `limit` 1…100; `reverse` 1 ascending / 2 descending (default); order is by send time, then
    /// msgid; `excludeMsgid` is the anchor already seen: it is dropped, and when it lies on the bound
    /// the walk comes from (`endtime` descending, `begintime` ascending) so is everything at that time
    /// on its seen side (UNCONFIRMED: NIM may drop only the one message; the adapter copes with both);
    /// `type` filters by a comma list; recalled messages and `option.history=false` ones are
    /// not returned. Answer: `{"code":200,"size":N,"msgs":[…]}` with `body` as the original JSON string.
    func history(_ form: NIMForm, team: Bool) -> HTTPResponseData {
        let first = team ? form["accid"]?.lowercased() : form["from"]?.lowercased()
        let second = team ? form["tid"] : form["to"]?.lowercased()
        guard let first, let second, !first.isEmpty, !second.isEmpty else {
            return Self.fail(NIMErrors.parameter, team ? "tid and accid are required" : "from and to are required")
        }
        guard let begin = form.int("begintime"), let end = form.int("endtime") else {
            return Self.fail(NIMErrors.parameter, "begintime and endtime are required")
        }
        guard begin < end else { return Self.fail(NIMErrors.parameter, "begintime must be earlier than endtime") }
        guard let limit = form.int("limit"), (1...100).contains(limit) else { return Self.fail(NIMErrors.parameter, "limit must be 1…100") }
        let reverse = form.int("reverse") ?? 2
        guard reverse == 1 || reverse == 2 else { return Self.fail(NIMErrors.parameter, "reverse must be 1 or 2") }
        var types: Set<Int>?
        if let list = form["type"], !list.isEmpty {
            let parsed = list.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard parsed.allSatisfy({ $0 != nil }) else { return Self.fail(NIMErrors.parameter, "type must be a comma list of numbers") }
            types = Set(parsed.compactMap { $0 })
        }
        let exclude = form.int("excludeMsgid")
        if team {
            // The team must exist (803) and `accid` be in it (804) — or, with `checkTeamValid=false`, have
            // been in it once (docs/adapters/nim.md).
            let anyTime = form["checkTeamValid"]?.lowercased() == "false"
            let refusal: HTTPResponseData? = state.withLock { state in
                guard let tid = Int64(second), let stored = state.teams[tid] else { return Self.fail(NIMErrors.noSuchTeam, "team not exist") }
                guard stored.contains(first) || (anyTime && stored.formerMembers.contains(first)) else {
                    return Self.fail(NIMErrors.notInTeam, anyTime ? "\(first) was never in the team" : "\(first) is not in the team")
                }
                return nil
            }
            if let refusal { return refusal }
        }
        let matches: [NIMStoredMessage] = state.withLock { state in
            // The anchor: when it sits on the bound the walk comes from, everything at that time on the
            // already-seen side of it is skipped too (a cursor, so equal timestamps page without repeats).
            let anchor = exclude.flatMap { state.index[$0] }.map { state.messages[$0] }
            return state.messages.filter { message in
                guard !message.recalled, message.storedInHistory, message.sendtime >= begin, message.sendtime <= end,
                      message.msgid != exclude, types?.contains(message.type) ?? true else { return false }
                if let anchor, message.sendtime == anchor.sendtime {
                    if reverse == 2, anchor.sendtime == end, message.msgid > anchor.msgid { return false }
                    if reverse == 1, anchor.sendtime == begin, message.msgid < anchor.msgid { return false }
                }
                return team ? (message.ope == 1 && message.to == second) : message.isBetween(first, second)
            }
        }
        let ordered = matches.sorted { ($0.sendtime, $0.msgid) < ($1.sendtime, $1.msgid) }
        let page = (reverse == 1 ? ordered : ordered.reversed()).prefix(Int(limit))
        return Self.ok(["size": .int(Int64(page.count)), "msgs": .array(page.map(\.historyEntry.json))])
    }
}
