import Foundation

/// `multipart/form-data` as the media upload needs it: one file part out, any parts in.
public enum Multipart {
    public struct Part: Sendable, Hashable {
        public var name: String
        public var fileName: String?
        public var contentType: String?
        public var data: [UInt8]
    }

    /// Encodes one file part; returns the body and the `Content-Type` header value.
    public static func encode(fieldName: String, fileName: String, contentType: String, data: [UInt8],
                              boundary: String = "imbridge-\(UUID().uuidString)") -> (body: [UInt8], contentType: String) {
        var body: [UInt8] = []
        let safeName = fileName.replacingOccurrences(of: "\"", with: "_")
        body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(fieldName)\"; filename=\"\(safeName)\"\r\n".utf8)
        body += Array("Content-Type: \(contentType)\r\n\r\n".utf8)
        body += data
        body += Array("\r\n--\(boundary)--\r\n".utf8)
        return (body, "multipart/form-data; boundary=\(boundary)")
    }

    /// The boundary of a `multipart/form-data` Content-Type (quoted or not).
    public static func boundary(of contentType: String?) -> String? {
        guard let contentType, contentType.lowercased().hasPrefix("multipart/") else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, pair[0].lowercased() == "boundary" {
                return pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
        }
        return nil
    }

    /// Parses a body into parts; nil when it is not well-formed.
    public static func parse(_ body: [UInt8], boundary: String) -> [Part]? {
        let delimiter = Array("--\(boundary)".utf8)
        var starts: [Int] = []
        var index = 0
        while let found = find(delimiter, in: body, from: index) {
            starts.append(found)
            index = found + delimiter.count
        }
        guard starts.count >= 2 else { return nil }
        var parts: [Part] = []
        for (start, end) in zip(starts, starts.dropFirst()) {
            var lower = start + delimiter.count
            if body[lower..<min(lower + 2, body.count)].elementsEqual([13, 10]) { lower += 2 }
            var upper = end
            if upper - 2 >= lower, body[(upper - 2)..<upper].elementsEqual([13, 10]) { upper -= 2 }
            guard let headerEnd = find([13, 10, 13, 10], in: body, from: lower), headerEnd <= upper else { return nil }
            let headers = String(decoding: body[lower..<headerEnd], as: UTF8.self)
            var part = Part(name: "", fileName: nil, contentType: nil, data: Array(body[(headerEnd + 4)..<upper]))
            for line in headers.components(separatedBy: "\r\n") {
                let lower = line.lowercased()
                if lower.hasPrefix("content-disposition:") {
                    part.name = parameter("name", in: line) ?? ""
                    part.fileName = parameter("filename", in: line)
                } else if lower.hasPrefix("content-type:") {
                    part.contentType = line.dropFirst("content-type:".count).trimmingCharacters(in: .whitespaces)
                }
            }
            parts.append(part)
        }
        return parts
    }

    static func parameter(_ name: String, in line: String) -> String? {
        for piece in line.split(separator: ";") {
            let pair = piece.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, pair[0].lowercased() == name { return pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
        }
        return nil
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from: Int) -> Int? {
        guard needle.count <= haystack.count, from <= haystack.count - needle.count else { return nil }
        var index = from
        while index <= haystack.count - needle.count {
            if haystack[index] == needle[0], haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
