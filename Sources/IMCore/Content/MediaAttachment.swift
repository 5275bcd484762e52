/// A media file carried by a message (image, voice, video, file, or media inside a custom content).
///
/// The transfer state follows the client SDKs' hooks (WuKong `WKMediaMessageContent`, NIM
/// `NIMCustomAttachment`): a locally created attachment `needsUpload` from `localPath`; once uploaded
/// the remote URL is set (`updateAttachmentURL:`) and it is `uploaded`. A received attachment
/// `needsDownload` from `remoteURL`; once fetched to `localPath` it is `downloaded`.
/// Only the transitions below are allowed, so a bridge can tell what still has to move.
public struct MediaAttachment: Hashable, Sendable, Codable {
    public enum TransferState: String, Hashable, Sendable, Codable {
        case needsUpload = "needs_upload"
        case uploaded
        case needsDownload = "needs_download"
        case downloaded
    }

    public var remoteURL: String?
    public var localPath: String?
    public var mimeType: String?
    public var size: Int64?
    /// Hex digest of the bytes (MD5 where the vendor uses it), when known.
    public var checksum: String?
    public var width: Int?
    public var height: Int?
    /// Milliseconds; codecs convert from the vendor's seconds.
    public var durationMs: Int64?
    /// A thumbnail: a URL, or base64 bytes where the vendor inlines them (RongCloud `content`).
    public var thumbnail: String?
    public var fileName: String?
    public var transferState: TransferState

    public init(remoteURL: String? = nil, localPath: String? = nil, mimeType: String? = nil, size: Int64? = nil,
                checksum: String? = nil, width: Int? = nil, height: Int? = nil, durationMs: Int64? = nil,
                thumbnail: String? = nil, fileName: String? = nil, transferState: TransferState? = nil) {
        self.remoteURL = remoteURL
        self.localPath = localPath
        self.mimeType = mimeType
        self.size = size
        self.checksum = checksum
        self.width = width
        self.height = height
        self.durationMs = durationMs
        self.thumbnail = thumbnail
        self.fileName = fileName
        self.transferState = transferState ?? (remoteURL == nil && localPath != nil ? .needsUpload : .needsDownload)
    }

    /// A remote attachment as a codec sees it on the wire.
    public static func remote(_ url: String, mimeType: String? = nil, size: Int64? = nil) -> MediaAttachment {
        MediaAttachment(remoteURL: url, mimeType: mimeType, size: size, transferState: .needsDownload)
    }

    /// A local file that has to be uploaded before the message can be sent.
    public static func local(_ path: String, mimeType: String? = nil, size: Int64? = nil) -> MediaAttachment {
        MediaAttachment(localPath: path, mimeType: mimeType, size: size, transferState: .needsUpload)
    }

    public var needsUpload: Bool { transferState == .needsUpload }
    public var needsDownload: Bool { transferState == .needsDownload && remoteURL != nil }

    /// The path the uploader reads (`attachmentPathForUploading`).
    public var pathForUploading: String? { needsUpload ? localPath : nil }

    /// Records a finished upload (`updateAttachmentURL:`). Only valid from `needsUpload`.
    public mutating func markUploaded(url: String) throws {
        guard transferState == .needsUpload else {
            throw IMError(.invalidArgument, "attachment is \(transferState.rawValue), not needs_upload")
        }
        remoteURL = url
        transferState = .uploaded
    }

    /// Records a finished download to `path`. Only valid from `needsDownload`.
    public mutating func markDownloaded(to path: String) throws {
        guard transferState == .needsDownload else {
            throw IMError(.invalidArgument, "attachment is \(transferState.rawValue), not needs_download")
        }
        localPath = path
        transferState = .downloaded
    }

    /// The same media, re-hosted at another URL (what a bridge does with `media: rehost`); it is then
    /// a received attachment again from the target's point of view.
    public func rehosted(at url: String) -> MediaAttachment {
        var copy = self
        copy.remoteURL = url
        copy.localPath = nil
        copy.transferState = .needsDownload
        return copy
    }
}
