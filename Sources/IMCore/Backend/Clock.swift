import Foundation

/// Wall-clock time in milliseconds. Everything that reads the time takes one, so tests inject a
/// `TestClock` and never sleep.
public protocol IMClock: Sendable {
    func nowMs() -> Int64
}

public struct SystemClock: IMClock {
    public init() {}
    public func nowMs() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }
}
