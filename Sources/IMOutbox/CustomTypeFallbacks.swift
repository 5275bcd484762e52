import IMCore
import IMMapping

/// What the bridge sends to a backend whose vendor cannot carry a declared custom type: the type's
/// `fallback:` text from `mappings/custom/<name>.yaml` (rendered with the content's fields and the
/// message's expansion, plus its link field), instead of the type's wire form.
///
/// Only types declared in the mappings fall back this way; an undeclared custom type still travels in
/// IMBridge's own envelope (apps on the target that know the name can read it).
public struct CustomTypeFallbacks: Sendable {
    public let mappings: MappingSet
    /// Backend id → vendor (the backend's `adapter:`).
    public let vendors: [BackendID: String]

    public init(mappings: MappingSet, vendors: [BackendID: String]) {
        self.mappings = mappings
        self.vendors = vendors
    }

    /// The fallback text for `content` on `target`, or nil when the target's vendor carries it.
    public func text(for content: MessageContent, expansion: [String: String], target: BackendID) -> String? {
        guard case .custom(let custom) = content, let type = mappings.customType(named: custom.typeName),
              let vendor = vendors[target], !type.vendors.contains(vendor) else { return nil }
        return mappings.fallbackText(for: content, expansion: expansion)
    }
}
