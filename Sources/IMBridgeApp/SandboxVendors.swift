import IMSandbox
import JMessage
import NIM
import RongCloud
import WuKong

/// The sandboxes this build knows, by vendor name. Each adapter adds its entry.
public enum SandboxVendors {
    public typealias Factory = @Sendable (SandboxOptions) async throws -> SandboxServer

    public static let factories: [String: Factory] = [
        "jmessage": { try await JMessageSandbox.makeServer($0) },
        "rongcloud": { try RongCloudSandbox.server($0) },
        "wukong": { options in try WuKongSandbox.server(options: options) },
        "nim": { try NIMSandbox.server($0) },
    ]

    public static var names: [String] { factories.keys.sorted() }
}
