/// Limits on message expansions, taken from the backend's capabilities.
///
/// RongCloud's figures (the strictest vendor and the default): key ≤ 32 characters of
/// `A-Za-z0-9 + = - _`; value ≤ 4096 characters; ≤ 20 keys per change from a client SDK, ≤ 100 per
/// server API call; ≤ 300 keys on one message.
///
/// `validate` refuses a change **whole** when any key breaks any limit; the error is
/// `expansion_limit_exceeded` with `details["limit"]` (one of `key_empty`, `key_length`, `key_charset`,
/// `value_length`, `keys_per_change`, `keys_per_message`) and `details["key"]` naming the offending key.
public struct ExpansionLimits: Hashable, Sendable, Codable {
    /// Who issues the change: an end user's client SDK, or the app server through the REST API.
    public enum Caller: String, Hashable, Sendable, Codable {
        case client, server
    }

    public var maxKeyLength: Int
    /// Characters allowed in keys besides ASCII letters and digits; nil means any character.
    public var extraKeyCharacters: String?
    public var maxValueLength: Int
    public var maxKeysPerClientChange: Int
    public var maxKeysPerServerCall: Int
    public var maxKeysPerMessage: Int

    public init(maxKeyLength: Int, extraKeyCharacters: String?, maxValueLength: Int,
                maxKeysPerClientChange: Int, maxKeysPerServerCall: Int, maxKeysPerMessage: Int) {
        self.maxKeyLength = maxKeyLength
        self.extraKeyCharacters = extraKeyCharacters
        self.maxValueLength = maxValueLength
        self.maxKeysPerClientChange = maxKeysPerClientChange
        self.maxKeysPerServerCall = maxKeysPerServerCall
        self.maxKeysPerMessage = maxKeysPerMessage
    }

    public static let rongCloud = ExpansionLimits(
        maxKeyLength: 32, extraKeyCharacters: "+=-_", maxValueLength: 4096,
        maxKeysPerClientChange: 20, maxKeysPerServerCall: 100, maxKeysPerMessage: 300)

    public func maxKeysPerChange(for caller: Caller) -> Int {
        caller == .client ? maxKeysPerClientChange : maxKeysPerServerCall
    }

    public func isValidKey(_ key: String) -> Bool {
        guard let extra = extraKeyCharacters else { return true }
        return key.allSatisfy { ($0.isASCII && ($0.isLetter || $0.isNumber)) || extra.contains($0) }
    }

    /// Checks a change against these limits and the message's current state, without applying it.
    public func validate(_ change: ExpansionChange, current: Expansion, caller: Caller) throws {
        func refuse(_ limit: String, _ key: String?, _ what: String) -> IMError {
            var details = ["limit": limit]
            if let key { details["key"] = key }
            return IMError(.expansionLimitExceeded, what, details: details)
        }
        let keys = change.keys
        let perChange = maxKeysPerChange(for: caller)
        if keys.count > perChange {
            let key = keys[perChange]
            throw refuse("keys_per_change", key,
                         "a \(caller.rawValue) change may name at most \(perChange) keys; it names \(keys.count) (first over: '\(key)')")
        }
        if case .remove = change, keys.isEmpty {
            throw IMError(.invalidArgument, "an expansion removal must name at least one key")
        }
        guard case .set(let values) = change else { return }
        if values.isEmpty { throw IMError(.invalidArgument, "an expansion set must name at least one key") }
        for key in keys {
            if key.isEmpty { throw refuse("key_empty", key, "expansion keys must not be empty") }
            if key.count > maxKeyLength {
                throw refuse("key_length", key, "expansion key '\(key)' is \(key.count) characters; the limit is \(maxKeyLength)")
            }
            if !isValidKey(key) {
                throw refuse("key_charset", key, "expansion key '\(key)' may only contain A-Z a-z 0-9 and \(extraKeyCharacters ?? "")")
            }
            if let value = values[key], value.count > maxValueLength {
                throw refuse("value_length", key,
                             "value of expansion key '\(key)' is \(value.count) characters; the limit is \(maxValueLength)")
            }
        }
        var total = current.count
        for key in keys where current[key] == nil {
            total += 1
            if total > maxKeysPerMessage {
                throw refuse("keys_per_message", key,
                             "adding '\(key)' would give the message \(total) expansion keys; the limit is \(maxKeysPerMessage)")
            }
        }
    }
}
