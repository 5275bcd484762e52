import Foundation
import IMCore

extension MemoryWorld {
    /// `carrying`: the expansion change a carrier message stands for; its event is `expansionChanged`.
    func send(_ outgoing: OutgoingMessage, carrying change: (target: MessageID, delta: ExpansionDelta)? = nil) throws -> Message {
        try capabilities.check(outgoing.content)
        var outgoing = outgoing
        outgoing.content = try admit(outgoing.content)
        if outgoing.conversation.kind == .direct, outgoing.conversation.peer(of: outgoing.sender) == nil {
            throw IMError(.invalidArgument, "\(outgoing.sender) is not a user of \(outgoing.conversation)")
        }
        guard capabilities.sendConversationKinds.allows(outgoing.conversation.kind) else {
            throw IMError(.unsupported, "\(capabilities.vendor) sends no messages into \(outgoing.conversation.kind) conversations",
                          details: ["conversation": outgoing.conversation.description])
        }
        if !outgoing.mentions.isEmpty { try capabilities.require(.mentions) }
        // A reply the adapter carries in extras (`fallback`: JMessage) is taken, unchecked as it is there.
        let repliesCarried = capabilities.support(.replies) == .fallback
        if outgoing.reply != nil, !repliesCarried { try capabilities.require(.replies) }
        if case .custom = outgoing.content { try capabilities.require(.customContent) }
        var expansion: Expansion?
        if let initial = outgoing.expansion {
            try capabilities.require(.expansion)
            let limits = capabilities.expansionLimits ?? .rongCloud
            if !initial.isEmpty { try limits.validate(.set(initial), current: Expansion(), caller: capabilities.expansionCaller) }
            expansion = Expansion(initial: initial, version: initial.isEmpty ? 0 : 1)
        }
        let now = clock.nowMs()
        return try state.withLock { state in
            try state.checkGroupSend(outgoing, refusals: capabilities.groupSendRefusals, vendor: capabilities.vendor)
            if let clientID = outgoing.clientMessageID, let existing = state.clientIDs[clientID],
               let location = state.locations[existing] {
                return state.conversations[location.conversation]![location.index]
            }
            if let reply = outgoing.reply, !repliesCarried {
                _ = try state.message(reply.messageID, in: outgoing.conversation)
            }
            state.nextMessageNumber += 1
            var message = Message(
                id: historyForm.messageID(state.nextMessageNumber), clientMessageID: outgoing.clientMessageID,
                conversation: outgoing.conversation, sender: outgoing.sender, sentAt: outgoing.sentAt ?? now,
                content: outgoing.content, mentions: outgoing.mentions, reply: outgoing.reply, options: outgoing.options,
                expansion: expansion, vendorExtras: outgoing.vendorExtras)
            if case .command(let command) = outgoing.content {
                Self.publish("cmd:\(message.id)", .command(conversation: message.conversation, sender: message.sender,
                                                           content: command, at: message.sentAt), in: &state)
                return message
            }
            if outgoing.options.persist {
                var list = state.conversations[outgoing.conversation, default: []]
                if historyForm.bySeq { message.seq = Int64(list.count + 1) }
                if outgoing.options.receiptRequested { message.readCounts = ReadCounts() }
                list.append(message)
                state.conversations[outgoing.conversation] = list
                state.locations[message.id] = (outgoing.conversation, list.count - 1)
                if let clientID = outgoing.clientMessageID { state.clientIDs[clientID] = message.id }
                if message.readCounts != nil {
                    let others = state.members(of: message.conversation).count - 1
                    state.update(message.id) { $0.readCounts = ReadCounts(unread: others) }
                    message = try state.message(message.id, in: message.conversation)
                }
            }
            if let change {
                // Versioned by the carrier's own time where the preset says so (NIM's adapter does it).
                var delta = change.delta
                if capabilities.expansionVersionIsChangeTime { delta.version = message.sentAt }
                Self.publish("exp:\(message.id)", .expansionChanged(messageID: change.target, conversation: message.conversation,
                                                                     by: message.sender, delta: delta), in: &state)
            } else {
                Self.publish("msg:\(message.id)", .message(message), in: &state)
            }
            return message
        }
    }
}

