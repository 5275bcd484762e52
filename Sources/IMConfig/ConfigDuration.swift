import IMCore

/// A length of time as `bridge.yaml` writes it: a whole number and a unit, `250ms`, `10s`, `5m`, `24h`,
/// `7d`, with nothing between them. A bare number has no unit and is not a duration; neither is a sign,
/// a space or a fraction (docs/configuration.md, "Durations").
public struct ConfigDuration: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The units a duration may carry, smallest first.
    public enum Unit: String, CaseIterable, Sendable {
        case milliseconds = "ms", seconds = "s", minutes = "m", hours = "h", days = "d"

        public var milliseconds: Int64 {
            switch self {
            case .milliseconds: 1
            case .seconds: 1000
            case .minutes: 60_000
            case .hours: 3_600_000
            case .days: 86_400_000
            }
        }
    }

    public var milliseconds: Int64

    public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    public init(_ value: Int64, _ unit: Unit) { milliseconds = value * unit.milliseconds }

    public static func milliseconds(_ value: Int64) -> ConfigDuration { ConfigDuration(value, .milliseconds) }
    public static func seconds(_ value: Int64) -> ConfigDuration { ConfigDuration(value, .seconds) }
    public static func minutes(_ value: Int64) -> ConfigDuration { ConfigDuration(value, .minutes) }
    public static func hours(_ value: Int64) -> ConfigDuration { ConfigDuration(value, .hours) }
    public static func days(_ value: Int64) -> ConfigDuration { ConfigDuration(value, .days) }
    public static let zero = ConfigDuration(milliseconds: 0)

    /// `text` as a duration (`250ms`, `10s`, `5m`, `24h`, `7d`); nil for anything else, a bare number included.
    public init?(_ text: String) {
        // The longest suffix first: `ms` before `m` and `s`.
        let units = Unit.allCases.sorted { $0.rawValue.count > $1.rawValue.count }
        guard let unit = units.first(where: { text.hasSuffix($0.rawValue) }) else { return nil }
        let digits = text.dropLast(unit.rawValue.count)
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int64(digits) else { return nil }
        let (ms, overflow) = value.multipliedReportingOverflow(by: unit.milliseconds)
        guard !overflow else { return nil }
        milliseconds = ms
    }

    /// The value in the largest unit that holds it exactly (`7d`, `90m`, `1500ms`; `0s` for zero):
    /// what `bridge.yaml` would accept back.
    public var description: String {
        guard milliseconds != 0 else { return "0s" }
        let unit = Unit.allCases.last { milliseconds % $0.milliseconds == 0 } ?? .milliseconds
        return "\(milliseconds / unit.milliseconds)\(unit.rawValue)"
    }

    /// The same length as Swift's `Duration`.
    public var duration: Duration { .milliseconds(milliseconds) }

    public static func < (lhs: ConfigDuration, rhs: ConfigDuration) -> Bool { lhs.milliseconds < rhs.milliseconds }

    /// What every duration error says it expected.
    public static let syntax = "a duration such as 250ms, 10s, 5m, 24h or 7d"

    /// A number of `unit`s as a deprecated key wrote it (`retention_hours: 168`; with `fractions`,
    /// `refresh_minutes: 0.5`); nil when `text` is not such a number or overflows.
    public static func legacy(_ text: String, _ unit: Unit, fractions: Bool = false) -> ConfigDuration? {
        if let whole = Int64(text) {
            let (ms, overflow) = whole.multipliedReportingOverflow(by: unit.milliseconds)
            return overflow ? nil : ConfigDuration(milliseconds: ms)
        }
        guard fractions, let number = Double(text), number.isFinite, abs(number) < 1e12 else { return nil }
        return ConfigDuration(milliseconds: Int64((number * Double(unit.milliseconds)).rounded()))
    }

    /// How the value a deprecated key wrote as `text` (in `unit`) is written now: `168h` (the old unit
    /// when the number is whole), else in the largest unit that holds it; for a value from the
    /// environment (`raw`, the scalar as written), `${NAME}` with the unit appended, which reads the
    /// same variable without showing it.
    public static func rewritten(_ text: String, unit: Unit, value: ConfigDuration, raw substitution: String?) -> String {
        if let substitution { return substitution + unit.rawValue }
        if let whole = Int64(text), whole != 0 { return "\(whole)\(unit.rawValue)" }
        return value.description
    }
}

/// The values a duration setting accepts: from `minimum` to `maximum`, and `0` when `zero` says what it
/// means (`"off"`, `"keeps everything"` …). The one place duration range errors are worded.
public struct DurationRange: Sendable {
    public var minimum: ConfigDuration
    public var maximum: ConfigDuration?
    /// What `0` means where it is allowed below `minimum`; nil: `0` is refused like any value below it.
    public var zero: String?

    public init(minimum: ConfigDuration, maximum: ConfigDuration? = nil, zero: String? = nil) {
        self.minimum = minimum
        self.maximum = maximum
        self.zero = zero
    }

    /// Any positive duration.
    public static let positive = DurationRange(minimum: .milliseconds(1))

    public func contains(_ value: ConfigDuration) -> Bool {
        if value == .zero, zero != nil { return true }
        return value >= minimum && maximum.map { value <= $0 } ?? true
    }

    /// `from 1s to 1h`, `of at least 300ms`, with `, or 0s (off)` when zero has a meaning.
    public var expected: String {
        var text = maximum.map { "a duration from \(minimum) to \($0)" } ?? "a duration of at least \(minimum)"
        if let zero { text += ", or 0s (\(zero))" }
        return text
    }
}
