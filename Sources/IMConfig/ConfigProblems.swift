import IMCore

/// Every problem found in a configuration, in the order found; thrown as one `invalid_argument` whose
/// message has one line per problem. Also the configuration's warnings (a deprecated key), which
/// refuse nothing: the command that loaded the configuration logs each once.
public struct ConfigProblems: Sendable {
    public private(set) var errors: [IMError] = []
    /// `FILE:LINE: retention_hours is deprecated: write `retention: 168h`` lines, in the order found.
    public private(set) var warnings: [String] = []

    public init() {}

    public var count: Int { errors.count }
    public var isEmpty: Bool { errors.isEmpty }

    public mutating func add(_ error: any Error) {
        if let error = error as? IMError {
            // A nested collection (a backend's adapter settings) arrives as one error of several lines.
            if let nested = Int(error.details["problems"] ?? ""), nested > 1 {
                for line in error.message.split(separator: "\n") {
                    errors.append(IMError(error.code, String(line), details: ["key": error.details["key"] ?? ""]))
                }
            } else {
                errors.append(error)
            }
        } else {
            errors.append(IMError(.invalidArgument, "\(error)"))
        }
    }

    public mutating func warn(_ warning: String) {
        if !warnings.contains(warning) { warnings.append(warning) }
    }

    public mutating func merge(_ other: ConfigProblems) {
        errors += other.errors
        for warning in other.warnings { warn(warning) }
    }

    /// Every problem with what `redactor` hides hidden.
    public mutating func redact(with redactor: ConfigRedactor) { errors = errors.map(redactor.redact) }

    /// Runs `body`; a thrown error is recorded and nil returned.
    @discardableResult
    public mutating func attempt<T>(_ body: () throws -> T) -> T? {
        do { return try body() } catch {
            add(error)
            return nil
        }
    }

    /// One line per problem.
    public var message: String { errors.map(\.message).joined(separator: "\n") }

    /// Throws one `invalid_argument` carrying every problem (`details["problems"]` = how many).
    public func throwIfAny() throws {
        guard !errors.isEmpty else { return }
        if errors.count == 1 { throw errors[0] }
        throw IMError(.invalidArgument, message, details: ["problems": String(errors.count)])
    }
}
