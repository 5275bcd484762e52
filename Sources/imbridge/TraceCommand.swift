import ArgumentParser
import Foundation
import IMBridgeApp
import IMCore
import IMRelay
import IMStore

/// `imbridge trace --config FILE (--message ID | --conversation [BACKEND:]KIND:ID --at TIME) [--window S] [--json]`:
/// one message's way through the bridge, hop by hop, from the store (docs/operations.md, "Where is my
/// message: `imbridge trace`"). Reads only; a running bridge may share the store.
struct TraceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trace",
        abstract: "Show one message's way through the bridge hop by hop: received, recorded, planned, attempts, held, delivered, echo, dead letter.")

    @Option(name: .long, help: "The bridge configuration (YAML).") var config: String
    @Option(name: .long, help: "A source or target message id.") var message: String?
    @Option(name: .long, help: "A conversation, KIND:ID or BACKEND:KIND:ID (group:g1, wk:group:g1): its messages around --at.")
    var conversation: String?
    @Option(name: .long, help: "With --conversation: the time, ISO 8601 (2026-11-29T10:02:00Z) or milliseconds since 1970.") var at: String?
    @Option(name: .long, help: "With --conversation: seconds either side of --at.") var window: Int = 300
    @Flag(name: .long, help: "Print JSON ({\"messages\": [...]}) instead of the table.") var json = false

    func validate() throws {
        if (message == nil) == (conversation == nil) { throw ValidationError("give --message ID, or --conversation with --at") }
        if conversation != nil && at == nil { throw ValidationError("--conversation needs --at TIME") }
        if let at, MessageTracer.parseTime(at) == nil { throw ValidationError("--at: expected ISO 8601 or milliseconds since 1970, got '\(at)'") }
        if window < 0 { throw ValidationError("--window: expected 0 or more seconds, got \(window)") }
    }

    func run() async throws {
        let loaded = try BridgeConfig.load(path: config)
        let store = try BridgeStore(path: loaded.store)
        defer { store.close() }
        let tracer = MessageTracer(routes: loaded.routes)
        let traces: [MessageTrace]
        if let message {
            traces = try store.read { try tracer.traces(id: message, $0) }
        } else {
            let (backend, ref) = try MessageTracer.parseConversation(conversation ?? "")
            let time = MessageTracer.parseTime(at ?? "") ?? 0
            traces = try store.read { try tracer.traces(conversation: ref, on: backend, at: time, windowMs: Int64(window) * 1000, $0) }
        }
        let output = json ? try MessageTrace.json(traces) + Data("\n".utf8) : Data(MessageTrace.text(traces).utf8)
        FileHandle.standardOutput.write(output)
    }
}
