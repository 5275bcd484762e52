import Foundation
import IMAdapterKit
import IMCore
import IMStore
import IMRelay
import IMOutbox
import IMPositions

/// How one history message becomes what the migration queues: a copy, a change, or nothing.
extension Migrator {
    /// A message the source says is no event and that is not a command: the vendor's own bookkeeping
    /// (WuKong's "group created" notice, docs/adapters/wukong.md §6), which is not copied.
    func isVendorNotice(_ message: Message) -> Bool {
        if case .command = message.content { return false }
        guard let source = source as? any CatchUpSource else { return false }
        return source.catchUpEvent(for: message) == nil
    }

    /// A message of the source's history that is a change to another message — NIM's expansion carrier,
    /// which catch-up reads as an `expansionChanged` event (docs/expansions.md) — queued as that change,
    /// planned as live intake plans it, not copied as a message: the copy it refers to (queued before it,
    /// in the same lane) then ends in the source's state. Its ledger row (recent ones) makes the live
    /// callback of the same carrier a duplicate. Nil for a message that is a message.
    func changeItem(for message: Message, leg: RouteLeg, translator: Translator, checkpoint: String) -> RelayEngine.MigrationItem? {
        guard let event = (source as? any CatchUpSource)?.catchUpEvent(for: message) else { return nil }
        if case .message = event.kind { return nil }
        let planned = translator.plan(event, leg: leg)
        let mark = MigrationMark(run: checkpoint, tally: planned.fallbacks.contains { $0.policy == .notice } ? "fell_back" : "converted",
                                 kind: message.currentContent.kind.rawValue)
        return RelayEngine.MigrationItem(event: event, message: message, actions: planned.actions, mark: mark,
                                         recordInLedger: message.sentAt >= clock.nowMs() - liveWindowMs)
    }

    /// The event a callback or catch-up gives `message` (the ledger's key for it).
    func sourceEvent(for message: Message) -> IMEvent {
        (source as? any CatchUpSource)?.catchUpEvent(for: message)
            ?? IMEvent(eventID: (source as? any MessageEventNaming)?.messageEventID(for: message) ?? EventID("msg:\(message.id)"),
                       backend: source.id, kind: .message(message))
    }

    /// The copy of one source message as the migration queues it: the relay's translation, silent, with
    /// its origin; a recalled message is sent and then recalled (or sent as a notice on a target without
    /// recall).
    func item(for message: Message, leg: RouteLeg, translator: Translator, plan: MigrationPlan, checkpoint: String)
        -> RelayEngine.MigrationItem {
        var planned = Planned()
        var outgoing = translator.outgoing(for: message, leg: leg, planned: &planned)
        outgoing.options = .silent
        outgoing.vendorExtras["imbridge_source_id"] = .string(message.id.rawValue)
        // Original id, sender, time (and expansion values the target cannot hold) in the target's extension field.
        var origin: [String: JSONValue] = ["backend": .string(plan.source.rawValue), "id": .string(message.id.rawValue),
                                           "sender": .string(message.sender.rawValue), "sent_at": .int(message.sentAt)]
        if outgoing.expansion == nil, let values = message.expansion?.values, !values.isEmpty {
            origin["expansion"] = .object(values.mapValues { .string($0) })
        }
        outgoing.vendorExtras[OutgoingMessage.originKey] = .object(origin)
        // On a target that carries expansions as data (NIM), the initial values follow the copy as the relay
        // sends them, so a migrated copy ends in the same state as a relayed one.
        let carrier = message.isRecalled ? nil : translator.initialCarrier(for: message, leg: leg, planned: &planned)
        var fellBack = !planned.fallbacks.isEmpty && planned.fallbacks.contains { $0.policy == .notice }
        let recallNatively = message.isRecalled && target.capabilities.support(.recall).isNative && target is any Recalling
        if message.isRecalled && !recallNatively {
            outgoing.content = .notice(NoticeContent(text: "[消息已撤回]"))
            outgoing.expansion = outgoing.expansion.map { _ in [:] }
            fellBack = true
        }
        let converted = !planned.fallbacks.isEmpty || message.edit != nil || outgoing.content != message.currentContent
        var actions: [RelayAction] = [.send(outgoing: outgoing, source: message.id, replyToSource: message.reply?.messageID)]
        if let carrier { actions.append(carrier) }
        if recallNatively { actions.append(.recall(source: message.id, by: outgoing.sender)) }
        var mark = MigrationMark(run: checkpoint, tally: fellBack ? "fell_back" : converted ? "converted" : "copied",
                                 kind: message.currentContent.kind.rawValue)
        if plan.account, case .puppet = plan.users, !failedUsers.contains(message.sender) { mark.senderMigrated = true }
        return RelayEngine.MigrationItem(event: sourceEvent(for: message), message: message, actions: actions, mark: mark,
                                         recordInLedger: message.sentAt >= clock.nowMs() - liveWindowMs,
                                         recallEvent: (source as? any CatchUpSource)?.recallEvent(for: message))
    }

    func tally(_ mark: MigrationMark, into result: inout MigrationReport.Conversation) {
        switch mark.tally {
        case "fell_back": result.counts.fellBack += 1
        case "converted": result.counts.converted += 1
        default: result.counts.copied += 1
        }
        result.counts.byKind[mark.kind ?? "text", default: 0] += 1
    }
}
