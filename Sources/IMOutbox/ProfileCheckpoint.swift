import Foundation
import IMCore
import IMStore

/// Where the bridge keeps what it wrote for a puppet's profile (docs/architecture.md, "Profiles"): the
/// checkpoint `profile:<target>:<puppet>` says the puppet's profile was queued ("") or written (its JSON),
/// and its profile writes run in a lane of their own. Read by `Delivery.provision` and by the engine's
/// profile sync.
public enum ProfileCheckpoint {
    /// The checkpoint that says a puppet's profile was queued ("") or written (its JSON).
    public static func name(target: BackendID, puppet: UserID) -> String { "profile:\(target):\(puppet)" }

    /// The lane of a puppet's profile writes: its own, beside the conversations' lanes.
    public static func lane(target: BackendID, puppet: UserID) -> LaneKey {
        LaneKey(backend: target, conversation: .other("profile", puppet.rawValue))
    }

    package static func encode(_ profile: UserProfile) -> String {
        var object: [String: JSONValue] = [:]
        if let name = profile.name { object["name"] = .string(name) }
        if let avatar = profile.avatar { object["avatar"] = .string(avatar) }
        return JSONValue.object(object).jsonString()
    }

    /// The profile a checkpoint holds; nil when it was only queued (or does not read).
    package static func decode(_ text: String, id: UserID) -> UserProfile? {
        guard !text.isEmpty, let object = (try? JSONValue.parse(Data(text.utf8)))?.objectValue else { return nil }
        let profile = UserProfile(id: id, name: object["name"]?.stringValue, avatar: object["avatar"]?.stringValue)
        return profile.name == nil && profile.avatar == nil ? nil : profile
    }
}
