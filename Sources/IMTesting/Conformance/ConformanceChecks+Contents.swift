import Foundation
import IMCore

extension ConformanceChecks {
    /// One sample per content kind, its media under `base` (`ConformanceSubject.mediaBaseURL`); each is
    /// sent and read back when the backend carries the kind.
    static func samples(_ base: String) -> [(ContentKind, MessageContent)] {
        [
            (.image, .image(ImageContent(MediaAttachment(remoteURL: base + "p/1.jpg", mimeType: "image/jpeg",
                                                    size: 2048, width: 640, height: 480, transferState: .needsDownload)))),
            (.gif, .gif(GIFContent(MediaAttachment(remoteURL: base + "p/2.gif", size: 4096, width: 120, height: 90,
                                              transferState: .needsDownload)))),
            (.voice, .voice(VoiceContent(MediaAttachment(remoteURL: base + "v/3.aac", size: 1000, durationMs: 3000,
                                                    transferState: .needsDownload)))),
            (.video, .video(VideoContent(MediaAttachment(remoteURL: base + "v/4.mp4", size: 90_000, width: 320,
                                                    height: 240, durationMs: 5000, transferState: .needsDownload)))),
            (.file, .file(FileContent(MediaAttachment(remoteURL: base + "f/5.pdf", size: 1024, fileName: "report.pdf",
                                                 transferState: .needsDownload), name: "report.pdf"))),
            (.location, .location(LocationContent(latitude: 31.2304, longitude: 121.4737, title: "人民广场", address: "上海市黄浦区"))),
            (.card, .card(CardContent(userID: "card_user", name: "小明", avatar: base + "a/6.png"))),
        ]
    }

    /// A sample's media as stored: the URL it was sent with, or — on a backend that keeps media only as its
    /// own uploads (JMessage's `media_id`s) — a reference that downloads to the bytes the URL served
    /// (`ConformanceMedia.bytes`).
    static func expectSameMedia(_ ctx: ConformanceContext, sent: MessageContent, stored: MessageContent) async throws {
        guard let sentURL = sent.attachments.first?.remoteURL else { return }
        let storedURL = stored.attachments.first?.remoteURL
        if storedURL == sentURL { return }
        guard let transfer = ctx.backend as? any MediaTransferring, let attachment = stored.attachments.first, storedURL != nil else {
            throw ConformanceFailure(description: "attachment URL \(storedURL ?? "none") ≠ \(sentURL)")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-conformance-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let downloaded = try await transfer.download(attachment, into: directory)
        let bytes = try downloaded.localPath.map { Array(try Data(contentsOf: URL(fileURLWithPath: $0))) } ?? []
        let path = String(sentURL.dropFirst(ctx.subject.mediaBaseURL.count))
        try ctx.expect(bytes == ConformanceMedia.bytes(path),
                       "the stored attachment \(storedURL!) downloads to \(bytes.count) bytes that are not what \(sentURL) served")
    }

    static let contents: [ConformanceCheck] = samples("").map { kind, _ in
        ConformanceCheck(name: "content.\(kind.rawValue)") { ctx in
            let content = samples(ctx.subject.mediaBaseURL).first { $0.0 == kind }!.1
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
            try await expectSameMedia(ctx, sent: content, stored: stored.content)
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

/// The bytes the content checks' media URLs stand for: what a media host for
/// `ConformanceSubject.mediaBaseURL` serves at each path (`p/1.jpg` …), so that a backend that uploads
/// media itself can be checked by what its upload downloads to.
public enum ConformanceMedia {
    public static func bytes(_ path: String) -> [UInt8] { Array("imbridge conformance sample \(path)\n".utf8) }
}
