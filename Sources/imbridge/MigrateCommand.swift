import ArgumentParser
import IMBridgeApp
import Foundation
import IMCore
import IMRelay
import IMStore
import Synchronization
import IMMigration
import IMOutbox

/// `imbridge migrate --config FILE --from A --to B (--conversation KIND:ID[=KIND:ID] … | --all | --account-file FILE)
/// [--user-prefix P] [--parallel N] [--history-only] [--since ISO8601] [--until ISO8601] [--dry-run] [--report FILE.json]`
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Move an account from one backend to another: users, groups and members, then history (resumable, idempotent).")

    @Option(name: .long, help: "The bridge configuration (YAML): backends and the store.") var config: String
    @Option(name: .long, help: "Source backend name.") var from: String
    @Option(name: .long, help: "Target backend name.") var to: String
    @Option(name: .long, help: "KIND:ID, or KIND:ID=KIND:ID to rename on the target (repeatable).") var conversation: [String] = []
    @Flag(name: .long, help: "Every user, group and conversation the source can enumerate (plus --account-file's).") var all = false
    @Option(name: .customLong("account-file"),
            help: "YAML/JSON with 'users', 'groups' and 'conversations' lists: what to migrate where the source cannot list it.")
    var accountFile: String?
    @Option(name: .long, help: "Only messages sent at or after this time (ISO 8601).") var since: String?
    @Option(name: .long, help: "Only messages sent at or before this time (ISO 8601).") var until: String?
    @Flag(name: .customLong("dry-run"), help: "Write nothing; report what would happen.") var dryRun = false
    @Option(name: .long, help: "Write the report as JSON to this file.") var report: String?
    @Option(name: [.customLong("user-prefix"), .customLong("users-prefix")],
            help: "Puppet prefix for users on the target (default: none, users keep their ids); direct conversations are renamed to the puppets' pair.")
    var userPrefix: String?
    @Option(name: .long, help: "Conversations copied at once (default \(MigrationPlan.defaultParallel)); all share the target's rate limit.")
    var parallel: Int = MigrationPlan.defaultParallel
    @Flag(name: .customLong("history-only"), help: "Copy messages only: no users, no groups (they must exist on the target).")
    var historyOnly = false
    @Option(name: .long, help: "rehost (default: copy attachments into a target that stores files) or link (keep the source's URLs).")
    var media: String = "rehost"

    func validate() throws {
        if conversation.isEmpty && !all && accountFile == nil { throw ValidationError("name at least one --conversation, or --all, or --account-file") }
        if !conversation.isEmpty && all { throw ValidationError("--conversation and --all exclude each other") }
        if !["rehost", "link"].contains(media) { throw ValidationError("--media: expected rehost or link, got '\(media)'") }
        if parallel < 1 { throw ValidationError("--parallel: expected 1 or more, got \(parallel)") }
    }

    func run() async throws {
        let bridge = try await Bridge.open(configPath: config, requireRoutes: false, receivesCallbacks: false)
        guard let source = bridge.backends.first(where: { $0.id.rawValue == from }) else { throw ValidationError("--from: no backend '\(from)' in \(config)") }
        guard let target = bridge.backends.first(where: { $0.id.rawValue == to }) else { throw ValidationError("--to: no backend '\(to)' in \(config)") }
        let users = UserMode.puppet(prefix: userPrefix ?? "")
        var given = AccountScope()
        if let accountFile {
            do {
                given = try AccountScope.load(file: accountFile)
            } catch let error as IMError {
                throw ValidationError("--account-file: \(error.message)")
            }
        }
        var pairs: [(ConversationRef, ConversationRef)] = []
        for text in conversation {
            let sides = text.split(separator: "=", maxSplits: 1).map(String.init)
            do {
                let left = try ConversationRef(parsing: sides[0])
                pairs.append((left, sides.count == 2 ? try ConversationRef(parsing: sides[1]) : MigrationPlan.targetConversation(for: left, users: users)))
            } catch let error as IMError {
                throw ValidationError("--conversation \(text): \(error.message)")
            }
        }
        var scope = AccountScope()
        if all || accountFile != nil {
            scope = try await AccountScope.discover(source, given: given, everything: all)
            for conversation in scope.conversations where !pairs.contains(where: { $0.0 == conversation }) {
                pairs.append((conversation, MigrationPlan.targetConversation(for: conversation, users: users)))
            }
            if all && pairs.isEmpty && scope.users.isEmpty && scope.groups.isEmpty {
                throw ValidationError("--all: \(source.capabilities.vendor) lists nothing here (\(scope.notes.joined(separator: "; "))); "
                                      + "name users and groups with --account-file, or conversations with --conversation")
            }
        }
        var plan = MigrationPlan(source: source.id, target: target.id, conversations: pairs, sinceMs: try Self.parseTime(since, "--since"),
                                 untilMs: try Self.parseTime(until, "--until"), dryRun: dryRun, users: users,
                                 media: media == "link" ? .link : .rehost, account: !historyOnly,
                                 extraUsers: scope.users, extraGroups: scope.groups, parallel: parallel)
        plan.notes = scope.notes
        let display = ProgressDisplay()
        // The configured routes: a recent message the migration records is queued for their other legs
        // too, as the bridge's intake would queue it (docs/migration.md, "Through the outbox").
        let migrator = Migrator(store: bridge.store, source: source, target: target, retry: bridge.config.retry,
                                progress: { display.show($0) }, customFallbacks: bridge.engine.customFallbacks,
                                routes: bridge.config.routes, backends: bridge.backends.map { $0 as any IMBackend },
                                liveWindowMs: bridge.config.catchUp.maxAgeMs)
        let result = try await migrator.run(plan)
        display.finish()
        FileHandle.standardOutput.write(Data((result.summary + "\n").utf8))
        if let report { try result.json().write(to: URL(fileURLWithPath: report)) }
        if result.total.failedTotal > 0 || !(result.account?.failures.isEmpty ?? true) { throw ExitCode(2) }
    }

    static func parseTime(_ text: String?, _ flag: String) throws -> Int64? {
        guard let text else { return nil }
        let formatter = ISO8601DateFormatter()
        for options: ISO8601DateFormatter.Options in [[.withInternetDateTime], [.withInternetDateTime, .withFractionalSeconds], [.withFullDate]] {
            formatter.formatOptions = options
            if let date = formatter.date(from: text) { return Int64(date.timeIntervalSince1970 * 1000) }
        }
        throw ValidationError("\(flag): '\(text)' is not ISO 8601 (e.g. 2026-01-31T08:00:00Z)")
    }
}

