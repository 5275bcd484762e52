import Foundation
import IMCore

/// Turns a source event into actions for one route leg, applying the target's capabilities and the
/// route's fallback policies. Pure: no I/O, no store.
///
/// Rules:
/// - contents the target cannot carry (kind not in its `contentKinds`, or custom content where custom is
///   not native) become text: the digest, plus the media URL where there is one (counted as a `media`
///   or `custom_content` fallback); a custom type declared in the mappings without a form for the
///   target's vendor becomes its `fallback:` text (with the message's expansion values);
/// - text longer than the target allows is cut to fit with a trailing `…` (counted);
/// - mentions are re-mapped to target users, or dropped where the target has none (counted);
/// - a message sent with an expansion is sent with one where the target has expansions, so later
///   changes can follow; the current key/values travel with it; so is every message from a source
///   where any message can be extended later (`expansionOnAnyMessage`, WuKong);
/// - edits, recalls, expansion changes and reactions use the target's native operation, or the route's
///   fallback (`notice`: a short message replying to the mapped original; `drop`); expansion changes to a
///   target with an expansion carrier (NIM) travel as carrier data instead of a notice, and so do a
///   message's initial expansion values (`carriesExpansion`);
/// - read state relays natively or is dropped; commands relay natively or are dropped;
/// - a deletion for everyone deletes the copy where the target can (`Deleting`), else recalls it where the
///   target recalls natively (the copy then shows as recalled), else follows the route's recall fallback
///   (`notice` "[消息已删除]" or `drop`); a deletion from one user's view deletes the copy from that user's
///   puppet's view where the target can, else is dropped (counted as a `recall` drop) — docs/mappings.md,
///   "Deletion";
/// - membership changes plan no action: the engine compares the group instead (`GroupSync`); a group's
///   dissolution neither: the engine queues its `.dissolve` entry (`GroupDissolution`).
package struct Translator: Sendable {
    /// The target's.
    package let capabilities: Capabilities
    /// The source's (nil when unknown).
    package var sourceCapabilities: Capabilities? = nil
    /// The target's fallback text for declared custom types its vendor cannot carry (mappings).
    package var customFallback: (@Sendable (MessageContent, [String: String]) -> String?)? = nil
    /// True where the target keeps no expansions but carries their changes as data (expansion support
    /// `fallback` and `ExpansionChangeSending`: NIM's `imbridge.expansion` carrier): changes and a message's initial values
    /// travel as carrier messages instead of text notices.
    package var carriesExpansion = false
    /// What the target can delete (`Deleting`); empty where it cannot.
    package var deletionScopes: Set<DeletionScope> = []

    /// A translator for one target backend, with the mappings' custom-type fallbacks when there are any.
    package init(target: any IMBackend, source: (any IMBackend)?, customFallbacks: CustomTypeFallbacks?) {
        self.capabilities = target.capabilities
        self.sourceCapabilities = source?.capabilities
        self.carriesExpansion = target.capabilities.support(.expansion) == .fallback && target is any ExpansionChangeSending
        self.deletionScopes = (target as? any Deleting)?.deletionScopes ?? []
        if let table = customFallbacks {
            let targetID = target.id
            self.customFallback = { table.text(for: $0, expansion: $1, target: targetID) }
        }
    }

    package func plan(_ event: IMEvent, leg: RouteLeg) -> Planned {
        var planned = Planned()
        switch event.kind {
        case .message(let message):
            planned.actions.append(.send(outgoing: outgoing(for: message, leg: leg, planned: &planned), source: message.id,
                                         replyToSource: message.reply?.messageID))
            if let carrier = initialCarrier(for: message, leg: leg, planned: &planned) { planned.actions.append(carrier) }
        case .edited(let id, _, let by, let content, _):
            if capabilities.support(.edit).isNative {
                planned.actions.append(.edit(source: id, by: leg.targetUser(by), content: fit(content, planned: &planned)))
            } else {
                fallback(.edit, leg, id, text: "✎ \(content.digest)", by: by, planned: &planned)
            }
        case .recalled(let id, _, let by, _):
            if capabilities.support(.recall).isNative {
                planned.actions.append(.recall(source: id, by: leg.targetUser(by)))
            } else {
                fallback(.recall, leg, id, text: "[消息已撤回]", by: by, planned: &planned)
            }
        case .expansionChanged(let id, _, let by, let delta):
            let actor = by ?? "bridge"
            if capabilities.support(.expansion).isNative || (carriesExpansion && leg.route.fallback(for: .expansion) != .drop) {
                planned.actions.append(.expansion(source: id, by: leg.targetUser(actor), delta: delta))
            } else {
                fallback(.expansion, leg, id, text: Self.describe(delta), by: actor, planned: &planned)
            }
        case .reaction(let id, _, let user, let emoji, let added, _):
            if capabilities.support(.reactions).isNative {
                planned.actions.append(.reaction(source: id, by: leg.targetUser(user), emoji: emoji, added: added))
            } else {
                fallback(.reactions, leg, id, text: added ? "\(emoji) +1" : "\(emoji) −1", by: user, planned: &planned)
            }
        case .read(_, let user, let upTo, _):
            if capabilities.support(.readReceipts).isNative {
                planned.actions.append(.read(upToSource: upTo, by: leg.targetUser(user)))
            } else {
                planned.fallbacks.append((Feature.readReceipts.rawValue, .drop))
            }
        case .deleted(let id, _, let by, let forUser, _):
            if deletionScopes.contains(forUser == nil ? .everyone : .oneUser) {
                planned.actions.append(.delete(source: id, by: leg.targetUser(by), forUser: forUser.map(leg.targetUser)))
            } else if forUser != nil {
                planned.fallbacks.append((Feature.recall.rawValue, .drop))
            } else if capabilities.support(.recall).isNative {
                planned.actions.append(.recall(source: id, by: leg.targetUser(by)))
            } else {
                fallback(.recall, leg, id, text: "[消息已删除]", by: by, planned: &planned)
            }
        case .membersChanged, .groupDissolved:
            break
        case .command(_, let sender, let command, let at):
            if capabilities.support(.commands).isNative && capabilities.contentKinds.contains(.command) {
                let outgoing = OutgoingMessage(conversation: leg.targetConversation, sender: leg.targetUser(sender),
                                               content: .command(command), sentAt: at, vendorExtras: event.vendorExtras)
                planned.actions.append(.notice(outgoing: outgoing, replyToSource: nil))
            } else {
                planned.fallbacks.append((Feature.commands.rawValue, .drop))
            }
        }
        return planned
    }

    /// The carrier of `message`'s initial expansion values, to follow its copy on a target that carries
    /// expansions as data (`carriesExpansion`), so the target's app reads them as data from the start; the
    /// values are then no fallback. Nil elsewhere, without values, or where the route drops expansions.
    /// Live relay and migration both send it (docs/expansions.md, "NIM: the expansion carrier").
    package func initialCarrier(for message: Message, leg: RouteLeg, planned: inout Planned) -> RelayAction? {
        guard carriesExpansion, let values = message.expansion?.values, !values.isEmpty,
              leg.route.fallback(for: .expansion) != .drop else { return nil }
        planned.fallbacks.removeAll { $0.feature == Feature.expansion.rawValue }
        return .expansion(source: message.id, by: leg.targetUser(message.sender),
                          delta: ExpansionDelta(version: message.expansion?.version ?? 0, set: values))
    }

    package func outgoing(for message: Message, leg: RouteLeg, planned: inout Planned) -> OutgoingMessage {
        var content = fit(message.currentContent, planned: &planned)
        if let text = customFallback?(message.currentContent, message.expansion?.values ?? [:]) {
            planned.fallbacks.append((Feature.customContent.rawValue, .notice))
            content = .text(fitText(text, planned: &planned))
        }
        if case .relay(_, let format) = leg.users, case .text(let text) = content {
            content = .text(fitText(Self.render(format, user: message.sender) + text.text, planned: &planned))
        }
        var mentions = Mentions()
        if !message.mentions.isEmpty {
            if capabilities.support(.mentions).isNative {
                mentions = Mentions(all: message.mentions.all, users: message.mentions.users.map(leg.targetUser))
            } else {
                planned.fallbacks.append((Feature.mentions.rawValue, .drop))
            }
        }
        var expansion: [String: String]?
        if let source = message.expansion {
            if capabilities.support(.expansion).isNative {
                expansion = source.values
            } else if !source.values.isEmpty {
                planned.fallbacks.append((Feature.expansion.rawValue, leg.route.fallback(for: .expansion)))
            }
        } else if sourceCapabilities?.expansionOnAnyMessage == true && capabilities.support(.expansion).isNative {
            expansion = [:]   // the source may extend it later: keep the copy extensible
        }
        var reply: ReplyRef?
        if let quoted = message.reply {
            if capabilities.support(.replies).isNative {
                reply = quoted
            } else {
                planned.fallbacks.append((Feature.replies.rawValue, .drop))
            }
        }
        var extras = message.vendorExtras
        extras["imbridge_source_sender"] = .string(message.sender.rawValue)
        extras["imbridge_source_sent_at"] = .int(message.sentAt)
        var options = message.options
        options.receiptRequested = options.receiptRequested && capabilities.support(.readReceipts).isNative
        return OutgoingMessage(conversation: leg.targetConversation, sender: leg.targetUser(message.sender), content: content,
                               mentions: mentions, reply: reply, options: options, expansion: expansion, sentAt: message.sentAt,
                               vendorExtras: extras)
    }

    /// Makes a content fit the target (kind and length), counting what it changed.
    package func fit(_ content: MessageContent, planned: inout Planned) -> MessageContent {
        var carried = capabilities.contentKinds.contains(content.kind)
        if content.kind == .custom, !capabilities.support(.customContent).isNative { carried = false }
        if !carried {
            planned.fallbacks.append(((content.kind == .custom ? Feature.customContent : Feature.media).rawValue, .notice))
            let url = content.attachments.first?.remoteURL.map { " \($0)" } ?? ""
            return .text(fitText(content.digest + url, planned: &planned))
        }
        if case .text(let text) = content { return .text(fitText(text.text, planned: &planned)) }
        return content
    }

    package func fitText(_ text: String, planned: inout Planned) -> String {
        guard capabilities.length(of: text) > capabilities.textMaxLength else { return text }
        planned.fallbacks.append(("text_length", .notice))
        var cut = text
        while capabilities.length(of: cut + "…") > capabilities.textMaxLength, !cut.isEmpty { cut.removeLast(max(1, cut.count / 20)) }
        return cut + "…"
    }

    package func fallback(_ feature: Feature, _ leg: RouteLeg, _ id: MessageID, text: String, by user: UserID, planned: inout Planned) {
        let policy = leg.route.fallback(for: feature)
        planned.fallbacks.append((feature.rawValue, policy))
        guard policy == .notice else { return }
        let content: MessageContent = capabilities.contentKinds.contains(.notice) ? .notice(NoticeContent(text: text)) : .text(text)
        let outgoing = OutgoingMessage(conversation: leg.targetConversation, sender: leg.targetUser(user), content: content,
                                       options: MessageOptions(persist: true, countUnread: false, push: false))
        planned.actions.append(.notice(outgoing: outgoing, replyToSource: capabilities.support(.replies).isNative ? id : nil))
    }

    package static func describe(_ delta: ExpansionDelta) -> String {
        var parts = delta.set.sorted { $0.key < $1.key }.map { "\($0.key) → \($0.value)" }
        parts += delta.removed.map { "\($0) ✕" }
        if delta.cleared && parts.isEmpty { parts.append("✕ all") }
        return parts.joined(separator: ", ")
    }

    package static func render(_ format: String, user: UserID) -> String {
        format.replacingOccurrences(of: "{user}", with: user.rawValue).replacingOccurrences(of: "{name}", with: user.rawValue)
    }
}
