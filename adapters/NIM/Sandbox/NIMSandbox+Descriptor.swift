import IMSandbox
import NIM

extension NIMSandbox {
    /// The NIM sandbox as the registry lists it.
    public static let descriptor = SandboxDescriptor(
        vendor: "nim", make: { try server($0) },
        labOptions: { _, fast in fast ? ["callback_retry_ms": "50"] : [:] },
        adapterSettings: { endpoint in
            ["api_url": endpoint.baseURL, "app_key": endpoint.appKey, "app_secret": endpoint.appSecret, "team_query_accid": "imbridge"]
        })
}
