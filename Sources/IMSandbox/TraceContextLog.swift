import Foundation
import IMCore
import IMHTTP
import Synchronization

/// The W3C trace context of the vendor requests a sandbox received (`GET /_sandbox/traceparents`): which
/// `traceparent` header each request carried (nil: none), the last `capacity` requests, oldest first. A
/// test joins a vendor call to the bridge's span that made it (docs/operations.md, "Tracing").
public final class TraceContextLog: Sendable {
    public struct Entry: Sendable {
        public let method: String
        public let path: String
        public let traceparent: String?
    }

    private let entries = Mutex<[Entry]>([])
    private let capacity: Int

    public init(capacity: Int = 500) { self.capacity = capacity }

    func note(_ request: HTTPRequestData) {
        let header = request.header("traceparent")
        let entry = Entry(method: request.method, path: request.normalizedPath, traceparent: header)
        entries.withLock {
            $0.append(entry)
            if $0.count > capacity { $0.removeFirst($0.count - capacity) }
        }
    }

    public var all: [Entry] { entries.withLock { $0 } }

    var json: JSONValue {
        .object(["requests": .array(all.map { entry in
            .object(["method": .string(entry.method), "path": .string(entry.path), "traceparent": entry.traceparent.map(JSONValue.string) ?? .null])
        })])
    }
}
