import IMCore

extension ConformanceChecks {
    /// One sample per content kind; each is sent and read back when the backend carries the kind.
    static let samples: [(ContentKind, MessageContent)] = [
        (.image, .image(ImageContent(MediaAttachment(remoteURL: "https://media.example.test/p/1.jpg", mimeType: "image/jpeg",
                                                size: 2048, width: 640, height: 480, transferState: .needsDownload)))),
        (.gif, .gif(GIFContent(MediaAttachment(remoteURL: "https://media.example.test/p/2.gif", size: 4096, width: 120, height: 90,
                                          transferState: .needsDownload)))),
        (.voice, .voice(VoiceContent(MediaAttachment(remoteURL: "https://media.example.test/v/3.aac", size: 1000, durationMs: 3000,
                                                transferState: .needsDownload)))),
        (.video, .video(VideoContent(MediaAttachment(remoteURL: "https://media.example.test/v/4.mp4", size: 90_000, width: 320,
                                                height: 240, durationMs: 5000, transferState: .needsDownload)))),
        (.file, .file(FileContent(MediaAttachment(remoteURL: "https://media.example.test/f/5.pdf", size: 1024, fileName: "report.pdf",
                                             transferState: .needsDownload), name: "report.pdf"))),
        (.location, .location(LocationContent(latitude: 31.2304, longitude: 121.4737, title: "人民广场", address: "上海市黄浦区"))),
        (.card, .card(CardContent(userID: "card_user", name: "小明", avatar: "https://media.example.test/a/6.png"))),
    ]

    static let contents: [ConformanceCheck] = samples.map { kind, content in
        ConformanceCheck(name: "content.\(kind.rawValue)") { ctx in
            guard ctx.capabilities.contentKinds.contains(kind) else {
                try await ctx.expectError(.unsupported, "sending \(kind.rawValue) to a backend without it") {
                    _ = try await ctx.send(content)
                }
                return
            }
            let sent = try await ctx.send(content)
            let stored = try await ctx.stored(sent.id)
            try ctx.expect(stored.content.kind == kind, "\(kind.rawValue) came back as \(stored.content.kind.rawValue): \(stored.content)")
            try ctx.expect(stored.content.digest == content.digest, "digest \(stored.content.digest) ≠ \(content.digest)")
            let urls = stored.content.attachments.compactMap(\.remoteURL)
            try ctx.expect(urls.prefix(1) == content.attachments.compactMap(\.remoteURL).prefix(1),
                           "attachment URL \(urls) ≠ \(content.attachments.compactMap(\.remoteURL))")
        }
    } + [
        ConformanceCheck(name: "content.custom.registered") { ctx in
            guard ctx.capabilities.support(.customContent).isNative else { throw ctx.skip("custom content is not native") }
            guard let registry = ctx.subject.registry else { throw ctx.skip("no registry given") }
            if !registry.isRegistered(ProbeCard.contentType) { try registry.register(ProbeCard.self) }
            let card = ProbeCard(title: "订单 42", amountCents: 1999)
            let sent = try await ctx.send(.custom(CustomContent(card)))
            let stored = try await ctx.stored(sent.id)
            guard case .custom(let custom) = stored.content else {
                throw ConformanceFailure(description: "custom came back as \(stored.content.kind.rawValue)")
            }
            try ctx.expect(custom.as(ProbeCard.self) == card, "custom came back as \(custom.typeName) \(custom.payload)")
            try ctx.expect(stored.content.digest == "[卡片] 订单 42", "digest is \(stored.content.digest)")
        },
        ConformanceCheck(name: "content.custom.invalid") { ctx in
            guard ctx.capabilities.support(.customContent).isNative else { throw ctx.skip("custom content is not native") }
            try await ctx.expectError(.invalidContent, "a card failing validate()") {
                _ = try await ctx.send(.custom(CustomContent(ProbeCard(title: "", amountCents: 1))))
            }
        },
        ConformanceCheck(name: "content.custom.unknown.raw") { ctx in
            guard ctx.capabilities.support(.customContent).isNative else { throw ctx.skip("custom content is not native") }
            let payload = #"{"z":1,"a":"x y","nested":{"k":[1,2.5,"三"]}}"#
            let sent = try await ctx.send(.custom(CustomContent(raw: "imbridge_unknown_probe", payload: payload)))
            let stored = try await ctx.stored(sent.id)
            guard case .custom(let custom) = stored.content else {
                throw ConformanceFailure(description: "unknown custom came back as \(stored.content.kind.rawValue)")
            }
            try ctx.expect(custom.typeName == "imbridge_unknown_probe" && custom.payload == payload,
                           "unknown custom came back as \(custom.typeName) \(custom.payload)")
        },
    ]
}
