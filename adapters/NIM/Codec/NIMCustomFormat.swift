import IMCore

/// How a type-100 body (the string `NIMCustomAttachment.encodeAttachment` produces) names its app type.
///
/// NIM treats the custom body as opaque JSON; one app-registered decoder sees every custom message, so
/// apps embed their own discriminator (the NIM custom-message guide). This adapter reads the common envelope
/// `{"<typeKey>": <type>, "<dataKey>": <payload>}`:
/// - the type value (string or number) becomes the neutral `typeName`, through `aliases` when the app
///   uses numbers (`["1": "order_card"]`), else its text as is;
/// - the `data` value's exact text is the payload the `ContentRegistry` decodes;
/// - a body without that envelope (the seed's `{"title":…,"subTitle":…}`) is carried whole under
///   `untypedName`, so it survives untouched.
/// Encoding is the reverse; the payload text is inserted verbatim, never re-serialised.
public struct NIMCustomFormat: Hashable, Sendable {
    public var typeKey: String
    public var dataKey: String
    /// The neutral type name of bodies without the envelope; their payload is the whole body.
    public var untypedName: String
    /// Wire type value (as text) → neutral type name.
    public var aliases: [String: String]

    public init(typeKey: String = "type", dataKey: String = "data", untypedName: String = "nim_custom",
                aliases: [String: String] = [:]) {
        self.typeKey = typeKey
        self.dataKey = dataKey
        self.untypedName = untypedName
        self.aliases = aliases
    }

    /// Splits a type-100 body into the neutral type name and payload (see the type's rules).
    public func split(_ body: String) -> (typeName: String, payload: String) {
        guard (try? JSONValue.parse(body)) != nil, let members = NIMJSONScanner.members(of: body), members.count == 2,
              let typeRaw = members.first(where: { $0.key == typeKey })?.raw,
              let dataRaw = members.first(where: { $0.key == dataKey })?.raw,
              let typeValue = try? JSONValue.parse(String(typeRaw)) else {
            return (untypedName, body)
        }
        let wire: String
        switch typeValue {
        case .string(let text) where !text.isEmpty: wire = text
        case .int(let number): wire = String(number)
        default: return (untypedName, body)
        }
        return (aliases[wire] ?? wire, String(dataRaw))
    }

    /// Builds the type-100 body for a neutral type name and payload.
    public func join(typeName: String, payload: String) -> String {
        if typeName == untypedName { return payload }
        let wire = aliases.first(where: { $0.value == typeName })?.key ?? typeName
        let typeJSON = Int64(wire) != nil && aliases[wire] != nil ? wire : JSONValue.string(wire).jsonString()
        let dataJSON = (try? JSONValue.parse(payload)) != nil ? payload : JSONValue.string(payload).jsonString()
        return "{" + JSONValue.string(typeKey).jsonString() + ":" + typeJSON + ","
            + JSONValue.string(dataKey).jsonString() + ":" + dataJSON + "}"
    }
}
