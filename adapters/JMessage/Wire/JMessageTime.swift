import Foundation

/// Report v2 times: `yyyy-MM-dd HH:mm:ss`, read as China Standard Time (UTC+8). The zone is
/// UNCONFIRMED (docs/adapters/jmessage.md); adapter and sandbox agree on UTC+8, the vendor's home zone.
public enum JMessageTime {
    public static let zoneOffsetSeconds: Int64 = 8 * 3600

    /// Formats milliseconds since 1970 (truncated to the second).
    public static func format(ms: Int64) -> String {
        let seconds = floorDiv(ms, 1000) + zoneOffsetSeconds
        let days = floorDiv(seconds, 86_400)
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = civil(fromDays: days)
        return String(format: "%04d-%02d-%02d %02d:%02d:%02d", year, month, day,
                      Int(secondOfDay / 3600), Int(secondOfDay % 3600 / 60), Int(secondOfDay % 60))
    }

    /// Parses `yyyy-MM-dd HH:mm:ss` to milliseconds; nil when malformed.
    public static func parse(_ text: String) -> Int64? {
        let parts = text.trimmingCharacters(in: .whitespaces).split(whereSeparator: { $0 == " " || $0 == "T" })
        guard parts.count == 2 else { return nil }
        let date = parts[0].split(separator: "-").compactMap { Int64($0) }
        let time = parts[1].split(separator: ":").compactMap { Int64($0) }
        guard date.count == 3, time.count == 3, (1...12).contains(date[1]), (1...31).contains(date[2]),
              (0...23).contains(time[0]), (0...59).contains(time[1]), (0...60).contains(time[2]) else { return nil }
        let days = days(fromCivil: date[0], date[1], date[2])
        return (days * 86_400 + time[0] * 3600 + time[1] * 60 + time[2] - zoneOffsetSeconds) * 1000
    }

    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }

    // Howard Hinnant's days-from-civil algorithms.
    static func days(fromCivil y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = floorDiv(y, 400)
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civil(fromDays z0: Int64) -> (Int, Int, Int) {
        let z = z0 + 719_468
        let era = floorDiv(z, 146_097)
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (Int(yoe + era * 400 + (m <= 2 ? 1 : 0)), Int(m), Int(d))
    }
}
