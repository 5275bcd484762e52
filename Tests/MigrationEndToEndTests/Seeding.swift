import Foundation
import IMCore

/// A small conversation of mixed kinds, written by two ordinary users through the source adapter,
/// with the later changes each vendor allows (recall everywhere, edit where native, expansion where native).
struct Seed {
    let a: UserID
    let b: UserID
    /// A group conversation instead of the users' direct one.
    var group: GroupID?
    var conversation: ConversationRef { group.map { .group($0) } ?? .direct(a, b) }

    /// Users `<vendor>alice` / `<vendor>bob` (JMessage usernames need 4+ characters): each source has its
    /// own pair, so three sources can land in one target without mixing.
    init(source: BackendID) {
        a = UserID("\(source)alice")
        b = UserID("\(source)bob")
    }

    static let recalledText = "4 this one is recalled"
    static let editedBefore = "5 before the edit"
    static let editedAfter = "5 after the edit"
    static let expansionText = "6 order #881"

    /// Sends the conversation; returns the ids sent in order.
    @discardableResult
    func write(through backend: any IMBackend, image: MediaAttachment) async throws -> [Message] {
        let c = conversation
        func send(_ sender: UserID, _ content: MessageContent, expansion: [String: String]? = nil) async throws -> Message {
            try await backend.send(OutgoingMessage(conversation: c, sender: sender, content: content, expansion: expansion))
        }
        var sent: [Message] = []
        sent.append(try await send(a, .text("1 hello from \(a)")))
        sent.append(try await send(b, .text("2 hi \(a), 你好")))
        sent.append(try await send(a, .location(LocationContent(latitude: 31.2304, longitude: 121.4737, title: "Office", address: "Shanghai"))))
        sent.append(try await send(b, .text(Self.recalledText)))
        sent.append(try await send(a, .text(Self.editedBefore)))
        let native = backend.capabilities.support(.expansion).isNative && backend is any ExpansionUpdating
        sent.append(try await send(b, .text(Self.expansionText), expansion: native ? ["status": "new"] : nil))
        if backend.capabilities.contentKinds.contains(.card) {
            sent.append(try await send(a, .card(CardContent(userID: b, name: "Card of \(b)"))))
        } else {
            sent.append(try await send(a, .text("7 \(backend.capabilities.vendor) has no card kind")))
        }
        sent.append(try await send(b, .text("8 text number 8")))
        sent.append(try await send(a, .image(ImageContent(image))))
        for n in 10...12 { sent.append(try await send(n.isMultiple(of: 2) ? b : a, .text("\(n) text number \(n)"))) }
        if let recalling = backend as? any Recalling { try await recalling.recall(sent[3].id, in: c, by: b) }
        if let editing = backend as? any Editing, backend.capabilities.support(.edit).isNative {
            try await editing.edit(sent[4].id, in: c, by: a, content: .text(Self.editedAfter))
        }
        if native, let expanding = backend as? any ExpansionUpdating {
            _ = try await expanding.updateExpansion(of: sent[5].id, in: c, by: a, .set(["status": "paid", "by": "\(a)"]))
        }
        return sent
    }
}
