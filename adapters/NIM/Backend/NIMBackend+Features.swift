import Foundation
import IMAdapterKit
import IMCore
import IMHTTP

extension NIMBackend {
    // MARK: recall

    /// Recalls a message through `/msg/recall.action` (type 7 p2p / 8 team). NIM needs the message's send
    /// time: it comes from the messages this process sent or received, else from a history search over
    /// the recall window. Only the sender may recall (`permission_denied`); NIM enforces the window
    /// (`recall_window_expired`): 30 days with `ignoreTime=1` (`NIMSettings.recallIgnoreTime`, the
    /// default), else the console's; a second recall is `already_recalled`.
    public func recall(_ message: MessageID, in conversation: ConversationRef, by user: UserID) async throws {
        try capabilities.require(.recall)
        let original = try await locate(message, in: conversation)
        if original.sender.rawValue.lowercased() != user.rawValue.lowercased() {
            throw IMError(.permissionDenied, "only the sender \(original.sender) may recall \(message); \(user) tried")
        }
        guard let msgid = Int64(message.rawValue) else { throw IMError(.invalidArgument, "NIM message ids are numbers; '\(message)' is not") }
        let target = try NIMMessageCodec.target(of: conversation, sender: original.sender)
        try await client.recall(NIMRecallForm(deleteMsgid: msgid, timetag: original.sentAt, type: target.type.recallType,
                                              from: original.sender.rawValue, to: target.id, ignoreTime: settings.recallIgnoreTime))
        state.withLock { state in
            var tombstone = original
            tombstone.recall = RecallState(by: user, at: clock.nowMs())
            state.tombstones[message] = tombstone
        }
    }

    /// The message as this process knows it, or as history within the recall window shows it.
    func locate(_ id: MessageID, in conversation: ConversationRef) async throws -> Message {
        if let known = state.withLock({ $0.recent[id] }) {
            if known.isRecalled || state.withLock({ $0.tombstones[id] != nil }) {
                throw IMError(.alreadyRecalled, "message \(id) is already recalled")
            }
            return known
        }
        if state.withLock({ $0.tombstones[id] != nil }) { throw IMError(.alreadyRecalled, "message \(id) is already recalled") }
        let window = (capabilities.recallWindowMs ?? Self.recallSearchHorizonMs) + 60_000
        // The window is measured in NIM's clock, from the conversation's newest message: NIM stamps its
        // messages itself, and with its clock behind the bridge's, `now` would end the search pages early
        // (docs/adapters/nim.md, "Recall"). The newest message is no later than NIM's now, so the search
        // never stops short of a copy NIM would still recall.
        var anchor = HistoryAnchor.latest
        var newest: Int64?
        while true {
            let page = try await history(HistoryQuery(conversation: conversation, anchor: anchor, limit: 100))
            if let found = page.messages.first(where: { $0.id == id }) { return found }
            newest = newest ?? page.messages.last?.sentAt
            guard page.hasOlder, let cursor = page.olderCursor, let oldest = page.messages.first, let newest,
                  newest - oldest.sentAt < window else { break }
            anchor = .before(cursor)
        }
        throw IMError(.notFound, "message \(id) is not in \(conversation) within the recall window")
    }

    // MARK: media

    /// Uploads the file at `pathForUploading` through `/msg/upload.action` and records the URL
    /// (`markUploaded`, NIM's `updateAttachmentURL:`); size and MD5 are filled in when missing.
    public func upload(_ attachment: MediaAttachment) async throws -> MediaAttachment {
        try capabilities.require(.media)
        guard let path = attachment.pathForUploading else {
            throw IMError(.invalidArgument, "attachment is \(attachment.transferState.rawValue); only needs_upload attachments upload")
        }
        guard let data = FileManager.default.contents(atPath: path) else { throw IMError(.notFound, "no file at \(path)") }
        let ext = attachment.mimeType.flatMap(NIMMediaTypes.fileExtension(forMIME:))
            ?? NIMMediaTypes.fileExtension(ofName: attachment.fileName ?? path)
        let url = try await client.upload(Array(data), type: ext)
        var uploaded = attachment
        try uploaded.markUploaded(url: url)
        if uploaded.size == nil { uploaded.size = Int64(data.count) }
        if uploaded.checksum == nil { uploaded.checksum = NIMSignature.md5Hex(Array(data)) }
        if uploaded.fileName == nil { uploaded.fileName = (path as NSString).lastPathComponent }
        return uploaded
    }

