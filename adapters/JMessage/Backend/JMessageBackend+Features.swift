import Foundation
import IMCore

/// Retract, media and user provisioning.
extension JMessageBackend {
    /// The most a media upload may carry (8 MB).
    public static let maxUploadBytes = 8 << 20

    // MARK: Recalling

    /// Retracts a message (`POST /v1/messages/{sender}/{msgid}/retract`), within 3 minutes, by its sender.
    ///
    /// "Sender" is the neutral sender: for a message this backend sent for `alice` (as the admin), only
    /// `alice` (or the admin) may retract it; the call itself names the admin, who really sent it. The
    /// sender is known from this process's sends, else read from report v2 (the last 10 minutes, which
    /// covers the window). The vendor's 855001–855004 map to `recall_window_expired`,
    /// `permission_denied`, `not_found` and `already_recalled`. On success a `recalled` event is
    /// published (`jmessage:retract:<msgid>`, on `events()` and into the intake's sink) and history
    /// shows the message recalled from then on in this process (report v2 itself does not mark
    /// retracts; UNCONFIRMED).
    public func recall(_ message: MessageID, in conversation: ConversationRef, by user: UserID) async throws {
        try capabilities.require(.recall)
        let admin = codec.identity.adminUser
        var known = state.withLock { $0.sent[message] }
        if known == nil {
            let now = clock.nowMs()
            let recent = try await walk(try reportPaths(for: conversation), conversation, from: now + Self.clockSlackMs,
                                        backwards: true, edge: now - 600_000, limit: 1000) { _ in true }
            if let found = recent.first(where: { $0.id == message }) {
                known = Sent(sender: found.sender, vendorSender: found.vendorExtras["jmessage_from_id"]?.stringValue ?? found.sender.rawValue,
                             conversation: found.conversation)
            }
        }
        let vendorSender: String
        if let known {
            guard known.sender == user || user == admin else {
                throw IMError(.permissionDenied, "\(user) did not send \(message) (\(known.sender) did); only the sender may retract",
                              vendorCode: "855002")
            }
            vendorSender = known.vendorSender
        } else {
            vendorSender = codec.identity.vendorUser(user).username
        }
        try await client.retract(username: vendorSender, msgid: message.rawValue)
        let at = clock.nowMs()
        state.withLock { $0.recalled[message] = RecallState(by: user, at: at) }
        let event = IMEvent(eventID: JMessageCodec.retractEventID(message.rawValue), backend: id,
                            kind: .recalled(messageID: message, conversation: conversation, by: user, at: at))
        fanout.publish([event])
        // Report v2 never shows a retract: the intake's sink hears of it from here, off the caller's path.
        if let sink = state.withLock({ $0.intakeSink }) {
            Task { try? await sink.accept([event]) }
        }
    }

    // MARK: MediaTransferring

    /// Uploads a local file (`POST /v1/resource?type=image|voice|file`, multipart, ≤ 8 MB); videos and
    /// anything not image/audio go up as `file`. The result's `remoteURL` is the JMessage `media_id`,
    /// `checksum` its `media_crc32` (decimal).
    public func upload(_ attachment: MediaAttachment) async throws -> MediaAttachment {
        guard let path = attachment.pathForUploading else {
            throw IMError(.invalidArgument, "attachment is \(attachment.transferState.rawValue), not needs_upload with a local path")
        }
        let data: [UInt8]
        do {
            data = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw IMError(.invalidArgument, "cannot read \(path): \(error)")
        }
        guard data.count <= Self.maxUploadBytes else {
            throw IMError(.limitExceeded, "\(data.count) bytes; jmessage uploads allow \(Self.maxUploadBytes)", details: ["limit": "upload_size"])
        }
        let fileName = attachment.fileName ?? URL(fileURLWithPath: path).lastPathComponent
        let type = JMessageMediaFormat.uploadType(mimeType: attachment.mimeType, fileName: fileName)
        let result = try await client.upload(type: type, fileName: fileName, contentType: attachment.mimeType ?? "application/octet-stream",
                                             data: data)
        var uploaded = attachment
        try uploaded.markUploaded(url: result.mediaID)
        uploaded.size = result.fsize
        uploaded.checksum = String(result.mediaCrc32)
        if let width = result.width, width > 0 { uploaded.width = width }
        if let height = result.height, height > 0 { uploaded.height = height }
        if uploaded.mimeType == nil { uploaded.mimeType = result.format.flatMap(JMessageMediaFormat.mimeType(for:)) }
        if uploaded.fileName == nil { uploaded.fileName = result.fname }
        return uploaded
    }

    /// Downloads a received attachment: a `media_id` is resolved with `GET /v1/resource?mediaId=`, an
    /// http(s) URL is fetched as is. The file lands in `directory` under the attachment's file name
    /// (or the media id's last segment).
    public func download(_ attachment: MediaAttachment, into directory: String) async throws -> MediaAttachment {
        guard attachment.needsDownload, let reference = attachment.remoteURL else {
            throw IMError(.invalidArgument, "attachment is \(attachment.transferState.rawValue), not needs_download with a remote reference")
        }
        let isURL = reference.hasPrefix("http://") || reference.hasPrefix("https://")
        let url = isURL ? reference : try await client.resourceURL(mediaID: reference)
        let bytes = try await client.fetch(url)
        let rawName = attachment.fileName ?? reference.split(separator: "/").last.map(String.init) ?? "media"
        let name = rawName.replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "..", with: "_")
        let target = URL(fileURLWithPath: directory).appendingPathComponent(name.isEmpty ? "media" : name)
        do {
            try Data(bytes).write(to: target)
        } catch {
            throw IMError(.invalidArgument, "cannot write \(target.path): \(error)")
        }
        var downloaded = attachment
        try downloaded.markDownloaded(to: target.path)
        if downloaded.size == nil { downloaded.size = Int64(bytes.count) }
        return downloaded
    }

    // MARK: UserProvisioning

    /// Registers the user in our app (`POST /v1/users/`); "already exists" (899001) is success.
    /// Users of another app (`name#appKey`) cannot be created from here.
    public func ensureUser(_ profile: UserProfile) async throws {
        let (username, appKey) = codec.identity.vendorUser(profile.id)
        guard appKey == nil else {
            throw IMError(.invalidArgument, "\(profile.id) belongs to app \(appKey!); only users of \(codec.identity.appKey) can be registered")
        }
        let results = try await client.registerUsers([JMUserRegistration(username: username, password: puppetPassword,
                                                                           nickname: profile.name, avatar: nil)])
        for result in results {
            if let error = result.error, error.code != JMessageErrors.userExists.code {
                throw JMessageErrors.error(status: JMessageErrors.table.status(for: error.code), code: error.code,
                                              message: error.message, retryAfterMs: nil)
            }
        }
    }
}