extension MemoryWorld {
    /// A content as production would carry it: with a registry, a typed custom content must be of a
    /// registered type, and its payload is decoded again by the registry (a typed value from the app is
    /// decoded strictly; a raw payload of a registered type is re-typed where it decodes, as the
    /// adapters' codecs do). Without a registry, or for other contents, the content is unchanged.
    func admit(_ content: MessageContent) throws -> MessageContent {
        guard let registry, case .custom(let custom) = content else { return content }
        if let value = custom.value {
            guard registry.isRegistered(custom.typeName) else {
                throw IMError(.invalidContent,
                              "custom content type '\(custom.typeName)' (\(type(of: value))) is not registered in the world's ContentRegistry: "
                              + "register it (registry.register(\(type(of: value)).self)) as the app must at start-up",
                              details: ["content_type": custom.typeName])
            }
            return .custom(try registry.decode(typeName: custom.typeName, payload: custom.payload))
        }
        return .custom(try registry.decodeOrRaw(typeName: custom.typeName, payload: custom.payload))
    }
}

extension MemoryWorld {
    /// NIM's expansion fallback as the NIM adapter does it (docs/adapters/nim.md): the delta travels as a
    /// stored custom message of type `imbridge.expansion` (payload `{"cleared","msgid","removed","set",
    /// "version"}`, not counted unread, not pushed), subscribers get an `expansionChanged` event instead
    /// of a message, and no expansion state is kept. Only under capabilities whose expansion is this fallback (`.fallback`: the NIM preset).
    func sendExpansionChange(_ delta: ExpansionDelta, of target: MessageID, in conversation: ConversationRef,
                             by user: UserID, clientID: ClientMessageID? = nil) throws -> Message {
        guard capabilities.support(.expansion) == .fallback else {
            throw IMError(.unsupported, "\(capabilities.vendor) does not carry expansion changes as messages (only NIM's fallback does)",
                          details: ["feature": Feature.expansion.rawValue])
        }
        guard !delta.isEmpty else { throw IMError(.invalidArgument, "an empty expansion delta carries nothing") }
        let carrier = ExpansionCarrierPayload(msgid: target.rawValue, version: delta.version, set: delta.set,
                                              removed: delta.removed, cleared: delta.cleared)
        return try send(OutgoingMessage(conversation: conversation, sender: user,
                                        content: .custom(CustomContent(raw: ExpansionCarrierPayload.contentType, payload: carrier.json)),
                                        clientMessageID: clientID,
                                        options: MessageOptions(persist: true, countUnread: false, push: false)),
                        carrying: (target, delta))
    }
}

/// The payload of NIM's expansion carrier, written as the NIM adapter writes it.
struct ExpansionCarrierPayload: Codable {
    static let contentType = "imbridge.expansion"
    var msgid: String
    var version: Int64
    var set: [String: String]
    var removed: [String]
    var cleared: Bool

    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(self)) ?? Data("{}".utf8), as: UTF8.self)
    }
}

extension MemoryWorld.State {
    /// The vendor's refusals of a group message (`Capabilities.groupSendRefusals`): into a group the world
    /// does not have (no profile, no members), into one it dissolved, or from a sender who is neither a
    /// member nor the owner.
    func checkGroupSend(_ outgoing: OutgoingMessage, refusals: GroupSendRefusals, vendor: String) throws {
        guard outgoing.conversation.kind == .group else { return }
        let group = GroupID(outgoing.conversation.id)
        let members = groupMembers[group]
        if let refusal = refusals.dissolvedGroup, dissolvedGroups.contains(group), groups[group] == nil, members == nil {
            throw refusal.error(vendor: vendor, "group \(group) was dissolved")
        }
        if let refusal = refusals.unknownGroup, groups[group] == nil, members == nil {
            throw refusal.error(vendor: vendor, "no group \(group)")
        }
        if let refusal = refusals.nonMember, !(members ?? []).contains(outgoing.sender), groups[group]?.owner != outgoing.sender {
            throw refusal.error(vendor: vendor, "\(outgoing.sender) is not in group \(group)")
        }
    }
}
