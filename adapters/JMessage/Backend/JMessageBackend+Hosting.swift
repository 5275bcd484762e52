import Foundation
import IMAdapterKit
import IMCore
import IMHTTP

/// JMessage takes media only as `media_id`s of its own uploads: in message bodies and as the `avatar` of
/// users and groups alike, where the other vendors take URLs (docs/adapters/jmessage.md, "Media ids").
/// A URL handed to this backend — a route's `media: link`, another vendor's avatar — is fetched and
/// uploaded first (`POST /v1/resource`, ≤ 8 MB), once per URL: each upload is noted both ways in
/// `notes` (the bridge store, so every instance and the next start know it; `jmessage.<backend>.upload.…`
/// and `….source.…`) and in memory (the last 4,096). Reading back, an avatar uploaded from a URL reads
/// as that URL, so a profile compared with its source does not differ for that alone, also after a
/// restart or in the next `migrate`; any other avatar's `media_id` reads as its download URL
/// (`GET /v1/resource?mediaId=`), which other vendors can show. A note that cannot be written (the
/// store full) costs an upload again later, never the send.
extension JMessageBackend {
    static let hostedCapacity = 4096

    static func isURL(_ reference: String) -> Bool { reference.hasPrefix("http://") || reference.hasPrefix("https://") }

    /// `content` with every attachment given as a URL uploaded to JMessage: an image's or gif's as an
    /// image, a voice's as a voice, a file's and a video's as a file, a video's cover as an image.
    func withUploadedMedia(_ content: MessageContent) async throws -> MessageContent {
        let types: [String]
        switch content {
        case .image, .gif: types = ["image"]
        case .voice: types = ["voice"]
        case .file: types = ["file"]
        case .video: types = ["file", "image"]
        default: return content
        }
        let attachments = content.attachments
        guard attachments.contains(where: { $0.remoteURL.map(Self.isURL) ?? false }) else { return content }
        var uploaded: [MediaAttachment] = []
        for (index, attachment) in attachments.enumerated() {
            guard let url = attachment.remoteURL, Self.isURL(url) else { uploaded.append(attachment); continue }
            let result = try await hosted(url, type: types[min(index, types.count - 1)], fileName: attachment.fileName,
                                          mimeType: attachment.mimeType)
            var copy = attachment
            copy.remoteURL = result.mediaID
            copy.checksum = String(result.mediaCrc32)
            copy.size = result.fsize
            if let width = result.width, width > 0 { copy.width = width }
            if let height = result.height, height > 0 { copy.height = height }
            if copy.mimeType == nil { copy.mimeType = result.format.flatMap(JMessageMediaFormat.mimeType(for:)) }
            if copy.fileName == nil { copy.fileName = result.fname }
            uploaded.append(copy)
        }
        return content.replacingAttachments(uploaded)
    }

    /// The avatar to write: a URL uploaded as an image and given as its `media_id`; anything else (a
    /// `media_id` already, empty to clear, nil to leave) as it is.
    ///
    /// A picture that cannot be fetched (its host refuses, is down or unknown, or it is over 8 MB) leaves
    /// the avatar as JMessage has it: the profile is written without it, and the next comparison with the
    /// source tries again. A missing picture is no reason to hold a user or a group back.
    func hostedAvatar(_ avatar: String?) async throws -> String? {
        guard let avatar, Self.isURL(avatar) else { return avatar }
        do {
            return try await hosted(avatar, type: "image", fileName: nil, mimeType: nil).mediaID
        } catch let error as IMError where error.details["media"] == "fetch" || error.details["limit"] == "upload_size" {
            return nil
        }
    }

    /// The avatar as read: the URL a `media_id` this process uploaded stood for, else the `media_id`'s
    /// download URL; a value JMessage does not know as a media id (899003) is returned as it is.
    func readableAvatar(_ avatar: String?) async throws -> String? {
        guard let avatar, !avatar.isEmpty, !Self.isURL(avatar) else { return avatar }
        if let source = state.withLock({ $0.hostedSources[avatar] }) { return source }
        if let source = try? await notes.checkpoint(named: sourceNote(avatar)) {
            remember(source, mediaID: avatar, nil)
            return source
        }
        do {
            return try await client.resourceURL(mediaID: avatar)
        } catch let error as IMError where error.vendorCode == String(JMessageErrors.invalidParameter.code) {
            return avatar
        }
    }

    /// The upload standing for `url`, made the first time: the bytes fetched (a failure keeps the fetch's
    /// class, so a media host that is down is tried again and one answering 404 is not) and posted as `type`.
    func hosted(_ url: String, type: String, fileName: String?, mimeType: String?) async throws -> JMUploadResult {
        if let known = state.withLock({ $0.hosted[url] }) { return known }
        if let text = try? await notes.checkpoint(named: uploadNote(url)), let note = try? JSONDecoder().decode(UploadNote.self, from: Data(text.utf8)),
           note.url == url {
            remember(url, mediaID: note.result.mediaID, note.result)
            return note.result
        }
        let bytes: [UInt8]
        do {
            bytes = try await client.fetch(url)
        } catch let error as IMError {
            throw IMError(error.code, "JMessage takes media as its own uploads; fetching \(url) to upload it failed: \(error.message)",
                          isRetryable: error.isRetryable, retryAfterMs: error.retryAfterMs, details: ["media": "fetch"])
        }
        guard bytes.count <= Self.maxUploadBytes else {
            throw IMError(.limitExceeded, "\(url) is \(bytes.count) bytes; jmessage uploads allow \(Self.maxUploadBytes)",
                          details: ["limit": "upload_size"])
        }
        let name = fileName ?? URL(string: url)?.lastPathComponent.nonEmpty ?? "media"
        let result = try await client.upload(type: type, fileName: name, contentType: mimeType ?? "application/octet-stream", data: bytes)
        remember(url, mediaID: result.mediaID, result)
        if let text = String(data: (try? JSONEncoder().encode(UploadNote(url: url, result: result))) ?? Data(), encoding: .utf8) {
            try? await notes.setCheckpoint(named: uploadNote(url), to: text)
            try? await notes.setCheckpoint(named: sourceNote(result.mediaID), to: url)
        }
        return result
    }

    private struct UploadNote: Codable {
        var url: String
        var result: JMUploadResult
    }

    /// The note of `url`'s upload: named by the URL's digest (a URL may be longer than a name should be),
    /// holding the URL itself, which is compared on reading.
    private func uploadNote(_ url: String) -> String { "jmessage.\(id.rawValue).upload.\(Hashing.sha256Hex(Array(url.utf8)))" }
    private func sourceNote(_ mediaID: String) -> String { "jmessage.\(id.rawValue).source.\(mediaID)" }

    private func remember(_ url: String, mediaID: String, _ result: JMUploadResult?) {
        state.withLock { state in
            if let result { state.hosted[url] = result }
            state.hostedSources[mediaID] = url
            state.hostedIDs[url] = mediaID
            if let evicted = state.hostedOrder.insert(url).evicted {
                state.hosted[evicted] = nil
                if let gone = state.hostedIDs.removeValue(forKey: evicted) { state.hostedSources[gone] = nil }
            }
        }
    }
}

private extension String {
    var nonEmpty: String? { isEmpty || self == "/" ? nil : self }
}
