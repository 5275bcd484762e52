import IMCore
import IMRelay
import IMStore
import JMessage

/// `adapter: jmessage` settings (see docs/adapters/jmessage.md):
/// `app_key`, `master_secret`, `admin` (required); `api_url`, `report_url`, `admin_password`,
/// `poll_interval_ms` (default 2000; `0` turns the poller off), `poll_overlap_ms` (default 5000),
/// `routing_push` (`true`: the backend also receives the paid routing push at `/callbacks/<name>`).
enum JMessageBackendFactory {
    static func make(_ config: BackendConfig, _ context: BackendContext) async throws -> any IMBackend {
        func int(_ key: String, _ fallback: Int64) throws -> Int64 {
            guard let text = config.settings[key] else { return fallback }
            guard let value = Int64(text), value >= 0 else { throw config.error(key, "must be a non-negative integer") }
            return value
        }
        let jm = JMessageConfig(appKey: try config.require("app_key"), masterSecret: try config.require("master_secret"),
                                apiBaseURL: config.settings["api_url"] ?? "https://api.im.jpush.cn",
                                reportBaseURL: config.settings["report_url"] ?? "https://report.im.jpush.cn",
                                admin: try config.require("admin"), adminPassword: config.settings["admin_password"])
        let push = ["true", "yes", "1"].contains(config.settings["routing_push"]?.lowercased() ?? "false")
        let interval = try int("poll_interval_ms", 2000)
        let backend = JMessageBackend(id: config.name, config: jm, registry: context.registry,
                                      checkpoints: StoreCheckpoints(store: context.store, leadership: context.leadership),
                                      pollerSettings: .init(overlapMs: try int("poll_overlap_ms", 5000)),
                                      mapping: context.mappings.table("jmessage"))
        if !context.validateOnly { try await backend.start(pollIntervalMs: push || interval == 0 ? nil : interval) }
        return push ? JMessagePushBackend(backend) : backend
    }
}

/// The poller's position in the bridge store's checkpoints table. With several instances on one store,
/// only the leader polls: reading or writing the position waits until this instance is the leader (an
/// instance that lost the lead finishes at most the page in hand; the ledger dedupes what both fetched).
struct StoreCheckpoints: CheckpointStorage {
    let store: BridgeStore
    var leadership: Leadership? = nil
    func checkpoint(named name: String) async throws -> String? {
        try await leadership?.waitUntilLeader()
        return try store.read { try $0.checkpoint(name) }
    }
    func setCheckpoint(named name: String, to value: String) async throws {
        try await leadership?.waitUntilLeader()
        try store.transaction { try $0.setCheckpoint(name, value, at: SystemClock().nowMs()) }
    }
}
