import IMAdapterKit
import IMRelay
import IMServer
import IMVendors

extension StatusContext {
    /// What the status page shows of `config`'s backends: each one's adapter, and the values of its
    /// URL settings (as the adapter's settings schema marks them) without user info, query or fragment.
    /// Secret settings are never read here.
    public init(config: BridgeConfig) {
        var backends: [String: StatusBackendInfo] = [:]
        for backend in config.backends {
            let specs = Vendors.named(backend.adapter)?.adapter.settings ?? []
            var endpoints: [String] = []
            for spec in specs {
                guard case .url = spec.kind, let value = backend.settings[spec.key] else { continue }
                endpoints += value.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            }
            backends[backend.name.rawValue] = StatusBackendInfo(adapter: backend.adapter, endpoints: endpoints)
        }
        self.init(backends: backends)
    }
}
