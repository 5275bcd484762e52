import IMCore

extension RongCloudContentCodec {
    /// Encodes a neutral content for the wire (see the type's mapping).
    ///
    /// - `leftovers` are the fields kept from a RongCloud decode (nil for a message from elsewhere);
    ///   they are merged back under the mapped fields, so a round trip is exact.
    /// - Media must already have a remote URL: the Server API has no upload, so an attachment in
    ///   `needsUpload` is refused with `invalid_argument`.
    /// - A reply is carried natively only on text (`RC:ReferenceMsg` quotes with a text body); other
    ///   contents are sent without the quote.
    /// - `.unsupported` from another vendor cannot be carried and is refused with `unsupported`.
    public func encode(_ content: MessageContent, mentions: Mentions = Mentions(), reply: ReplyRef? = nil,
                       leftovers: [String: JSONValue]? = nil) throws -> RongCloudWireContent {
        var object = ContentObject()
        let objectName: String
        switch content {
        case .text(let text):
            object.set("content", text.text)
            if let reply {
                objectName = RCObjectName.reference
                object.set("referMsgUid", reply.messageID.rawValue)
                object.set("referMsgUserId", reply.sender?.rawValue)
                if leftovers?["referMsg"] == nil {
                    object.set("objName", RCObjectName.text)
                    object["referMsg"] = .object(["content": .string(reply.digest)])
                }
            } else {
                objectName = RCObjectName.text
            }
        case .image(let image):
            objectName = RCObjectName.image
            object.set("imageUri", try Self.url(image.attachment, objectName))
            object.set("content", image.attachment.thumbnail)
        case .gif(let gif):
            objectName = RCObjectName.gif
            object.set("remoteUrl", try Self.url(gif.attachment, objectName))
            object.set("gifDataSize", gif.attachment.size)
            object.set("width", gif.attachment.width)
            object.set("height", gif.attachment.height)
        case .voice(let voice):
            let url = try Self.url(voice.attachment, RCObjectName.hqVoice)
            if url.hasPrefix(Self.amrDataURLPrefix) {
                objectName = RCObjectName.voice
                object.set("content", String(url.dropFirst(Self.amrDataURLPrefix.count)))
            } else {
                objectName = RCObjectName.hqVoice
                object.set("remoteUrl", url)
            }
            object.set("duration", voice.attachment.durationMs.map(Self.seconds))
        case .video(let video):
            objectName = RCObjectName.sight
            object.set("sightUrl", try Self.url(video.attachment, objectName))
            object.set("content", video.attachment.thumbnail ?? video.cover?.thumbnail)
            object.set("duration", video.attachment.durationMs.map(Self.seconds))
            object.set("size", video.attachment.size)
            object.set("name", video.attachment.fileName)
        case .file(let file):
            objectName = RCObjectName.file
            object.set("name", file.name)
            object.set("size", file.attachment.size)
            object.set("fileUrl", try Self.url(file.attachment, objectName))
            if leftovers == nil, let dot = file.name.lastIndex(of: "."), file.name.index(after: dot) < file.name.endIndex {
                object.set("type", String(file.name[file.name.index(after: dot)...]))
            }
        case .location(let location):
            objectName = RCObjectName.location
            object.set("latitude", location.latitude)
            object.set("longitude", location.longitude)
            object.set("poi", location.title ?? location.address)
            object.set("content", location.thumbnail ?? (leftovers == nil ? "" : nil))
        case .card(let card):
            objectName = RCObjectName.card
            object.set("userId", card.userID.rawValue)
            object.set("name", card.name)
            object.set("portraitUri", card.avatar)
        case .command(let command):
            objectName = RCObjectName.command
            object.set("name", command.name)
            if command.data != .null { object["data"] = command.data }
        case .notice(let notice):
            if notice.noticeType == RCObjectName.recallNotification, let leftovers {
                objectName = RCObjectName.recallNotification
                object.merge(leftovers)
                return RongCloudWireContent(objectName: objectName, content: object.json)
            }
            objectName = RCObjectName.infoNotification
            object.set("message", notice.text)
        case .custom(let custom):
            let name = objectNames[custom.typeName] ?? custom.typeName
            try Self.checkCustomName(name)
            return RongCloudWireContent(objectName: name, content: custom.payload)
        case .unsupported(let unsupported):
            guard unsupported.vendor == Self.vendor else {
                throw IMError(.unsupported, "a \(unsupported.vendor) '\(unsupported.vendorType)' payload cannot be sent to RongCloud",
                              details: ["kind": "unsupported"])
            }
            return RongCloudWireContent(objectName: unsupported.vendorType, content: unsupported.raw)
        }
        if !mentions.isEmpty {
            var info: [String: JSONValue] = ["type": .int(mentions.all ? 1 : 2)]
            if !mentions.users.isEmpty { info["userIdList"] = .array(mentions.users.map { .string($0.rawValue) }) }
            object["mentionedInfo"] = .object(info)
        }
        if let leftovers { object.merge(leftovers) }
        return RongCloudWireContent(objectName: objectName, content: object.json)
    }

    /// A custom objectName must be 1…32 characters and outside the vendor's `RC:` namespace.
    public static func checkCustomName(_ name: String) throws {
        guard !name.isEmpty, name.count <= RCObjectName.maxLength, !RCObjectName.isBuiltIn(name) else {
            throw IMError(.invalidArgument, "custom objectName '\(name)' must be 1…\(RCObjectName.maxLength) characters and not start with RC:",
                          details: ["field": "objectName"])
        }
    }

    private static func url(_ attachment: MediaAttachment, _ objectName: String) throws -> String {
        guard let url = attachment.remoteURL, !url.isEmpty else {
            throw IMError(.invalidArgument, "\(objectName) needs a remote URL: upload the attachment first (the Server API has no upload)",
                          details: ["field": "attachment"])
        }
        return url
    }

    /// Milliseconds to whole seconds, rounded to nearest (the vendor counts seconds).
    static func seconds(_ ms: Int64) -> Int64 { (ms + 500) / 1000 }
}
