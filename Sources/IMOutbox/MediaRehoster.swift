import Foundation
import IMCore
import IMHTTP

/// `media: rehost`: before a message with media is sent to a target that stores files
/// (`MediaTransferring`), each attachment is fetched from the source — through the source backend's own
/// download where it has one, else by plain HTTP GET of its URL — and uploaded to the target, so the
/// copy does not depend on the source's URLs staying reachable. A fetch or upload failure is retryable
/// (the lane backs off); a target without file storage keeps the links.
package struct MediaRehoster: Sendable {
    package let http = HTTPClientWrapper(timeoutSeconds: 60)

    package func rehost(_ content: MessageContent, from source: (any IMBackend)?, to target: any IMBackend) async throws -> MessageContent {
        guard let uploader = target as? any MediaTransferring, target.capabilities.support(.media).isNative else { return content }
        let attachments = content.attachments
        guard !attachments.isEmpty, attachments.allSatisfy({ $0.remoteURL != nil }) else { return content }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-media-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var moved: [MediaAttachment] = []
        for (index, attachment) in attachments.enumerated() {
            let path = try await fetch(attachment, from: source, into: directory, index: index)
            var local = attachment
            local.localPath = path
            local.remoteURL = nil
            local.transferState = .needsUpload
            let uploaded = try await uploader.upload(local)
            moved.append(uploaded.rehosted(at: uploaded.remoteURL ?? attachment.remoteURL!))
        }
        return content.replacingAttachments(moved)
    }

    package func fetch(_ attachment: MediaAttachment, from source: (any IMBackend)?, into directory: String, index: Int) async throws -> String {
        if let downloader = source as? any MediaTransferring, source?.capabilities.support(.media).isNative == true,
           let path = try? await downloader.download(attachment, into: directory).localPath {
            return path
        }
        guard let url = attachment.remoteURL else { throw IMError(.invalidArgument, "attachment has no URL to fetch") }
        let response = try await http.send(OutboundRequest(method: "GET", url: url))
        guard (200..<300).contains(response.status) else {
            throw IMError.http(status: response.status, body: "fetching \(url) for re-hosting")
        }
        let name = attachment.fileName ?? URL(string: url)?.lastPathComponent ?? "media"
        let path = (directory as NSString).appendingPathComponent("\(index)-\(name.isEmpty ? "media" : name)")
        guard FileManager.default.createFile(atPath: path, contents: Data(response.body)) else {
            throw IMError(.unavailable, "cannot write \(path)")
        }
        return path
    }
}
