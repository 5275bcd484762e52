/// File extension ⇄ MIME type for the media NIM carries (its bodies name an `ext`, the neutral model a MIME type).
public enum NIMMediaTypes {
    static let table: [(ext: String, mime: String)] = [
        ("jpg", "image/jpeg"), ("jpeg", "image/jpeg"), ("png", "image/png"), ("gif", "image/gif"), ("webp", "image/webp"),
        ("bmp", "image/bmp"), ("heic", "image/heic"),
        ("aac", "audio/aac"), ("mp3", "audio/mpeg"), ("amr", "audio/amr"), ("wav", "audio/wav"), ("m4a", "audio/mp4"),
        ("mp4", "video/mp4"), ("mov", "video/quicktime"), ("3gp", "video/3gpp"),
        ("pdf", "application/pdf"), ("zip", "application/zip"), ("txt", "text/plain"), ("json", "application/json"),
        ("doc", "application/msword"), ("xls", "application/vnd.ms-excel"),
    ]

    /// The MIME type of an extension (case-insensitive); nil when unknown.
    public static func mime(forExtension ext: String) -> String? {
        let lowered = ext.lowercased()
        return table.first { $0.ext == lowered }?.mime
    }

    /// The first extension listed for a MIME type; nil when unknown.
    public static func fileExtension(forMIME mime: String) -> String? {
        let lowered = mime.lowercased()
        return table.first { $0.mime == lowered }?.ext
    }

    /// The extension of a file name (`report.PDF` → `PDF`); nil when it has none.
    public static func fileExtension(ofName name: String) -> String? {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return nil }
        let ext = String(name[name.index(after: dot)...])
        return ext.isEmpty ? nil : ext
    }
}
