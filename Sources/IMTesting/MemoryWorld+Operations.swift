import IMCore

extension MemoryWorld {
    func recall(_ id: MessageID, in conversation: ConversationRef, by user: UserID) throws {
        try capabilities.require(.recall)
        let now = clock.nowMs()
        try state.withLock { state in
            let message = try state.message(id, in: conversation)
            if message.isRecalled { throw IMError(.alreadyRecalled, "message \(id) is already recalled") }
            if capabilities.recallBySenderOnly, message.sender != user {
                throw notSender(message, user, "recall")
            }
            if let window = capabilities.recallWindowMs, now - message.sentAt > window {
                throw IMError(.recallWindowExpired, "message \(id) is \((now - message.sentAt) / 1000) s old; \(capabilities.vendor) allows recall within \(window / 1000) s",
                              details: ["window_ms": String(window)])
            }
            state.update(id) { $0.recall = RecallState(by: user, at: now) }
            Self.publish("recall:\(id)", .recalled(messageID: id, conversation: conversation, by: user, at: now), in: &state)
        }
    }

    /// What this world can delete, as the vendor's adapter does (`Capabilities.deletionScopes`).
    public var deletionScopes: Set<DeletionScope> { capabilities.deletionScopes }

    /// Whether deletions are reported as `deleted` events (`Capabilities.reportsDeletions`).
    public var reportsDeletions: Bool { capabilities.reportsDeletions }

    /// Deletes a message for everyone (`forUser` nil: gone from history and every lookup; by the sender
    /// only where `Capabilities.deleteBySenderOnly`, as RongCloud's recall) or from `forUser`'s view (gone from that viewer's history). A scope
    /// the vendor lacks is `unsupported`; deleting again is a no-op.
    func delete(_ id: MessageID, in conversation: ConversationRef, by user: UserID, forUser: UserID?) throws {
        let scope: DeletionScope = forUser == nil ? .everyone : .oneUser
        guard deletionScopes.contains(scope) else {
            throw IMError(.unsupported, "\(capabilities.vendor) cannot delete a message \(scope == .everyone ? "for everyone" : "for one user") over its server API")
        }
        let now = clock.nowMs()
        try state.withLock { state in
            if state.deleted.contains(id), state.locations[id]?.conversation == conversation { return }
            let message = try state.message(id, in: conversation)
            if let forUser {
                guard state.hidden[forUser, default: []].insert(message.id).inserted else { return }
                if reportsDeletions {
                    Self.publish("delete:\(id):\(forUser)", .deleted(messageID: id, conversation: conversation, by: user, forUser: forUser, at: now),
                                 in: &state)
                }
                return
            }
            if capabilities.deleteBySenderOnly, message.sender != user {
                throw notSender(message, user, "delete")
            }
            state.deleted.insert(id)
            if reportsDeletions {
                Self.publish("delete:\(id)", .deleted(messageID: id, conversation: conversation, by: user, forUser: nil, at: now), in: &state)
            }
        }
    }

    /// A recall or delete by someone other than the sender: the vendor's refusal (`notSenderRefusal`) where it has a code.
    func notSender(_ message: Message, _ user: UserID, _ what: String) -> IMError {
        let detail = "only the sender \(message.sender) may \(what) \(message.id); \(user) tried"
        return capabilities.notSenderRefusal?.error(vendor: capabilities.vendor, detail) ?? IMError(.permissionDenied, detail)
    }

    func edit(_ id: MessageID, in conversation: ConversationRef, by user: UserID, content: MessageContent) throws {
        try capabilities.require(.edit)
        try capabilities.check(content)
        let content = try admit(content)
        let now = clock.nowMs()
        try state.withLock { state in
            let message = try state.message(id, in: conversation)
            if message.isRecalled { throw IMError(.alreadyRecalled, "message \(id) is recalled and cannot be edited") }
            if capabilities.editBySenderOnly, message.sender != user {
                throw IMError(.permissionDenied, "only the sender \(message.sender) may edit \(id); \(user) tried")
            }
            if let window = capabilities.editWindowMs, now - message.sentAt > window {
                throw IMError(.editWindowExpired, "message \(id) can no longer be edited")
            }
            state.update(id) { $0.edit = EditState(content: content, editedAt: now) }
            Self.publish("edit:\(id):\(now):\(state.nextEventNumber())",
                         .edited(messageID: id, conversation: conversation, by: user, content: content, at: now), in: &state)
        }
    }