    /// Fetches `remoteURL` (NIM's `attachmentURLStringForDownloading`) into `directory`
    /// (`attachmentPathForDownloading`) and marks the attachment downloaded.
    public func download(_ attachment: MediaAttachment, into directory: String) async throws -> MediaAttachment {
        try capabilities.require(.media)
        guard attachment.needsDownload, let url = attachment.remoteURL else {
            throw IMError(.invalidArgument, "attachment is \(attachment.transferState.rawValue); only needs_download attachments download")
        }
        let response = try await HTTPClientWrapper(timeoutSeconds: client.settings.timeout.secondsRoundedUp, secrets: client.http.secrets)
            .send(OutboundRequest(method: "GET", url: url))
        guard response.status == 200 else { throw IMError.http(status: response.status, body: response.bodyString) }
        let name = attachment.fileName ?? (URL(string: url)?.lastPathComponent).flatMap { $0.isEmpty ? nil : $0 } ?? UUID().uuidString
        let path = (directory as NSString).appendingPathComponent(name)
        guard FileManager.default.createFile(atPath: path, contents: Data(response.body)) else {
            throw IMError(.unavailable, "cannot write \(path)", isRetryable: false)
        }
        var downloaded = attachment
        try downloaded.markDownloaded(to: path)
        return downloaded
    }

    /// Uploads every attachment of `content` still in `needs_upload` state and puts the uploaded ones
    /// back (built-in media directly, custom contents through `replacingAttachments`).
    public func uploadPendingMedia(in content: MessageContent) async throws -> MessageContent {
        guard content.attachments.contains(where: \.needsUpload) else { return content }
        switch content {
        case .image(var image): image.attachment = try await upload(image.attachment); return .image(image)
        case .gif(var gif): gif.attachment = try await upload(gif.attachment); return .gif(gif)
        case .voice(var voice): voice.attachment = try await upload(voice.attachment); return .voice(voice)
        case .video(var video):
            if video.attachment.needsUpload { video.attachment = try await upload(video.attachment) }
            if let cover = video.cover, cover.needsUpload { video.cover = try await upload(cover) }
            return .video(video)
        case .file(var file): file.attachment = try await upload(file.attachment); return .file(file)
        case .custom(let custom):
            var replaced: [MediaAttachment] = []
            for attachment in custom.attachments {
                replaced.append(attachment.needsUpload ? try await upload(attachment) : attachment)
            }
            return .custom(custom.replacingAttachments(replaced))
        default:
            return content
        }
    }

    // MARK: expansion fallback

    /// The expansion fallback (capability `fallback`): sends `delta` for `target` as a type-100
    /// `imbridge.expansion` message from `user` into `conversation` and returns the carrier message.
    /// Receivers (this adapter's inbound side) turn it into an `expansionChanged` event. NIM keeps no
    /// expansion state, so limits are the caller's (the bridge validates against its source).
    @discardableResult
    public func sendExpansionChange(_ delta: ExpansionDelta, of target: MessageID, in conversation: ConversationRef,
                                    by user: UserID, clientID: ClientMessageID?) async throws -> Message {
        guard !delta.isEmpty else { throw IMError(.invalidArgument, "an empty expansion delta carries nothing") }
        return try await send(OutgoingMessage(conversation: conversation, sender: user,
                                              content: .custom(CustomContent(NIMExpansionCarrier(target: target, delta: delta))), clientMessageID: clientID,
                                              options: MessageOptions(persist: true, countUnread: false, push: false)))
    }
}

/// The app-facing form of the fallback, which `MemoryBackend(.nim)` simulates.
extension NIMBackend: ExpansionChangeSending {}
