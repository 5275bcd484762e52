import Foundation
import IMAdapterKit
import IMCore
import Logging

/// The backend's intake without a webhook: polls report v2 (`/v2/messages` by default) over a
/// moving time window, turns new messages into `message` events and pushes each page into an
/// `EventSink`.
///
/// Contract:
/// - **Window**: `[from, min(now, from + 7 days − 1 s)]` (report v2 allows ≤ 7 days), `from` never older
///   than the 60-day retention. Pages are followed with the `cursor`; a cursor older than
///   `cursorTTLMs` (120 s) is not used, and one the server refuses restarts the window from `from`.
/// - **Order and dedupe**: messages are emitted in the order report v2 returns them (ascending send
///   time); a `msgid` already emitted is skipped. After each page `from` moves to
///   `max(from, newest msg_ctime − overlap)`, and after a completed window to `end − overlap`, so a
///   message stored up to `overlapMs` late is still found; ids inside the overlap are remembered.
/// - **Persistence**: each page's events go to `sink.accept`, and only once it returned is the
///   position (`from` + the remembered ids) saved under `jmessage.<backend>.poller`. If `accept`
///   throws, the position does not move and the cursor is dropped, so the next poll fetches the page
///   again from the saved position. A restart resumes from it: nothing accepted is pushed again,
///   nothing after the position is missed. A crash between `accept` and the save repeats that page's
///   events with the same `eventID`s (at-least-once; the bridge's ledger keeps one).
/// - A message that does not convert is set aside with the page (`sink.accept(InboundBatch)`: kept as an
///   inbound dead letter, format `message-json`) and counted in `skipped`; the position moves past it,
///   so it is never fetched again and never holds up the messages after it.
public actor JMessagePoller {
    public struct Position: Codable, Hashable, Sendable {
        /// Milliseconds: where the next window starts.
        public var fromMs: Int64
        /// msgid → msg_ctime of messages already emitted at or after `fromMs` (rounded down to the second).
        public var seen: [Int64: Int64]
    }

    public struct Settings: Sendable {
        public var path: String
        public var pageSize: Int
        public var overlapMs: Int64
        public var cursorTTLMs: Int64
        public var retentionMs: Int64
        /// Where a poller without a saved position starts: `now − startLookbackMs`.
        public var startLookbackMs: Int64
        public init(path: String = "/v2/messages", pageSize: Int = 1000,
                    overlapMs: Int64 = JMessageSettings.defaultPollOverlap.wholeMilliseconds, cursorTTLMs: Int64 = 120_000,
                    retentionMs: Int64 = 60 * 86_400_000, startLookbackMs: Int64 = 0) {
            self.path = path
            self.pageSize = min(max(1, pageSize), 1000)
            self.overlapMs = overlapMs
            self.cursorTTLMs = cursorTTLMs
            self.retentionMs = retentionMs
            self.startLookbackMs = startLookbackMs
        }
    }

    static let windowMs: Int64 = 7 * 86_400_000 - 1000

    let client: JMessageClient
    let codec: JMessageCodec
    let backend: BackendID
    let storage: any CheckpointStorage
    let clock: any IMClock
    let settings: Settings
    var position: Position?
    var cursor: (value: String, obtainedAt: Int64, windowEnd: Int64)?
    public private(set) var skipped = 0
    /// Messages pushed into the sink so far (progress lines).
    public private(set) var delivered = 0
    public private(set) var windowRestarts = 0

    public init(client: JMessageClient, codec: JMessageCodec, backend: BackendID, storage: any CheckpointStorage,
                clock: any IMClock = SystemClock(), settings: Settings = Settings()) {
        self.client = client
        self.codec = codec
        self.backend = backend
        self.storage = storage
        self.clock = clock
        self.settings = settings
    }

    public var checkpointName: String { "jmessage.\(backend.rawValue).poller" }

    /// Fetches one page and pushes its events into `sink`; returns whether more is waiting right now
    /// (a cursor to follow). Throws what `accept` threw, the position unmoved.
    @discardableResult
    public func pollPage(into sink: any EventSink) async throws -> Bool {
        var position = try await loadPosition()
        let now = clock.nowMs()
        var page: JMHistoryPage?
        var windowEnd: Int64
        if let cursor, now - cursor.obtainedAt < settings.cursorTTLMs {
            windowEnd = cursor.windowEnd
            do {
                page = try await client.history(path: settings.path, cursor: cursor.value)
            } catch let error as IMError where !error.isRetryable {
                self.cursor = nil
                windowRestarts += 1
            }
        } else if cursor != nil {
            cursor = nil
            windowRestarts += 1
        }
        if page == nil {
            position.fromMs = max(position.fromMs, now - settings.retentionMs + 60_000)
            windowEnd = min(now, position.fromMs + Self.windowMs)
            page = try await client.history(path: settings.path, count: settings.pageSize, beginMs: position.fromMs, endMs: windowEnd)
        } else {
            windowEnd = cursor!.windowEnd
        }
        guard let page else { return false }
        sink.heard(from: backend)
        var batch = InboundBatch()
        var newest: Int64?
        for wire in page.messages {
            newest = max(newest ?? wire.msgCtime, wire.msgCtime)
            guard position.seen[wire.msgid] == nil else { continue }
            position.seen[wire.msgid] = wire.msgCtime
            batch.convert(backend: backend, key: JMessageCodec.messageEventID(wire.msgid).rawValue, format: JMessageInbound.setAsideFormat,
                          raw: (try? Array(JSONEncoder().encode(wire))) ?? []) {
                [IMEvent(eventID: JMessageCodec.messageEventID(wire.msgid), backend: backend, kind: .message(try codec.decode(wire)))]
            }
        }
        skipped += batch.setAside.count
        if !batch.events.isEmpty || !batch.setAside.isEmpty {
            do {
                if batch.setAside.isEmpty { try await sink.accept(batch.events) } else { try await sink.accept(batch) }
                delivered += batch.events.count
            } catch {
                // Fetched again from the saved position on the next poll.
                cursor = nil
                throw error
            }
        }
        if let next = page.nextCursor {
            cursor = (next, clock.nowMs(), windowEnd)
            if let newest { position.fromMs = max(position.fromMs, newest - settings.overlapMs) }
        } else {
            cursor = nil
            position.fromMs = max(position.fromMs, windowEnd - settings.overlapMs)
        }
        let floor = position.fromMs - position.fromMs % 1000
        position.seen = position.seen.filter { $0.value >= floor }
        try await save(position)
        return cursor != nil || windowEnd < now
    }

    /// Polls pages into `sink` until nothing more is waiting (at most `maxPages`).
    public func pollOnce(into sink: any EventSink, maxPages: Int = 20) async throws {
        for _ in 0..<maxPages {
            if try await !pollPage(into: sink) { return }
        }
    }

    /// Polls into `sink` every `intervalMs` until the task is cancelled; failures (the vendor's or the
    /// sink's) back off up to 30 s.
    ///
    /// Logged under `imbridge.poller.<backend>`: start and stop, each round at debug (messages, position),
    /// a summary at info once a minute when messages came, a failed round at warning (one line per
    /// backoff step) and the recovery after failures.
    public func run(intervalMs: Int64, into sink: any EventSink, logger given: Logger? = nil) async {
        var logger = given ?? Logger(label: "imbridge.poller.\(backend)")
        logger[metadataKey: "backend"] = "\(backend)"
        logger.info("report poller started", metadata: ["interval_ms": "\(intervalMs)", "path": "\(settings.path)"])
        var failures = 0
        var summary = (at: clock.nowMs(), delivered: delivered)
        while !Task.isCancelled {
            let before = delivered
            do {
                try await pollOnce(into: sink)
                if failures > 0 { logger.notice("report poller recovered", metadata: ["failed_rounds": "\(failures)"]) }
                failures = 0
                let from = position.map { "\($0.fromMs)" } ?? "-"
                logger.debug("report poll", metadata: ["messages": "\(delivered - before)", "position_ms": "\(from)"])
                if clock.nowMs() - summary.at >= 60_000 {
                    if delivered > summary.delivered {
                        logger.info("report poller progress", metadata: ["messages": "\(delivered - summary.delivered)", "position_ms": "\(from)",
                                                                          "set_aside_total": "\(skipped)"])
                    }
                    summary = (clock.nowMs(), delivered)
                }
            } catch {
                failures += 1
                if !Task.isCancelled {
                    logger.warning("report poll failed; retrying with backoff",
                                   metadata: ["failed_rounds": "\(failures)", "error": "\(String("\(error)".prefix(300)))"])
                }
            }
            let delay = failures == 0 ? intervalMs : min(30_000, intervalMs << min(failures, 8))
            try? await Task.sleep(nanoseconds: UInt64(max(1, delay)) * 1_000_000)
        }
        logger.info("report poller stopped", metadata: ["messages_total": "\(delivered)"])
    }

    public func currentPosition() async throws -> Position { try await loadPosition() }

    func loadPosition() async throws -> Position {
        if let position { return position }
        let loaded: Position
        if let text = try await storage.checkpoint(named: checkpointName),
           let decoded = try? JSONDecoder().decode(Position.self, from: Data(text.utf8)) {
            loaded = decoded
        } else {
            loaded = Position(fromMs: clock.nowMs() - settings.startLookbackMs, seen: [:])
        }
        position = loaded
        return loaded
    }

    func save(_ position: Position) async throws {
        self.position = position
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try await storage.setCheckpoint(named: checkpointName, to: String(decoding: try encoder.encode(position), as: UTF8.self))
    }
}
