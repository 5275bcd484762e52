import JMessage
import IMSandbox

extension JMessageSandbox {
    /// The JMessage sandbox as the registry lists it.
    public static let descriptor = SandboxDescriptor(
        vendor: "jmessage", make: { try await makeServer($0) },
        adapterSettings: { endpoint in
            ["api_url": endpoint.baseURL, "report_url": endpoint.baseURL, "app_key": endpoint.appKey,
             "master_secret": endpoint.appSecret, "admin": "bridge_admin", "admin_password": "lab-admin-password",
             "poll_interval": "200ms"]
        })
}
