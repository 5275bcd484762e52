import IMAdapterKit
import IMSandbox
import JMessage
import JMessageSandbox
import NIM
import NIMSandbox
import RongCloud
import RongCloudSandbox
import WuKong
import WuKongSandbox

/// One vendor: its adapter and its sandbox.
public struct Vendor: Sendable {
    public var adapter: AdapterDescriptor
    public var sandbox: SandboxDescriptor
    public var name: String { adapter.name }
}

/// The registry: every vendor this build of IMBridge knows, in one list. Config validation, the
/// mappings, `imbridge sandbox`, the lab and the demo all read it. Adding a vendor: its folder under
/// `adapters/`, its two targets in Package.swift, and one line here (docs/architecture.md).
public enum Vendors {
    public static let all: [Vendor] = [
        Vendor(adapter: WuKongAdapter.descriptor, sandbox: WuKongSandbox.descriptor),
        Vendor(adapter: RongCloudAdapter.descriptor, sandbox: RongCloudSandbox.descriptor),
        Vendor(adapter: NIMAdapter.descriptor, sandbox: NIMSandbox.descriptor),
        Vendor(adapter: JMessageAdapter.descriptor, sandbox: JMessageSandbox.descriptor),
    ]

    public static var names: [String] { all.map(\.name) }

    public static func named(_ name: String) -> Vendor? { all.first { $0.name == name.lowercased() } }
}
