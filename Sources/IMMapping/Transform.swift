import Foundation
import IMCore

/// A unit or encoding conversion between a wire value and a neutral value, named in mapping files
/// (`transform: seconds_ceil`). `decode` goes wire → neutral, `encode` neutral → wire; either returns
/// nil when the value cannot be converted (on encode, the entry is then not used for that content).
public enum Transform: Hashable, Sendable {
    /// Wire value as is.
    case none
    /// Wire whole seconds ⇄ neutral milliseconds, rounding up when encoding (voice clips).
    case secondsCeil
    /// Wire whole seconds ⇄ neutral milliseconds, rounding to nearest when encoding.
    case secondsRound
    /// Wire seconds, fractional when not whole (`1.5`) ⇄ neutral milliseconds.
    case secondsFraction
    /// Wire yuan (`12.5`, `"12.50"`) ⇄ neutral cents (integer).
    case yuanCents
    /// Wire base64 text ⇄ neutral UTF-8 text.
    case base64
    /// Wire number ⇄ neutral decimal text (checksums sent as integers).
    case decimalString
    /// Wire JSON text (a string holding JSON) ⇄ neutral JSON value.
    case jsonText
    /// Wire raw base64 ⇄ neutral `data:<mime>;base64,<raw>` URL (inline media such as AMR voice).
    case dataURL(mime: String)

    /// Every name a mapping file may use (`data_url:<mime>` takes a parameter).
    public static let names = ["none", "seconds_ceil", "seconds_round", "seconds_fraction", "yuan_cents", "base64",
                               "decimal_string", "json_text", "data_url:<mime>"]

    public init?(name: String) {
        switch name {
        case "none": self = .none
        case "seconds_ceil": self = .secondsCeil
        case "seconds_round": self = .secondsRound
        case "seconds_fraction": self = .secondsFraction
        case "yuan_cents": self = .yuanCents
        case "base64": self = .base64
        case "decimal_string": self = .decimalString
        case "json_text": self = .jsonText
        default:
            guard name.hasPrefix("data_url:"), name.count > "data_url:".count else { return nil }
            self = .dataURL(mime: String(name.dropFirst("data_url:".count)))
        }
    }

    /// The name a mapping file uses for it.
    public var name: String {
        switch self {
        case .none: "none"
        case .secondsCeil: "seconds_ceil"
        case .secondsRound: "seconds_round"
        case .secondsFraction: "seconds_fraction"
        case .yuanCents: "yuan_cents"
        case .base64: "base64"
        case .decimalString: "decimal_string"
        case .jsonText: "json_text"
        case .dataURL(let mime): "data_url:\(mime)"
        }
    }

    /// Whether the conversion loses precision one way (whole seconds cannot hold milliseconds).
    public var isLossy: Bool {
        switch self {
        case .secondsCeil, .secondsRound: true
        default: false
        }
    }

    public func decode(_ wire: JSONValue) -> JSONValue? {
        switch self {
        case .none: return wire
        case .secondsCeil, .secondsRound, .secondsFraction:
            // A value past what milliseconds in an Int64 hold (or not finite) is not converted: nil, the
            // same as a value of the wrong type, instead of trapping on the conversion.
            guard let seconds = wire.doubleValue, let ms = Int64(exactly: (seconds * 1000).rounded()) else { return nil }
            return .int(ms)
        case .yuanCents:
            guard let text = wire.stringValue, let decimal = Decimal(string: text) else { return nil }
            return .int(NSDecimalNumber(decimal: decimal * 100).rounding(accordingToBehavior: nil).int64Value)
        case .base64:
            return wire.stringValue.flatMap { Data(base64Encoded: $0) }.map { .string(String(decoding: $0, as: UTF8.self)) }
        case .decimalString:
            return wire.stringValue.map(JSONValue.string)
        case .jsonText:
            return wire.stringValue.flatMap { try? JSONValue.parse($0) }
        case .dataURL(let mime):
            return wire.stringValue.map { .string("data:\(mime);base64,\($0)") }
        }
    }

    public func encode(_ neutral: JSONValue) -> JSONValue? {
        switch self {
        case .none: return neutral
        case .secondsCeil: return neutral.int64Value.flatMap { Self.divided($0, by: 1000, adding: 999) }
        case .secondsRound: return neutral.int64Value.flatMap { Self.divided($0, by: 1000, adding: 500) }
        case .secondsFraction:
            return neutral.int64Value.map { $0 % 1000 == 0 ? .int($0 / 1000) : .double(Double($0) / 1000) }
        case .yuanCents:
            guard let cents = neutral.int64Value else { return nil }
            return cents % 100 == 0 ? .int(cents / 100) : .double(Double(cents) / 100)
        case .base64:
            return neutral.stringValue.map { .string(Data($0.utf8).base64EncodedString()) }
        case .decimalString:
            return neutral.int64Value.map(JSONValue.int)
        case .jsonText:
            return .string(neutral.jsonString())
        case .dataURL(let mime):
            let prefix = "data:\(mime);base64,"
            guard let url = neutral.stringValue, url.hasPrefix(prefix) else { return nil }
            return .string(String(url.dropFirst(prefix.count)))
        }
    }

    /// (value + bias) / divisor, or nil where the sum would overflow (a neutral value near Int64.max).
    private static func divided(_ value: Int64, by divisor: Int64, adding bias: Int64) -> JSONValue? {
        let (sum, overflow) = value.addingReportingOverflow(bias)
        return overflow ? nil : .int(sum / divisor)
    }
}
