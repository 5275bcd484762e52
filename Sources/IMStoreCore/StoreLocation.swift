import Foundation
import IMCore

/// The `store:` setting, parsed. A value starting with `postgres://` or `postgresql://` selects
/// PostgreSQL: `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?schema=NAME&tls=disable]`; anything
/// else is the path of an SQLite file. The password may be left out of the URL and given in the
/// environment variable `IMBRIDGE_STORE_PASSWORD` (the URL's wins). `redacted` never shows it.
public struct StoreLocation: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable { case sqlite, postgres }
    public static let passwordVariable = "IMBRIDGE_STORE_PASSWORD"

    public var kind: Kind
    /// SQLite: the file.
    public var path: String = ""
    public var host = "127.0.0.1"
    public var port = 5432
    public var user = ""
    public var password: String?
    public var database = ""
    /// PostgreSQL schema holding the tables (default `public`; created when missing).
    public var schema: String?

    public init(parsing text: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        let lower = text.lowercased()
        let safe = Self.redact(text)
        guard lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://") else {
            // A URL that is not quite one (`postgres:/…`, `postgresql:user:pw@…`, another scheme) is not
            // taken for a file name: its error would print it, password and all.
            if lower.hasPrefix("postgres:") || lower.hasPrefix("postgresql:") || lower.hasPrefix("postgres/") || text.contains("://") {
                throw IMError(.invalidArgument, "store: expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE or the path of an SQLite file, got '\(safe)'")
            }
            kind = .sqlite
            path = text
            return
        }
        kind = .postgres
        guard text.filter({ $0 == "@" }).count <= 1 else {
            throw IMError(.invalidArgument, "store: the URL has more than one '@' (write an '@' in the user or password as %40): '\(safe)'")
        }
        guard let url = URLComponents(string: text), let host = url.host, !host.isEmpty else {
            throw IMError(.invalidArgument, "store: expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE, got '\(safe)'")
        }
        guard url.fragment == nil else {
            throw IMError(.invalidArgument, "store: the URL has a fragment (#…; write a '#' in the password as %23): '\(safe)'")
        }
        // `percentEncoded…`: the user and password as written, decoded here once (`user`/`password` of
        // URLComponents are decoded already: decoding those again read `%2541` as `A`).
        guard let user = url.percentEncodedUser.map(Self.decodedOnce), !user.isEmpty else {
            throw IMError(.invalidArgument, "store: the URL names no user: '\(safe)'")
        }
        let database = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        guard !database.isEmpty else { throw IMError(.invalidArgument, "store: the URL names no database: '\(safe)'") }
        self.host = host
        self.port = url.port ?? 5432
        self.user = user
        self.database = database
        self.password = url.percentEncodedPassword.map(Self.decodedOnce) ?? environment[Self.passwordVariable]
        for item in url.queryItems ?? [] {
            switch item.name {
            case "schema":
                guard let value = item.value, value.range(of: "^[A-Za-z_][A-Za-z0-9_]{0,62}$", options: .regularExpression) != nil else {
                    throw IMError(.invalidArgument, "store: schema must be a plain identifier: '\(safe)'")
                }
                schema = value
            case "tls", "sslmode":
                guard item.value == "disable" else {
                    throw IMError(.invalidArgument, "store: only \(item.name)=disable is supported (loopback or a trusted network): '\(safe)'")
                }
            default:
                throw IMError(.invalidArgument, "store: unknown URL parameter '\(item.name)' in '\(safe)'")
            }
        }
    }

    /// `text` with its `%XX` escapes decoded, once (a `%` not followed by two hex digits stays as written).
    static func decodedOnce(_ text: String) -> String {
        text.removingPercentEncoding ?? text
    }

    /// For an SQLite store, why the bridge could not write it, checked without creating anything: the
    /// file must be writable when it exists, and its directory must exist and be writable (SQLite
    /// creates the file and its `-wal`/`-shm` sidecars there). Nil when it can (and for PostgreSQL,
    /// which is checked by connecting).
    public func accessProblem() -> String? {
        guard kind == .sqlite else { return nil }
        let file = URL(fileURLWithPath: path)
        let directory = file.deletingLastPathComponent().path
        // As messages show them (a path with `@` may be a URL written wrong).
        let shownDirectory = Self.redact(directory), shownPath = Self.redact(path)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) else {
            return "directory \(shownDirectory) does not exist"
        }
        guard isDirectory.boolValue else { return "\(shownDirectory) is not a directory" }
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            if isDirectory.boolValue { return "\(shownPath) is a directory, not an SQLite file" }
            if access(path, R_OK | W_OK) != 0 { return "\(shownPath) is not readable and writable by this user" }
        }
        if access(directory, W_OK | X_OK) != 0 {
            return "directory \(shownDirectory) is not writable by this user (SQLite keeps its -wal and -shm files next to the store)"
        }
        return nil
    }

    /// Printable: the PostgreSQL password replaced by `***`.
    public var redacted: String {
        switch kind {
        case .sqlite: return path
        case .postgres:
            var text = "postgres://\(user)\(password == nil ? "" : ":***")@\(host):\(port)/\(database)"
            if let schema { text += "?schema=\(schema)" }
            return text
        }
    }

    public var description: String { redacted }

    /// The query parameters whose values `redact` shows: those the URL may carry (every other value,
    /// `password=` and `sslpassword=` among them, is `***`).
    public static let shownParameters: Set<String> = ["schema", "tls", "sslmode"]

    /// `text` (a `store:` value, well-formed or not) as errors and logs may show it: the password of
    /// `scheme://user:password@` (up to the last `@`: a password may hold an unencoded `@`), the
    /// values of query parameters other than `schema`, `tls` and `sslmode`, and a fragment replaced by
    /// `***`; see `Redaction.url`. An SQLite path without `@` or `?` comes back as it is.
    public static func redact(_ text: String) -> String {
        guard text.contains("@") || text.contains("://") || text.contains("?") || text.contains("#") else { return text }
        return Redaction.url(text, showingParameters: shownParameters)
    }
}
