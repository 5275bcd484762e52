#if canImport(Testing)
import IMCore
import Testing

/// Parameterized tests over presets (`@Test(arguments: Capabilities.allPresets)`) are named by the
/// vendor (`rongcloud`) instead of the whole value.
extension Capabilities: CustomTestStringConvertible {
    public var testDescription: String { vendor }
}
#endif
