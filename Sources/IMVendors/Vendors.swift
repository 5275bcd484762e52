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

    public init(adapter: AdapterDescriptor, sandbox: SandboxDescriptor) {
        self.adapter = adapter
        self.sandbox = sandbox
    }
}

/// The registry: every vendor this build of IMBridge knows, in one list. Config validation, the
/// mappings, `imbridge sandbox`, the lab and the demo all read it. Adding a vendor: its folder under
/// `adapters/`, its two targets in Package.swift, and one line here (docs/architecture.md, "Adding a vendor").
public enum Vendors {
    /// The vendors built into this binary.
    static let builtIn: [Vendor] = [
        Vendor(adapter: WuKongAdapter.descriptor, sandbox: WuKongSandbox.descriptor),
        Vendor(adapter: RongCloudAdapter.descriptor, sandbox: RongCloudSandbox.descriptor),
        Vendor(adapter: NIMAdapter.descriptor, sandbox: NIMSandbox.descriptor),
        Vendor(adapter: JMessageAdapter.descriptor, sandbox: JMessageSandbox.descriptor),
    ]

    /// Vendors a test adds for the task it runs (`Vendors.$extra.withValue([fake]) { … }`), after the
    /// built-in ones: the registry's consumers then know them as they know a built-in vendor.
    @_spi(Testing) @TaskLocal public static var extra: [Vendor] = []

    public static var all: [Vendor] { extra.isEmpty ? builtIn : builtIn + extra }

    public static var names: [String] { all.map(\.name) }

    public static func named(_ name: String) -> Vendor? { all.first { $0.name == name.lowercased() } }
}
