import IMCore
import IMHTTP

extension RongCloudBackend {
    /// Applies an expansion change through `/message/expansion/{set,delete}.json`.
    ///
    /// Order: the current state is read (`query`; a message sent without expansion is refused with
    /// `expansion_not_enabled`), the change is validated whole against the server-call limits
    /// (`ExpansionLimits.validate`, nothing is sent when it fails), then only the keys that really
    /// change are sent: one set call (≤ 100 keys by validation) or delete calls of ≤ 100 keys each;
    /// `clear` deletes every current key. The returned delta lists only those keys; its version is this
    /// process's estimate `max(now, current version + 1)` — the authoritative per-key `ts` is what
    /// `expansion(of:in:)` and the routed `RC:MsgExMsg` report (see `RongCloudExpansionCodec`).
    public func updateExpansion(of message: MessageID, in conversation: ConversationRef, by user: UserID,
                                _ change: ExpansionChange) async throws -> ExpansionDelta {
        try capabilities.require(.expansion)
        let target = try RongCloudCodec.target(of: conversation, for: user)
        let current = try await expansion(of: message, in: conversation)
        try (capabilities.expansionLimits ?? .rongCloud).validate(change, current: current, caller: .server)
        var set: [String: String] = [:]
        var removed: [String] = []
        switch change {
        case .set(let values): set = values.filter { current[$0.key] != $0.value }
        case .remove(let keys): removed = Set(keys).filter { current[$0] != nil }.sorted()
        case .clear: removed = current.values.keys.sorted()
        }
        let version = max(clock.nowMs(), current.version + 1)
        guard !set.isEmpty || !removed.isEmpty else { return ExpansionDelta(version: current.version) }
        func form(_ fill: (inout RCExpansionForm) -> Void) -> FormBody {
            var form = RCExpansionForm(msgUID: message.rawValue, userId: user.rawValue,
                                         conversationType: target.type.rawValue, targetId: target.targetId)
            fill(&form)
            return form.form
        }
        if !set.isEmpty {
            try await client.post(RCPaths.expansionSet, form: form { $0.extraKeyVal = RongCloudExpansionCodec.setText(set) })
        }
        let perCall = (capabilities.expansionLimits ?? .rongCloud).maxKeysPerServerCall
        for start in stride(from: 0, to: removed.count, by: perCall) {
            let chunk = Array(removed[start..<min(removed.count, start + perCall)])
            try await client.post(RCPaths.expansionDelete, form: form { $0.extraKey = RongCloudExpansionCodec.deleteText(chunk) })
        }
        if case .clear = change {
            return ExpansionDelta(version: version, removed: removed, cleared: true)
        }
        return ExpansionDelta(version: version, set: set, removed: removed)
    }

    /// The message's expansion from `/message/expansion/query.json`; each key's version is its `ts`.
    public func expansion(of message: MessageID, in conversation: ConversationRef) async throws -> Expansion {
        try capabilities.require(.expansion)
        var form = FormBody()
        form.append("msgUID", message.rawValue)
        let response = try await client.post(RCPaths.expansionQuery, form: form, as: RCExpansionQueryResponse.self)
        return RongCloudExpansionCodec.expansion(from: response.extraContent)
    }
}