/// A one-line progress bar on a terminal (done, rate, ETA when the total is known); a log line every
/// 5 seconds otherwise.
final class ProgressDisplay: Sendable {
    let isTerminal = isatty(STDERR_FILENO) == 1
    let lastLine = Mutex<Date>(.distantPast)

    func show(_ progress: MigrationProgress) {
        let elapsed = max(0.001, Date().timeIntervalSince(progress.startedAt))
        let rate = Double(progress.done) / elapsed
        var text = "\(progress.conversation): \(progress.done)"
        if let total = progress.total, total > 0 {
            let width = 30, filled = min(width, width * progress.done / total)
            let eta = rate > 0 ? Int(Double(total - progress.done) / rate) : 0
            text = "[\(String(repeating: "#", count: filled))\(String(repeating: ".", count: width - filled))] \(text)/\(total) ETA \(eta)s"
        }
        text += String(format: " %.0f msg/s", rate)
        if isTerminal {
            FileHandle.standardError.write(Data("\r\u{1B}[K\(text)".utf8))
        } else {
            let now = Date()
            let due = lastLine.withLock { last -> Bool in
                guard now.timeIntervalSince(last) >= 5 else { return false }
                last = now
                return true
            }
            if due { FileHandle.standardError.write(Data("migrate: \(text)\n".utf8)) }
        }
    }

    func finish() {
        if isTerminal { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
