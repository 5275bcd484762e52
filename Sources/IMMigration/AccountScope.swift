import Foundation
import IMCore
import IMConfig
import IMRelay

/// The users, groups and conversations a whole-account migration covers: what an account file names
/// (`imbridge migrate --account-file`), and with `--all` everything the source can enumerate.
///
/// Where the source cannot list something (WuKongIM lists neither users nor channels) the scope says so
/// in `notes` and finds what it can through what it can list: each known user's groups
/// (`GroupDirectory.groups(of:)`) and conversations (`ConversationListing`), and every group's
/// conversation. The account file fills in the rest.
public struct AccountScope: Sendable, Equatable {
    public var users: [UserID] = []
    public var groups: [GroupID] = []
    public var conversations: [ConversationRef] = []
    public var notes: [String] = []

    public init(users: [UserID] = [], groups: [GroupID] = [], conversations: [ConversationRef] = []) {
        self.users = users
        self.groups = groups
        self.conversations = conversations
    }

    /// Reads an account file, YAML or JSON (JSON is YAML):
    /// ```yaml
    /// users: [alice, bob]               # user ids on the source
    /// groups: [g1, g2]                  # group ids on the source (their history is migrated too)
    /// conversations: ["direct:alice,bob"]
    /// ```
    /// Every key is optional; an unknown key or an entry that is not a string is refused, naming the line.
    public static func load(file path: String) throws -> AccountScope {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw IMError(.notFound, "cannot read the account file \(path)")
        }
        return try parse(text, file: path)
    }

    public static func parse(_ text: String, file: String) throws -> AccountScope {
        let root = try ConfigNode.parse(text, file: file, environment: [:])
        try root.expectMapping()
        try root.allowOnly(["users", "groups", "conversations"])
        func strings(_ key: String) throws -> [String] {
            let node = root[key]
            guard node.isPresent else { return [] }
            return try node.list().map { try $0.scalar() }
        }
        var scope = AccountScope(users: try strings("users").map(UserID.init), groups: try strings("groups").map(GroupID.init))
        for (index, text) in try strings("conversations").enumerated() {
            do {
                scope.conversations.append(try ConversationRef(parsing: text))
            } catch let error as IMError {
                throw root["conversations"].error("entry \(index): \(error.message)")
            }
        }
        return scope
    }

    /// `given` widened by what `source` can enumerate when `everything` (else `given` with its groups'
    /// conversations): users, groups, then conversations, each kept once in the order found.
    public static func discover(_ source: any IMBackend, given: AccountScope, everything: Bool) async throws -> AccountScope {
        var scope = given
        let vendor = source.capabilities.vendor
        if everything {
            if let directory = source as? any UserDirectory {
                do {
                    scope.users += try await directory.allUsers()
                } catch let error as IMError where error.code == .unsupported {
                    scope.notes.append("\(vendor) cannot list its users: using the account file's users, group members and conversation participants")
                }
            } else {
                scope.notes.append("\(vendor) has no user directory: using the account file's users, group members and conversation participants")
            }
            var listedGroups = false
            if let directory = source as? any GroupDirectory {
                do {
                    scope.groups += try await directory.allGroups()
                    listedGroups = true
                } catch let error as IMError where error.code == .unsupported {
                    scope.notes.append("\(vendor) cannot list its groups: looking for each known user's groups")
                }
                if !listedGroups {
                    do {
                        for user in unique(scope.users) { scope.groups += try await directory.groups(of: user) }
                    } catch let error as IMError where error.code == .unsupported {
                        scope.notes.append("\(vendor) cannot list a user's groups either: using the account file's groups")
                    }
                }
            }
            var listedConversations = false
            if let discovery = source as? any ConversationDiscovery {
                do {
                    scope.conversations += try await discovery.allConversations()
                    listedConversations = true
                } catch let error as IMError where error.code == .unsupported {}
            }
            if !listedConversations {
                if let listing = source as? any ConversationListing {
                    do {
                        for user in unique(scope.users) { scope.conversations += try await listing.conversations(for: user).map(\.conversation) }
                        scope.notes.append("\(vendor) cannot list every conversation: took each known user's conversation list")
                    } catch let error as IMError where error.code == .unsupported {
                        scope.notes.append("\(vendor) cannot list conversations: migrating the groups' and the account file's conversations")
                    }
                } else {
                    scope.notes.append("\(vendor) cannot list conversations: migrating the groups' and the account file's conversations")
                }
            }
        }
        scope.users = unique(scope.users)
        scope.groups = unique(scope.groups)
        scope.conversations = unique(scope.conversations + scope.groups.map { .group($0) })
        return scope
    }

    static func unique<T: Hashable>(_ items: [T]) -> [T] {
        var seen = Set<T>()
        return items.filter { seen.insert($0).inserted }
    }
}
