import IMCore

/// A group put on a sandbox under an id the test chooses (`POST /_sandbox/groups`), as an operator
/// who created the group on the vendor beforehand would have it: test-only sandbox control, not part
/// of any vendor's API (docs/adapters/<vendor>.md, "Test-only sandbox control"). The vendors whose
/// servers assign group ids themselves (NIM `tid`, JMessage `gid`, the WuKong business server's
/// `group_no`) refuse group messages into a group they do not have, so a test that needs a group of a
/// known id seeds it here instead of creating it through the vendor's API.
///
/// Body: `{"id": ID, "owner": USER, "members": [USER…], "name": NAME}` (`name` optional; the owner is
/// a member whether or not `members` lists it). A group of that id that exists already gets exactly
/// this owner, these members and (when given) this name: seeding again is how a test takes a member
/// out. Users are not registered by seeding. Answers `{"ok":true,"id":ID}`; 400 for a body that is
/// not one of these, or an id the vendor's groups cannot have (NIM and JMessage ids are numbers).
public struct SandboxGroupSeed: Sendable, Hashable {
    public var id: String
    public var owner: String
    public var members: [String]
    public var name: String?

    public init(id: String, owner: String, members: [String], name: String? = nil) {
        self.id = id
        self.owner = owner
        self.members = members
        self.name = name
    }

    /// The owner first, then the other members in the order given, each once.
    public var everyone: [String] {
        var seen: Set<String> = []
        return ([owner] + members).filter { seen.insert($0).inserted }
    }

    /// Parses a `POST /_sandbox/groups` body; the reason when it is not one.
    public static func parse(_ body: JSONValue) -> Result<SandboxGroupSeed, SeedError> {
        guard let id = body["id"]?.stringValue ?? body["id"]?.int64Value.map(String.init), !id.isEmpty else {
            return .failure(.badRequest("expected \"id\": the group's id"))
        }
        guard let owner = body["owner"]?.stringValue, !owner.isEmpty else {
            return .failure(.badRequest("expected \"owner\": the group's owner"))
        }
        let items = body["members"]?.arrayValue ?? []
        let members = items.compactMap(\.stringValue)
        guard members.count == items.count else { return .failure(.badRequest("expected \"members\": an array of user ids")) }
        return .success(SandboxGroupSeed(id: id, owner: owner, members: members, name: body["name"]?.stringValue))
    }

    /// Why a group was not seeded.
    public enum SeedError: Error, Sendable, Hashable {
        case badRequest(String)
        case unsupported(String)

        var answer: (status: Int, error: String) {
            switch self {
            case .badRequest(let why): (400, why)
            case .unsupported(let why): (400, "unsupported: \(why)")
            }
        }
    }
}
