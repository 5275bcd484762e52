import IMCore

/// The custom content type the conformance suite sends: a small card with a title, an amount in cents
/// and an optional picture. `validate()` refuses an empty title.
public struct ProbeCard: CustomMessageContent {
    public static let contentType = "imbridge_probe_card"
    public var title: String
    public var amountCents: Int
    public var picture: MediaAttachment?

    public init(title: String, amountCents: Int, picture: MediaAttachment? = nil) {
        self.title = title
        self.amountCents = amountCents
        self.picture = picture
    }

    public var digest: String { "[卡片] \(title)" }
    public var searchableText: String { "[卡片] \(title)" }
    public func validate() throws {
        if title.isEmpty { throw IMError(.invalidContent, "a probe card needs a title") }
    }
    public var attachments: [MediaAttachment] { picture.map { [$0] } ?? [] }
    public func replacingAttachments(_ attachments: [MediaAttachment]) -> ProbeCard {
        var copy = self
        copy.picture = attachments.first
        return copy
    }
}
