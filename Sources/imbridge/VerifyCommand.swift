import ArgumentParser
import Foundation
import IMBridgeApp
import IMCore
import IMRelay
import IMVerify
import IMOutbox

/// `imbridge verify --config FILE [--route N | --conversation BACKEND:KIND:ID] [--since T] [--until T] [--repair]
/// [--settle SECONDS] [--report FILE.json]` (docs/verify.md).
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Compare both sides of every route: what is missing, doubled, out of order, or differs on the target (exit 0 clean, 1 drift, 2 could not read).")

    @Option(name: .long, help: "The bridge configuration (YAML).") var config: String
    @Option(name: .long, help: "Only this route (its position in 'routes:', from 0).") var route: Int?
    @Option(name: .long, help: "Only this source conversation, BACKEND:KIND:ID (wk:group:g1).") var conversation: String?
    @Option(name: .long, help: "Only source messages sent at or after this time (ISO 8601).") var since: String?
    @Option(name: .long, help: "Only source messages sent at or before this time (ISO 8601).") var until: String?
    @Flag(name: .long, help: "Queue the fixes in the outbox and carry them out (beside a running bridge, which may carry them out instead).")
    var repair = false
    @Option(name: .customLong("repair-timeout"), help: "Seconds to wait for the repairs to be carried out (default 300).")
    var repairTimeout: Int = 300
    @Option(name: .long, help: "Write the report as JSON to this file.") var report: String?
    @Option(name: .long, help: "Seconds: a message the bridge has not taken in yet that was sent this recently is settling, not missing (default 60; 0 judges every message).")
    var settle: Int = Int(VerifyScope.defaultSettleMs / 1000)

    func validate() throws {
        if route != nil && conversation != nil { throw ValidationError("--route and --conversation exclude each other") }
        if let route, route < 0 { throw ValidationError("--route: expected 0 or more, got \(route)") }
        if repairTimeout < 1 { throw ValidationError("--repair-timeout: expected 1 or more seconds, got \(repairTimeout)") }
        if settle < 0 { throw ValidationError("--settle: expected 0 or more seconds, got \(settle)") }
    }

    func run() async throws {
        let bridge: Bridge
        do {
            bridge = try await Bridge.open(configPath: config)
        } catch {
            // Its problems as `check` prints them, but with exit status 2 ("could not read"): 1 means drift.
            _ = ConfigFailure.report(error, config: config)
            throw ExitCode(2)
        }
        defer { bridge.store.close() }
        if let route, route >= bridge.config.routes.count {
            throw ValidationError("--route: \(config) has \(bridge.config.routes.count) route(s), numbered from 0")
        }
        var scope = VerifyScope(route: route, sinceMs: try MigrateCommand.parseTime(since, "--since"),
                                untilMs: try MigrateCommand.parseTime(until, "--until"), settleMs: Int64(settle) * 1000)
        if let since = scope.sinceMs, let until = scope.untilMs, since > until {
            throw ValidationError("--since \(self.since ?? "") is after --until \(self.until ?? "")")
        }
        if let conversation {
            let parts = conversation.split(separator: ":", maxSplits: 1).map(String.init)
            guard parts.count == 2, bridge.backends.contains(where: { $0.id.rawValue == parts[0] }) else {
                throw ValidationError("--conversation: expected BACKEND:KIND:ID with a backend of \(config), got '\(conversation)'")
            }
            do {
                scope.conversation = (BackendID(parts[0]), try ConversationRef(parsing: parts[1]))
            } catch let error as IMError {
                throw ValidationError("--conversation \(conversation): \(error.message)")
            }
            if let named = scope.conversation, RouteTable(bridge.config.routes).legs(from: named.backend, conversation: named.conversation).isEmpty {
                throw ValidationError("--conversation: no route of \(config) relays \(conversation)")
            }
        }
        let verifier = Verifier(store: bridge.store, backends: bridge.backends.map { $0 as any IMBackend }, routes: bridge.config.routes,
                                customFallbacks: bridge.engine.customFallbacks)
        let terminal = isatty(STDERR_FILENO) == 1
        var result: VerifyReport
        do {
            result = try await verifier.run(scope) { done, total in
                if terminal { FileHandle.standardError.write(Data("\r\u{1B}[Kverify: \(done)/\(total) conversations".utf8)) }
            }
            if terminal { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
            if repair && result.driftCount > 0 {
                try await verifier.repair(&result, retry: bridge.config.retry, timeoutMs: Int64(repairTimeout) * 1000)
            }
        } catch {
            FileHandle.standardError.write(Data("imbridge verify: the store could not be read or written: \(Redaction.text("\(error)"))\n".utf8))
            throw ExitCode(2)
        }
        FileHandle.standardOutput.write(Data((result.table + "\n").utf8))
        if let report { try result.json().write(to: URL(fileURLWithPath: report)) }
        if result.exitCode != 0 { throw ExitCode(result.exitCode) }
    }
}
