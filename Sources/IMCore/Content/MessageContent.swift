import Foundation

/// What a message says. Every case has a `digest` (the one-line text a conversation list shows, as the
/// vendors' SDKs render it: `[图片]`, `[语音]`, `[位置] 标题`, `[名片] 名字` …) and a `searchableText`
/// (the words a local search matches).
///
/// - `command` is transient: it is delivered as an event and never stored in history.
/// - `custom` carries an app-defined type, typed when registered, raw otherwise.
/// - `unsupported` keeps a vendor payload nobody understood, byte for byte, so writing it back to the
///   same vendor is lossless.
public enum MessageContent: Hashable, Sendable, Codable {
    case text(TextContent)
    case image(ImageContent)
    case gif(GIFContent)
    case voice(VoiceContent)
    case video(VideoContent)
    case file(FileContent)
    case location(LocationContent)
    case card(CardContent)
    case command(CommandContent)
    case notice(NoticeContent)
    case custom(CustomContent)
    case unsupported(UnsupportedContent)

    public static func text(_ text: String) -> MessageContent { .text(TextContent(text)) }

    public var kind: ContentKind {
        switch self {
        case .text: .text
        case .image: .image
        case .gif: .gif
        case .voice: .voice
        case .video: .video
        case .file: .file
        case .location: .location
        case .card: .card
        case .command: .command
        case .notice: .notice
        case .custom: .custom
        case .unsupported: .unsupported
        }
    }

    public var digest: String {
        switch self {
        case .text(let content): content.text
        case .image: "[图片]"
        case .gif: "[GIF动图]"
        case .voice: "[语音]"
        case .video: "[视频]"
        case .file(let content): "[文件] \(content.name)"
        case .location(let content): "[位置] \(content.title ?? content.address ?? "")".trimmingCharacters(in: .whitespaces)
        case .card(let content): "[名片] \(content.name)"
        case .command: ""
        case .notice(let content): content.text
        case .custom(let content): content.digest
        case .unsupported: "[不支持的消息]"
        }
    }

    public var searchableText: String {
        switch self {
        case .text(let content): content.text
        case .image: "[图片] [照片] [image]"
        case .gif: "[GIF] [动图] [表情]"
        case .voice: "[语音] [voice]"
        case .video: "[视频] [video]"
        case .file(let content): "[文件] \(content.name)"
        case .location(let content): ["[位置]", content.title, content.address].compactMap { $0 }.joined(separator: " ")
        case .card(let content): "[名片] \(content.name)"
        case .command: ""
        case .notice(let content): content.text
        case .custom(let content): content.searchableText
        case .unsupported: ""
        }
    }

    /// Media this content carries, in a stable order (for custom contents, the order the type lists them).
    public var attachments: [MediaAttachment] {
        switch self {
        case .image(let content): [content.attachment]
        case .gif(let content): [content.attachment]
        case .voice(let content): [content.attachment]
        case .video(let content): [content.attachment] + (content.cover.map { [$0] } ?? [])
        case .file(let content): [content.attachment]
        case .custom(let content): content.attachments
        default: []
        }
    }

    /// Whether the content is stored in history (commands are not).
    public var isPersistent: Bool { kind != .command }

    /// Checks the content's own rules (`CustomMessageContent.validate()`, non-empty text …).
    public func validate() throws {
        switch self {
        case .text(let content) where content.text.isEmpty:
            throw IMError(.invalidContent, "text is empty")
        case .custom(let content):
            try content.validate()
        case .location(let content) where !(-90...90).contains(content.latitude) || !(-180...180).contains(content.longitude):
            throw IMError(.invalidContent, "location \(content.latitude),\(content.longitude) is out of range")
        default:
            break
        }
    }
}

/// The kind of a content, used by capabilities and mappings.
public enum ContentKind: String, Hashable, Sendable, Codable, CaseIterable {
    case text, image, gif, voice, video, file, location, card, command, notice, custom, unsupported
}

extension MessageContent {
    /// The same content with its media replaced, in the order `attachments` lists them (a video's
    /// cover second). Contents without media are returned unchanged.
    public func replacingAttachments(_ replacements: [MediaAttachment]) -> MessageContent {
        guard let first = replacements.first else { return self }
        switch self {
        case .image(var content): content.attachment = first; return .image(content)
        case .gif(var content): content.attachment = first; return .gif(content)
        case .voice(var content): content.attachment = first; return .voice(content)
        case .video(var content):
            content.attachment = first
            if replacements.count > 1 { content.cover = replacements[1] }
            return .video(content)
        case .file(var content): content.attachment = first; return .file(content)
        case .custom(let content): return .custom(content.replacingAttachments(replacements))
        default: return self
        }
    }
}

extension MessageContent {
    /// A registered app type as content: `.custom(OrderCard(…))`, the same as `.custom(CustomContent(card))`.
    public static func custom<T: CustomMessageContent>(_ value: T) -> MessageContent { .custom(CustomContent(value)) }

    /// The typed value, when this is a custom content of type `T` (decoded by a registry that knows `T`).
    public func custom<T: CustomMessageContent>(as type: T.Type) -> T? {
        guard case .custom(let content) = self else { return nil }
        return content.as(type)
    }
}
