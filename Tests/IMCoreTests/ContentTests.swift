import IMCore
import Testing

@Suite struct ContentTests {
    static let url = "https://m.example.test/x"

    @Test(arguments: [
        (MessageContent.text("你好"), "你好", "你好"),
        (.image(ImageContent(.remote(url))), "[图片]", "[图片] [照片] [image]"),
        (.gif(GIFContent(.remote(url))), "[GIF动图]", "[GIF] [动图] [表情]"),
        (.voice(VoiceContent(.remote(url))), "[语音]", "[语音] [voice]"),
        (.video(VideoContent(.remote(url))), "[视频]", "[视频] [video]"),
        (.file(FileContent(.remote(url), name: "a.pdf")), "[文件] a.pdf", "[文件] a.pdf"),
        (.location(LocationContent(latitude: 1, longitude: 2, title: "外滩", address: "中山东一路")), "[位置] 外滩", "[位置] 外滩 中山东一路"),
        (.location(LocationContent(latitude: 1, longitude: 2, address: "中山东一路")), "[位置] 中山东一路", "[位置] 中山东一路"),
        (.card(CardContent(userID: "u1", name: "小明")), "[名片] 小明", "[名片] 小明"),
        (.command(CommandContent(name: "typing")), "", ""),
        (.notice(NoticeContent(text: "张三加入了群聊")), "张三加入了群聊", "张三加入了群聊"),
        (.custom(CustomContent(raw: "order", payload: "{}")), "[order]", ""),
        (.unsupported(UnsupportedContent(vendor: "rongcloud", vendorType: "RC:CombineMsg", raw: "{}")), "[不支持的消息]", ""),
    ])
    func digestsAndSearchText(content: MessageContent, digest: String, searchable: String) {
        #expect(content.digest == digest)
        #expect(content.searchableText == searchable)
    }

    @Test func commandsAreTransient() {
        #expect(!MessageContent.command(CommandContent(name: "x")).isPersistent)
        #expect(MessageContent.text("x").isPersistent)
    }

    @Test func validationRefusesEmptyTextAndBadCoordinates() {
        #expect { try MessageContent.text("").validate() } throws: { ($0 as? IMError)?.code == .invalidContent }
        #expect { try MessageContent.location(LocationContent(latitude: 91, longitude: 0)).validate() } throws: {
            ($0 as? IMError)?.code == .invalidContent
        }
    }

    @Test func noticeTemplatesRender() {
        let text = NoticeContent.render(template: "{0}邀请{1}加入群聊", parameters: [["uid": "u1", "name": "张三"], "李四"])
        #expect(text == "张三邀请李四加入群聊")
    }

    @Test func recalledMessagesShowARecallDigest() {
        var message = Message(id: "m1", conversation: .group("g"), sender: "a", sentAt: 1, content: .text("hi"))
        message.edit = EditState(content: .text("hello"), editedAt: 2)
        #expect(message.currentContent == .text("hello"))
        #expect(message.digest == "hello")
        message.recall = RecallState(by: "a", at: 3)
        #expect(message.digest == "[消息已撤回]")
    }
}

@Suite struct AttachmentTests {
    @Test func uploadFlow() throws {
        var attachment = MediaAttachment.local("/tmp/a.jpg", mimeType: "image/jpeg")
        #expect(attachment.needsUpload)
        #expect(attachment.pathForUploading == "/tmp/a.jpg")
        try attachment.markUploaded(url: "https://cdn.test/a.jpg")
        #expect(attachment.transferState == .uploaded)
        #expect(attachment.remoteURL == "https://cdn.test/a.jpg")
        #expect(attachment.pathForUploading == nil)
        #expect { try attachment.markUploaded(url: "x") } throws: { ($0 as? IMError)?.code == .invalidArgument }
    }

    @Test func downloadFlow() throws {
        var attachment = MediaAttachment.remote("https://cdn.test/b.mp3")
        #expect(attachment.needsDownload)
        #expect { try attachment.markUploaded(url: "x") } throws: { ($0 as? IMError)?.code == .invalidArgument }
        try attachment.markDownloaded(to: "/tmp/b.mp3")
        #expect(attachment.transferState == .downloaded)
        #expect(!attachment.needsDownload)
        let moved = attachment.rehosted(at: "https://other.test/b.mp3")
        #expect(moved.needsDownload && moved.localPath == nil && moved.remoteURL == "https://other.test/b.mp3")
    }
}
