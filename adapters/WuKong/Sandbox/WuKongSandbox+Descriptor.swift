import IMSandbox

extension WuKongSandbox {
    /// The WuKongIM sandbox as the registry lists it.
    public static let descriptor = SandboxDescriptor(
        vendor: "wukong", make: { try server(options: $0) },
        labOptions: { endpoint, fast in
            var options = ["webhook_secret": endpoint.webhookSecret]
            if fast { options["notify_interval_ms"] = "20"; options["retry_base_ms"] = "50" }
            return options
        },
        adapterSettings: { endpoint in
            ["im_url": endpoint.baseURL, "webhook_secret": endpoint.webhookSecret, "token_secret": "lab-tokens", "service_uid": "imbridge"]
        })
}