    func updateExpansion(_ id: MessageID, in conversation: ConversationRef, by user: UserID,
                         _ change: ExpansionChange) throws -> ExpansionDelta {
        try capabilities.require(.expansion)
        return try state.withLock { state in
            let message = try state.message(id, in: conversation)
            guard var expansion = message.expansion else {
                throw IMError(.expansionNotEnabled, "message \(id) was sent without expansion; it cannot be extended")
            }
            try (capabilities.expansionLimits ?? .rongCloud).validate(change, current: expansion, caller: capabilities.expansionCaller)
            // Under a preset whose versions are change times (RongCloud's `ts`), as the adapter stamps them.
            let delta = expansion.apply(change, at: capabilities.expansionVersionIsChangeTime ? clock.nowMs() : nil)
            guard !delta.isEmpty else { return delta }
            state.update(id) { $0.expansion = expansion }
            // Under a preset whose versions are read times (WuKong's), stamped when the change is seen, as
            // the adapter stamps the read that serves it; the event keeps the counter in its id.
            var seen = delta
            if capabilities.expansionVersionIsReadTime { seen.version = clock.nowMs() }
            Self.publish("exp:\(id):\(delta.version)",
                         .expansionChanged(messageID: id, conversation: conversation, by: user, delta: seen), in: &state)
            return delta
        }
    }

    func expansion(of id: MessageID, in conversation: ConversationRef) throws -> Expansion {
        try capabilities.require(.expansion)
        let message = try message(id, in: conversation)
        guard let expansion = message.expansion else {
            throw IMError(.expansionNotEnabled, "message \(id) was sent without expansion")
        }
        return expansion
    }

    func toggleReaction(_ emoji: String, on id: MessageID, in conversation: ConversationRef, by user: UserID) throws -> Bool {
        try capabilities.require(.reactions)
        guard !emoji.isEmpty else { throw IMError(.invalidArgument, "emoji must not be empty") }
        let now = clock.nowMs()
        return try state.withLock { state in
            let message = try state.message(id, in: conversation)
            if message.isRecalled { throw IMError(.alreadyRecalled, "message \(id) is recalled") }
            let added = !message.reactions.contains { $0.user == user && $0.emoji == emoji }
            state.update(id) { message in
                if added {
                    message.reactions.append(Reaction(user: user, emoji: emoji, at: now))
                } else {
                    message.reactions.removeAll { $0.user == user && $0.emoji == emoji }
                }
            }
            Self.publish("react:\(id):\(user):\(emoji):\(state.nextEventNumber())",
                         .reaction(messageID: id, conversation: conversation, user: user, emoji: emoji, added: added, at: now),
                         in: &state)
            return added
        }
    }

    func markRead(_ conversation: ConversationRef, by user: UserID, upTo id: MessageID) throws {
        try capabilities.require(.readReceipts)
        let now = clock.nowMs()
        try state.withLock { state in
            _ = try state.message(id, in: conversation)
            let previous = state.readMarks[conversation]?[user] ?? 0
            let seq = state.position(of: id)
            guard seq > previous else { return }
            state.readMarks[conversation, default: [:]][user] = seq
            let members = state.members(of: conversation)
            let marks = state.readMarks[conversation] ?? [:]
            for (index, message) in (state.conversations[conversation] ?? []).enumerated()
            where message.readCounts != nil && message.sender != user && Int64(index + 1) > previous && Int64(index + 1) <= seq {
                let readers = members.filter { $0 != message.sender && (marks[$0] ?? 0) >= Int64(index + 1) }
                let counts = ReadCounts(read: readers.count, unread: members.count - 1 - readers.count)
                state.update(message.id) { $0.readCounts = counts }
            }
            Self.publish("read:\(conversation):\(user):\(seq)",
                         .read(conversation: conversation, user: user, upTo: id, at: now), in: &state)
        }
    }

    func readCounts(of id: MessageID, in conversation: ConversationRef) throws -> ReadCounts {
        try capabilities.require(.readReceipts)
        let message = try message(id, in: conversation)
        guard let counts = message.readCounts else {
            throw IMError(.invalidArgument, "message \(id) was sent without a read receipt request")
        }
        return counts
    }

    // MARK: conversation lists

