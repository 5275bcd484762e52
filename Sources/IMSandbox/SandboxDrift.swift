import IMCore

/// A change planted on a stored message behind the bridge's back (`POST /_sandbox/drift`), so that
/// `imbridge verify` can be tested against the drift it reports (docs/verify.md): the kinds of damage a
/// relay can leave on a target, made on purpose.
///
/// Body: `{"op": OP, "id": MESSAGE_ID, …}` with `OP`
/// - `remove`: the message is gone from the store and from history;
/// - `double`: a second stored copy (new id, the next time, same sender and content) is appended;
/// - `text` (`"text"`): the message's text becomes this (an edit that did not land, or a wrong one);
/// - `unrecall`: a recalled message shows as not recalled (a recall that did not land);
/// - `expansion` (`"key"`, `"value"`; a null value removes the key): one expansion value changed.
/// Answers `{"ok":true,"id":…}` (for `double`, the new copy's id); 404 for an unknown message, 400 for a
/// body that is not one of these or an op the vendor's messages cannot show (`unsupported`).
public struct SandboxDrift: Sendable, Hashable {
    public enum Operation: String, Sendable, Hashable, CaseIterable {
        case remove, double, text, unrecall, expansion
    }

    public var operation: Operation
    public var id: String
    public var text: String?
    public var key: String?
    public var value: String?

    public init(_ operation: Operation, id: String, text: String? = nil, key: String? = nil, value: String? = nil) {
        self.operation = operation
        self.id = id
        self.text = text
        self.key = key
        self.value = value
    }

    /// Parses a `POST /_sandbox/drift` body; the reason when it is not one.
    public static func parse(_ body: JSONValue) -> Result<SandboxDrift, DriftError> {
        guard let op = body["op"]?.stringValue, let operation = Operation(rawValue: op) else {
            return .failure(.badRequest("expected \"op\": one of \(Operation.allCases.map(\.rawValue).joined(separator: ", "))"))
        }
        guard let id = body["id"]?.stringValue ?? body["id"]?.int64Value.map(String.init), !id.isEmpty else {
            return .failure(.badRequest("expected \"id\": the stored message's id"))
        }
        var drift = SandboxDrift(operation, id: id, text: body["text"]?.stringValue, key: body["key"]?.stringValue,
                                 value: body["value"]?.stringValue)
        switch operation {
        case .text where drift.text == nil:
            return .failure(.badRequest("\"op\":\"text\" needs \"text\""))
        case .expansion where drift.key == nil:
            return .failure(.badRequest("\"op\":\"expansion\" needs \"key\" (and \"value\", null to remove it)"))
        default:
            if operation != .expansion { drift.value = nil }
            return .success(drift)
        }
    }

    /// Why a drift was not planted.
    public enum DriftError: Error, Sendable, Hashable {
        case badRequest(String)
        case notFound(String)
        case unsupported(String)

        var response: HTTPDriftAnswer {
            switch self {
            case .badRequest(let why): HTTPDriftAnswer(status: 400, error: why)
            case .notFound(let id): HTTPDriftAnswer(status: 404, error: "no stored message \(id)")
            case .unsupported(let why): HTTPDriftAnswer(status: 400, error: "unsupported: \(why)")
            }
        }
    }

    struct HTTPDriftAnswer {
        var status: Int
        var error: String
    }
}
