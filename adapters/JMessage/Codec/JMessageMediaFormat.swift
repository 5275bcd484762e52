import Foundation

/// JMessage's `format` strings (`jpg`, `png`, `m4a` …) and the MIME types they stand for.
public enum JMessageMediaFormat {
    public enum Kind: Sendable { case image, voice, file }

    static let table: [(format: String, mime: String)] = [
        ("jpg", "image/jpeg"), ("jpeg", "image/jpeg"), ("png", "image/png"), ("gif", "image/gif"), ("bmp", "image/bmp"),
        ("webp", "image/webp"), ("m4a", "audio/mp4"), ("mp3", "audio/mpeg"), ("amr", "audio/amr"), ("aac", "audio/aac"),
        ("wav", "audio/wav"), ("mp4", "video/mp4"), ("pdf", "application/pdf"),
    ]

    public static func mimeType(for format: String) -> String? {
        let lower = format.lowercased()
        return table.first { $0.format == lower }?.mime
    }

    /// The format for a MIME type, else the URL's extension, else `jpg` for images and `m4a` for voice.
    public static func format(mimeType: String?, url: String, kind: Kind) -> String {
        if let mimeType, let found = table.first(where: { $0.mime == mimeType.lowercased() }) { return found.format }
        let ext = (url.split(separator: "?").first.map(String.init) ?? url).split(separator: ".").last.map { $0.lowercased() }
        if let ext, ext.count <= 4, table.contains(where: { $0.format == ext }) { return ext }
        return kind == .voice ? "m4a" : "jpg"
    }

    /// The upload `type` for a MIME type: image, voice, else file (videos upload as files).
    public static func uploadType(mimeType: String?, fileName: String?) -> String {
        let mime = mimeType?.lowercased() ?? fileName.flatMap { name in
            name.split(separator: ".").last.flatMap { Self.mimeType(for: String($0)) }
        } ?? ""
        if mime.hasPrefix("image/") { return "image" }
        if mime.hasPrefix("audio/") { return "voice" }
        return "file"
    }
}
