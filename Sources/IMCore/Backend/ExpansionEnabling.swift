/// A target whose send is two calls — the message, then the expansion it is sent with (WuKong's
/// `/message/send`, then the business server's `extra`; docs/adapters/wukong.md, "Expansion") — can be
/// left with the message and no expansion: a crash, a timeout or a refused write between the two. When
/// the relay finds such an earlier attempt's copy instead of sending again, it asks the target to
/// complete it: the copy gets `initial` unless it was sent with an expansion already (then nothing is
/// written). Without this the copy counts as sent without expansion, and every later change of the
/// message is refused (`expansion_not_enabled`).
public protocol ExpansionEnabling: IMBackend {
    func enableExpansion(of message: MessageID, in conversation: ConversationRef, by user: UserID,
                         initial: [String: String]) async throws
}
