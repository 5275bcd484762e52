/// Plain text. Length limits are the backend's (`Capabilities.limits.textMaxLength`).
public struct TextContent: Hashable, Sendable, Codable {
    public var text: String
    public init(_ text: String) { self.text = text }
}

/// A picture. `attachment.width/height` are pixels.
public struct ImageContent: Hashable, Sendable, Codable {
    public var attachment: MediaAttachment
    public init(_ attachment: MediaAttachment) { self.attachment = attachment }
}

/// An animated picture (WuKong type 3, RongCloud `RC:GIFMsg`). The WuKongIM custom-message guide's GIF defaults a missing
/// width/height to 100 when decoding; that default lives in the codec/mapping, not here.
public struct GIFContent: Hashable, Sendable, Codable {
    public var attachment: MediaAttachment
    public init(_ attachment: MediaAttachment) { self.attachment = attachment }
}

/// A voice clip; `attachment.durationMs` is its length.
public struct VoiceContent: Hashable, Sendable, Codable {
    public var attachment: MediaAttachment
    public init(_ attachment: MediaAttachment) { self.attachment = attachment }
}

/// A video with an optional cover picture.
public struct VideoContent: Hashable, Sendable, Codable {
    public var attachment: MediaAttachment
    public var cover: MediaAttachment?
    public init(_ attachment: MediaAttachment, cover: MediaAttachment? = nil) {
        self.attachment = attachment
        self.cover = cover
    }
}

/// A file; `name` is what the user sees.
public struct FileContent: Hashable, Sendable, Codable {
    public var attachment: MediaAttachment
    public var name: String
    public init(_ attachment: MediaAttachment, name: String) {
        self.attachment = attachment
        self.name = name
    }
}

/// A map point. Latitude −90…90, longitude −180…180 (checked by `MessageContent.validate()`).
public struct LocationContent: Hashable, Sendable, Codable {
    public var latitude: Double
    public var longitude: Double
    public var title: String?
    public var address: String?
    /// A map snapshot (URL or base64), where the vendor sends one.
    public var thumbnail: String?
    public init(latitude: Double, longitude: Double, title: String? = nil, address: String? = nil, thumbnail: String? = nil) {
        self.latitude = latitude
        self.longitude = longitude
        self.title = title
        self.address = address
        self.thumbnail = thumbnail
    }
}

/// A contact card: a user recommended to the reader. `phone` and `email` are the WuKongIM custom-message guide's
/// `WKContactCardContent` fields (WuKong type 103); vendors whose card has no such field carry them
/// only as far as `OutgoingMessage.carriedKey` reaches (docs/mappings.md).
public struct CardContent: Hashable, Sendable, Codable {
    public var userID: UserID
    public var name: String
    public var avatar: String?
    public var phone: String?
    public var email: String?
    public init(userID: UserID, name: String, avatar: String? = nil, phone: String? = nil, email: String? = nil) {
        self.userID = userID
        self.name = name
        self.avatar = avatar
        self.phone = phone
        self.email = email
    }
}

/// A signalling message (RongCloud `RC:CmdMsg`, WuKong type 99). Transient: delivered as a
/// `command` event, never stored, never counted as unread.
public struct CommandContent: Hashable, Sendable, Codable {
    public var name: String
    public var data: JSONValue
    public init(name: String, data: JSONValue = .null) {
        self.name = name
        self.data = data
    }
}

/// A tip or system notice shown in the conversation (RongCloud `RC:InfoNtf`, NIM type 10, WuKong
/// 1000–2000 with `{n}` placeholders). `text` is the rendered line; `template` and `parameters` keep
/// the vendor's unrendered form where there is one.
public struct NoticeContent: Hashable, Sendable, Codable {
    public var text: String
    public var template: String?
    public var parameters: [JSONValue]
    /// The vendor's notice subtype (WuKong type number, RongCloud objectName …), when it has one.
    public var noticeType: String?
    public init(text: String, template: String? = nil, parameters: [JSONValue] = [], noticeType: String? = nil) {
        self.text = text
        self.template = template
        self.parameters = parameters
        self.noticeType = noticeType
    }

    /// Renders WuKong-style `{0}`, `{1}` … placeholders from `parameters`.
    public static func render(template: String, parameters: [JSONValue]) -> String {
        var result = template
        for (index, parameter) in parameters.enumerated() {
            let name: String = parameter["name"]?.stringValue ?? parameter.stringValue ?? ""
            result = result.replacingOccurrences(of: "{\(index)}", with: name)
        }
        return result
    }
}

/// A vendor payload with no neutral meaning. `raw` is exactly what the vendor sent (its content JSON
/// or body), `vendorType` its type tag (`"RC:CombineMsg"`, `"11"` …), so a codec writes it back unchanged.
public struct UnsupportedContent: Hashable, Sendable, Codable {
    public var vendor: String
    public var vendorType: String
    public var raw: String
    public init(vendor: String, vendorType: String, raw: String) {
        self.vendor = vendor
        self.vendorType = vendorType
        self.raw = raw
    }
}
