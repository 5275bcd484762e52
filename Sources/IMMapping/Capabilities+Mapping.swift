import IMCore

extension Capabilities {
    /// The capabilities with `contentKinds` set to what a vendor's mapping table really carries: every
    /// built-in kind with an entry (a deployment that removes a type from its mapping gets the bridge's
    /// fallback for it), plus `custom`, `unsupported` and `command`, which the adapters carry without a
    /// table entry (NIM sends commands as custom system notifications, not messages).
    public func carrying(_ table: VendorTable) -> Capabilities {
        var copy = self
        var kinds = Set(contentKinds.filter { $0 == .custom || $0 == .unsupported || $0 == .command })
        for entry in table.entries where !entry.decodeOnly {
            if case .builtin(let kind) = entry.target { kinds.insert(kind) }
        }
        copy.contentKinds = kinds
        return copy
    }
}