    func conversations(for user: UserID) -> [ConversationSummary] {
        state.withLock { state in
            state.conversations.compactMap { conversation, messages -> ConversationSummary? in
                guard let last = messages.last, state.members(of: conversation).contains(user) else { return nil }
                let unread = state.unread(in: conversation, for: user)
                return ConversationSummary(
                    conversation: conversation, lastMessage: last, unreadCount: unread.count,
                    isMuted: state.muted[user]?.contains(conversation) ?? false, updatedAt: last.sentAt,
                    mentionsMe: unread.contains { $0.mentions.mentions(user) },
                    isPinned: state.pinned[user]?.contains(conversation) ?? false)
            }
            .sorted {
                if $0.isPinned != $1.isPinned { return $0.isPinned }
                return ($0.updatedAt, $0.conversation.description) > ($1.updatedAt, $1.conversation.description)
            }
        }
    }

    func unreadCount(in conversation: ConversationRef, for user: UserID) -> Int {
        state.withLock { $0.unread(in: conversation, for: user).count }
    }

    func totalUnread(for user: UserID) -> Int {
        state.withLock { state in
            state.conversations.keys
                .filter { !(state.muted[user]?.contains($0) ?? false) && state.members(of: $0).contains(user) }
                .reduce(0) { $0 + state.unread(in: $1, for: user).count }
        }
    }

    // MARK: conversation state

    func clearUnread(in conversation: ConversationRef, for user: UserID) throws {
        try requireState(.clearUnread)
        state.withLock { state in
            guard let count = state.conversations[conversation]?.count, count > 0 else { return }
            let last = Int64(count)
            state.readMarks[conversation, default: [:]][user] = max(state.readMarks[conversation]?[user] ?? 0, last)
        }
    }

    func setPinned(_ pinned: Bool, conversation: ConversationRef, for user: UserID) throws {
        try requireState(.pinning)
        state.withLock { state in
            if pinned { state.pinned[user, default: []].insert(conversation) } else { state.pinned[user]?.remove(conversation) }
        }
    }

    func reminders(in conversation: ConversationRef, for user: UserID) throws -> [ConversationReminder] {
        try requireState(.reminders)
        return state.withLock { state in
            (state.conversations[conversation] ?? []).filter { $0.sender != user && !$0.isRecalled && $0.mentions.mentions(user) }.map {
                ConversationReminder(messageID: $0.id, sender: $0.sender, all: !$0.mentions.users.contains(user),
                                     done: state.remindersDone[user]?.contains($0.id) ?? false)
            }
        }
    }

    func markReminderDone(_ id: MessageID, in conversation: ConversationRef, for user: UserID) throws {
        try requireState(.reminders)
        try state.withLock { state in
            let message = try state.message(id, in: conversation)
            guard message.sender != user, message.mentions.mentions(user) else {
                throw IMError(.invalidArgument, "message \(id) is not a reminder for \(user)")
            }
            state.remindersDone[user, default: []].insert(id)
        }
    }

    private func requireState(_ operation: ConversationStateOperation) throws {
        try capabilities.require(.conversationList)
        guard capabilities.conversationState.contains(operation) else {
            throw IMError(.unsupported, "\(capabilities.vendor) offers no \(operation.rawValue) over its server API",
                          details: ["feature": Feature.conversationList.rawValue, "operation": operation.rawValue])
        }
    }

    func setMuted(_ muted: Bool, conversation: ConversationRef, for user: UserID) {
        state.withLock { state in
            if muted {
                state.muted[user, default: []].insert(conversation)
            } else {
                state.muted[user]?.remove(conversation)
            }
        }
    }
}

extension MemoryWorld.State {
    /// A stored message's place in its conversation, from 1 in the order stored (its `seq` where the
    /// preset positions history by seq); read marks are kept in these numbers.
    func position(of id: MessageID) -> Int64 { Int64((locations[id]?.index ?? -1) + 1) }

    mutating func nextEventNumber() -> Int {
        eventCounter += 1
        return eventCounter
    }

    func unread(in conversation: ConversationRef, for user: UserID) -> [Message] {
        let mark = readMarks[conversation]?[user] ?? 0
        return (conversations[conversation] ?? []).enumerated().filter { index, message in
            message.sender != user && message.options.countUnread && !message.isRecalled && Int64(index + 1) > mark
        }.map(\.element)
    }
}
