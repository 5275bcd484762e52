import IMCore

/// One vendor's sandbox as the lab, the demo and `imbridge sandbox` see it. Each sandbox target
/// publishes one (`WuKongSandbox.descriptor` …); the registry (`IMVendors`) pairs it with its adapter.
public struct SandboxDescriptor: Sendable {
    /// Credentials and addresses of a running sandbox, for building the adapter settings that talk to it.
    public struct Endpoint: Sendable {
        public var baseURL: String
        public var appKey: String
        public var appSecret: String
        /// The shared secret the sandbox adds to its callbacks, where the vendor has one (WuKong).
        public var webhookSecret: String
        public init(baseURL: String, appKey: String, appSecret: String, webhookSecret: String) {
            self.baseURL = baseURL
            self.appKey = appKey
            self.appSecret = appSecret
            self.webhookSecret = webhookSecret
        }
    }

    /// The adapter name it stands in for (`wukong` …).
    public var vendor: String
    /// Builds the server (not started).
    public var make: @Sendable (SandboxOptions) async throws -> SandboxServer
    /// `--option`s the lab adds: the webhook secret, and with `fast` short callback intervals for tests.
    public var labOptions: @Sendable (_ endpoint: Endpoint, _ fast: Bool) -> [String: String]
    /// The adapter settings (`backends.<name>.*`) that make a backend talk to this running sandbox.
    public var adapterSettings: @Sendable (Endpoint) -> [String: String]

    public init(vendor: String, make: @escaping @Sendable (SandboxOptions) async throws -> SandboxServer,
                labOptions: @escaping @Sendable (Endpoint, Bool) -> [String: String] = { _, _ in [:] },
                adapterSettings: @escaping @Sendable (Endpoint) -> [String: String]) {
        self.vendor = vendor
        self.make = make
        self.labOptions = labOptions
        self.adapterSettings = adapterSettings
    }
}
