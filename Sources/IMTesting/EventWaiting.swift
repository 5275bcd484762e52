import Foundation
import IMCore

extension AsyncStream where Element == IMEvent {
    /// The first event matching `predicate`, or `IMError(.timeout)` when none arrives within `seconds`:
    /// `let edit = try await backend.events().first(within: 2) { if case .edited = $0.kind { true } else { false } }`.
    /// Subscribe (call `events()`) before the action whose event you wait for.
    public func first(within seconds: Double = 5, where predicate: @escaping @Sendable (IMEvent) -> Bool) async throws -> IMEvent {
        try await withThrowingTaskGroup(of: IMEvent?.self) { group in
            group.addTask {
                for await event in self where predicate(event) { return event }
                return nil
            }
            group.addTask {
                try await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
                return nil
            }
            defer { group.cancelAll() }
            if let event = try await group.next() ?? nil { return event }
            throw IMError(.timeout, "no matching event within \(seconds) s")
        }
    }
}
