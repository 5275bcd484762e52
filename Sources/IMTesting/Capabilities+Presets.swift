// Each vendor's preset lives beside its adapter, in a target of its own that depends on IMCore only
// (adapters/<Vendor>/Facts; docs/architecture.md). The kit links those targets, not the adapters, and
// re-exports them: `import IMTesting` is enough to write `MemoryBackend(capabilities: .rongCloud)`.
@_exported import JMessageFacts
@_exported import NIMFacts
@_exported import RongCloudFacts
@_exported import WuKongFacts
import IMCore

extension Capabilities {
    /// Every vendor's preset, in the registry's order (`Vendors.all`; each adapter's descriptor carries its
    /// own, and `FifthVendorTests` checks the two lists agree).
    public static let allPresets: [Capabilities] = [.wukong, .rongCloud, .nim, .jMessage]

    /// The preset whose `vendor` is `name` (the adapter's name, any case).
    public static func preset(named name: String) -> Capabilities? {
        allPresets.first { $0.vendor == name.lowercased() }
    }
}
