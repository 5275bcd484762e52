import Foundation
import IMAdapterKit
import IMCore
import IMSandbox
import Synchronization
import RongCloud

/// A refusal the sandbox answers with the vendor envelope `{"code","errorMessage"}`.
public struct RongCloudSandboxError: Error, Hashable, Sendable {
    public var code: Int
    public var message: String
    public init(_ code: Int, _ message: String) {
        self.code = code
        self.message = message
    }
    /// A refusal with an entry of `RongCloudErrors.table`, with its text unless `message` is given.
    public init(_ entry: VendorErrorTable.Entry, _ message: String? = nil) {
        self.init(entry.code, message ?? entry.text)
    }
    static func parameter(_ message: String) -> RongCloudSandboxError { RongCloudSandboxError(RongCloudErrors.parameterError, message) }
}

/// One message the sandbox keeps (one per recipient of a private publish, one per group).
public struct RongCloudStoredMessage: Hashable, Sendable, Codable {
    public var msgUID: String
    public var fromUserId: String
    public var conversationType: RCConversationType
    /// The recipient (private) or the group id (group).
    public var targetId: String
    public var objectName: String
    public var content: String
    public var msgTime: Int64
    public var persisted: Bool
    public var expansionEnabled: Bool
    public var expansion: [String: RCExpansionValue]
    public var recalledBy: String?
    public var recalledAt: Int64?
    public var recallDeleted: Bool
    /// Wall-clock microseconds when the sandbox accepted it (`msgTime` has only millisecond resolution).
    /// Nil in state files from before.
    public var receivedAtUs: Int64? = nil

    public var isRecalled: Bool { recalledAt != nil }

    /// Whether `user` is one of the two users of this private message.
    func involves(_ user: String) -> Bool { fromUserId == user || targetId == user }

    /// The routing callback's `channelType` of this message's conversation.
    var channelType: String {
        switch conversationType {
        case .group: RCChannelType.group.rawValue
        case .system: RCChannelType.notify.rawValue
        default: RCChannelType.person.rawValue
        }
    }

    /// The routed form of this message, as the routing callback posts it.
    /// An extensible message carries `expansion=true` and its keys as `extraContent` (see `RCRoutedMessage`).
    var routed: RCRoutedMessage {
        RCRoutedMessage(fromUserId: fromUserId, toUserId: targetId, objectName: objectName, content: content,
                          channelType: channelType, msgTimestamp: msgTime, msgUID: msgUID, sensitiveType: 0, source: "Server",
                          expansion: expansionEnabled ? true : nil,
                          extraContent: expansionEnabled ? RongCloudExpansionCodec.setText(expansion.mapValues(\.v)) : nil)
    }
}

/// The RongCloud sandbox's state and rules, without HTTP: what each endpoint does, which refusals it
/// answers, and which routed messages it produces for the callback.
///
/// Rules kept (docs/adapters/rongcloud.md, UNCONFIRMED points as decided there):
/// - msgUIDs look like the vendor's (`XXXX-XXXX-XXXX-XXXX`, uppercase base 36) and are unique through
///   their counter digits; a message's `msgTime` is the wall-clock millisecond it was accepted (messages
///   may share one). Recalls and expansion changes get a time strictly greater than every earlier time
///   (`max(now, last + 1)`), so expansion `ts` are total.
/// - `RC:CmdMsg`, `RC:MsgExMsg`, status/typing signals and `isPersisted=0` messages are routed but not
///   stored in history.
/// - Recall: only the sender (`notSender`); a second recall of the same message succeeds without a
///   second `RC:RcCmd`; `isDelete=1` also removes the message from history; otherwise history shows
///   it as the `RC:RcNtf` clients display.
/// - Expansions: only on messages published with `expansion=true`, conversation types 1 and 3, ≤ 100
///   keys per call, ≤ 300 per message, keys ≤ 32 of `A-Za-z0-9+=-_`, values ≤ 4096; each applied
///   change stamps the keys it changed with the change's time as `ts` and routes an `RC:MsgExMsg`
///   carrying only the changed keys (none when nothing changed).
public final class RongCloudSandboxStore: Sendable {
    struct User: Codable, Hashable {
        var name: String
        var portrait: String?
        /// When `/user/getToken.json` first registered the user (ms); nil in state files from before.
        var createdAt: Int64? = nil
    }

    /// Everything the sandbox knows; the `index` is rebuilt on load, the rest is the saved snapshot.
    struct State: Codable {
        var users: [String: User] = [:]
        var messages: [RongCloudStoredMessage] = []
        var lastTime: Int64 = 0
        var counter: Int64 = 0
        var index: [String: Int] = [:]
        /// Groups by id (`/group/*.json`, RongCloudSandboxStore+Directory.swift).
        var groups: [String: Group] = [:]

        enum CodingKeys: String, CodingKey { case users, messages, lastTime, counter, groups }

        init() {}

        /// State files from before groups were kept have no `groups`.
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            users = try c.decode([String: User].self, forKey: .users)
            messages = try c.decode([RongCloudStoredMessage].self, forKey: .messages)
            lastTime = try c.decode(Int64.self, forKey: .lastTime)
            counter = try c.decode(Int64.self, forKey: .counter)
            groups = try c.decodeIfPresent([String: Group].self, forKey: .groups) ?? [:]
        }

        mutating func reindex() {
            index = Dictionary(uniqueKeysWithValues: messages.enumerated().map { ($0.element.msgUID, $0.offset) })
        }
    }

    let state: Mutex<State>
    public let clock: any IMClock
    /// Whether messages sent through the Server API are routed (a console switch at the vendor; on here).
    public let routeServerMessages: Bool
    /// Where state is saved after every change (`--state`); nil keeps it in memory only.
    let stateFile: SandboxStateFile?
    let limits = ExpansionLimits.rongCloud
    static let snapshotName = "rongcloud"

    public init(clock: any IMClock = SystemClock(), routeServerMessages: Bool = true, stateFile: SandboxStateFile? = nil) throws {
        self.clock = clock
        self.routeServerMessages = routeServerMessages
        self.stateFile = stateFile
        var initial = try stateFile?.load(State.self, name: Self.snapshotName) ?? State()
        initial.reindex()
        self.state = Mutex(initial)
    }

    public var messages: [RongCloudStoredMessage] { state.withLock { $0.messages } }
    public var users: [(id: String, name: String, portrait: String?)] {
        state.withLock { $0.users.map { (id: $0.key, name: $0.value.name, portrait: $0.value.portrait) }.sorted { $0.id < $1.id } }
    }

    public func reset() {
        _ = try? mutate { (state: inout State) throws(RongCloudSandboxError) in state = State() }
    }

    /// Runs a change under the lock and saves the result before the change is answered; a failed save
    /// is answered as a server error (1000).
    func mutate<T>(_ body: (inout State) throws(RongCloudSandboxError) -> T) throws(RongCloudSandboxError) -> T {
        try state.withLock { state throws(RongCloudSandboxError) -> T in
            let result = try body(&state)
            if let stateFile {
                do {
                    try stateFile.save(state, name: Self.snapshotName)
                } catch {
                    throw RongCloudSandboxError(RongCloudErrors.serverError, "sandbox state was not saved: \(error)")
                }
            }
            return result
        }
    }

    // MARK: users

    public func getToken(userId: String?, name: String?, portraitUri: String?) throws(RongCloudSandboxError) -> RCTokenResponse {
        guard let userId, !userId.isEmpty else { throw .parameter("userId is required") }
        guard userId.utf8.count <= 64, userId.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+=-_".contains($0)) }) else {
            throw .parameter("userId must be at most 64 characters of A-Z a-z 0-9 + = - _")
        }
        guard let name, !name.isEmpty else { throw .parameter("name is required") }
        try Self.checkProfile(name: name, portrait: portraitUri)
        let token = try mutate { (state: inout State) throws(RongCloudSandboxError) -> String in
            let created = state.users[userId]?.createdAt ?? clock.nowMs()
            state.users[userId] = User(name: name, portrait: portraitUri, createdAt: created)
            state.counter += 1
            return "sandbox-token/\(userId)/\(state.counter)"
        }
        return RCTokenResponse(userId: userId, token: token)
    }

    // MARK: publishing

    /// `/message/{private,group}/publish.json`. Returns the response entries and the routed messages.
    public func publish(_ form: RCPublishForm, group: Bool) throws(RongCloudSandboxError)
        -> (entries: [RCMessageUIDEntry], routed: [RCRoutedMessage]) {
        try publish(form, type: group ? .group : .private)
    }

    /// `/message/{private,group,system}/publish.json` (`type` `.private`, `.group` or `.system`).
    ///
    /// Recipients: repeated keys and comma-joined values are both read (`toUserId=u2,u3` is two users; a comma
    /// is not in the vendor's id character set, docs/adapters/rongcloud.md §6), and the limits count the
    /// split list: ≤ 1000 `toUserId` (private), ≤ 100 (system), ≤ 3 `toGroupId` (group), else 1502.
    /// `msgTime` is the wall-clock millisecond of acceptance (several messages may share one); the msgUID
    /// is unique through its counter digits.
    public func publish(_ form: RCPublishForm, type: RCConversationType) throws(RongCloudSandboxError)
        -> (entries: [RCMessageUIDEntry], routed: [RCRoutedMessage]) {
        let group = type == .group
        let targets = Self.splitRecipients(group ? form.toGroupIds : form.toUserIds)
        let field = group ? "toGroupId" : "toUserId"
        let limit = group ? RCPublishForm.maxGroups : type == .system ? Self.maxSystemRecipients : RCPublishForm.maxPrivateRecipients
        guard !form.fromUserId.isEmpty else { throw .parameter("fromUserId is required") }
        guard !targets.isEmpty, targets.allSatisfy({ !$0.isEmpty }) else { throw .parameter("\(field) is required") }
        guard targets.count <= limit else {
            throw RongCloudSandboxError(RongCloudErrors.quantityExceeded, "\(field) may name at most \(limit)")
        }
        // A directed group message names users of one group (docs/adapters/rongcloud.md, "Publish refusals").
        let directed = group ? Self.splitRecipients(form.toUserIds) : []
        try Self.checkIdLength(form.fromUserId, "fromUserId")
        for target in targets { try Self.checkIdLength(target, field) }
        for user in directed { try Self.checkIdLength(user, "toUserId") }
        if group, !form.toUserIds.isEmpty { try Self.checkDirected(form, users: directed, groups: targets) }
        guard !form.objectName.isEmpty, form.objectName.count <= RCObjectName.maxLength else {
            throw .parameter("objectName is required and at most \(RCObjectName.maxLength) characters")
        }
        if RCObjectName.isBuiltIn(form.objectName), !RCObjectName.isVendorType(form.objectName) {
            throw .parameter("objectName \(form.objectName) is not a RongCloud type; a custom objectName must not start with RC:")
        }
        guard form.content.utf8.count <= RCPublishForm.maxContentBytes else {
            throw RongCloudSandboxError(RongCloudErrors.lengthExceeded, "content exceeds 128 KB")
        }
        if RCObjectName.isBuiltIn(form.objectName), (try? JSONValue.parse(form.content))?.objectValue == nil {
            throw .parameter("content of \(form.objectName) must be a JSON object")
        }
        let expansion = type == .system ? nil : try initialExpansion(form)
        // The vendor keeps a directed group message out of cloud history.
        let persisted = (form.isPersisted ?? true) && !Self.transient(form.objectName) && directed.isEmpty
        return try mutate { (state: inout State) throws(RongCloudSandboxError) in
            // Read under the lock: a time read before it let a message stored later (a higher msgUID
            // counter, later in history) carry an earlier msgTime than one stored before it.
            let now = clock.nowMs()
            var entries: [RCMessageUIDEntry] = []
            var routed: [RCRoutedMessage] = []
            // Later changes (recall, expansion) still get times after this message's.
            state.lastTime = max(state.lastTime, now)
            for target in targets {
                let uid = state.nextUID(now)
                let message = RongCloudStoredMessage(
                    msgUID: uid, fromUserId: form.fromUserId, conversationType: type, targetId: target,
                    objectName: form.objectName, content: form.content, msgTime: now, persisted: persisted,
                    expansionEnabled: expansion != nil,
                    expansion: (expansion ?? [:]).mapValues { RCExpansionValue(v: $0, ts: now) },
                    recalledBy: nil, recalledAt: nil, recallDeleted: false,
                    receivedAtUs: Int64((Date().timeIntervalSince1970 * 1_000_000).rounded()))
                state.index[uid] = state.messages.count
                state.messages.append(message)
                entries.append(group ? RCMessageUIDEntry(groupId: target, messageUID: uid) : RCMessageUIDEntry(userId: target, messageUID: uid))
                if routeServerMessages { routed.append(message.routed) }
            }
            return (entries, routed)
        }
    }

    /// `/message/system/publish.json`: at most 100 `toUserId` (docs/adapters/rongcloud.md §6).
    static let maxSystemRecipients = 100

    /// User and group ids are at most 64 bytes (docs/adapters/rongcloud.md, "Publish refusals").
    static let maxIdBytes = RCUserLimits.maxIdBytes

    /// 1002 for an id over `maxIdBytes`, as `/user/getToken.json` refuses a long `userId`. Only the length:
    /// the publish endpoints keep no character-set rule.
    static func checkIdLength(_ id: String, _ field: String) throws(RongCloudSandboxError) {
        guard id.utf8.count <= maxIdBytes else {
            throw .parameter("\(field) must be at most \(maxIdBytes) bytes; \(id.prefix(16))… has \(id.utf8.count)")
        }
    }

    /// A group publish with `toUserId` is a directed message: one `toGroupId` only, and none of `expansion`,
    /// `extraContent`, `disablePush`, `pushExt` (docs/adapters/rongcloud.md, "Publish refusals"). A field is
    /// refused when it asks for its feature (`expansion=true`, `disablePush=true`, a non-empty text);
    /// its default value (`false`, empty) is taken.
    static func checkDirected(_ form: RCPublishForm, users: [String], groups: [String]) throws(RongCloudSandboxError) {
        guard users.allSatisfy({ !$0.isEmpty }) else { throw .parameter("toUserId must not be empty") }
        guard groups.count == 1 else { throw .parameter("a directed message (toUserId) takes exactly one toGroupId; got \(groups.count)") }
        let unsupported = [("expansion", form.expansion == true), ("extraContent", !(form.extraContent ?? "").isEmpty),
                           ("disablePush", form.disablePush == true), ("pushExt", !(form.pushExt ?? "").isEmpty)]
        if let field = unsupported.first(where: \.1)?.0 {
            throw .parameter("a directed message (toUserId) does not support \(field)")
        }
    }

    /// Repeated values with each one split at commas (`["u2,u3", "u4"]` → `["u2", "u3", "u4"]`); an empty
    /// piece (`u2,,u3`, a trailing comma) stays empty so that it is refused.
    public static func splitRecipients(_ values: [String]) -> [String] {
        values.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
    }

    /// Signalling and status types the vendor does not store.
    static func transient(_ objectName: String) -> Bool {
        [RCObjectName.command, RCObjectName.expansionSignal, RCObjectName.recallCommand, "RC:TypSts", "RC:ReadNtf",
         "RC:SRSMsg", "RC:RRReqMsg", "RC:RRRspMsg"].contains(objectName)
    }

    private func initialExpansion(_ form: RCPublishForm) throws(RongCloudSandboxError) -> [String: String]? {
        guard form.expansion == true else { return nil }
        guard let text = form.extraContent, !text.isEmpty else { return [:] }
        let values = try Self.stringObject(text, field: "extraContent")
        try check(.set(values), current: Expansion())
        return values
    }

    /// Checks an expansion change with the vendor's limits; a refusal is 1002 naming the limit.
    func check(_ change: ExpansionChange, current: Expansion) throws(RongCloudSandboxError) {
        do {
            try limits.validate(change, current: current, caller: .server)
        } catch {
            let detail = (error as? IMError).map { "\($0.details["limit"] ?? "limit"): \($0.message)" } ?? "\(error)"
            throw .parameter("\(RongCloudRefusal.expansionLimit): \(detail)")
        }
    }

    static func stringObject(_ text: String, field: String) throws(RongCloudSandboxError) -> [String: String] {
        guard let object = (try? JSONValue.parse(text))?.objectValue else { throw .parameter("\(field) must be a JSON object") }
        var values: [String: String] = [:]
        for (key, value) in object {
            guard let string = value.stringValue, value.objectValue == nil else { throw .parameter("\(field).\(key) must be a string") }
            values[key] = string
        }
        return values
    }
}

extension RongCloudSandboxStore.State {
    /// A server time strictly after every earlier one.
    mutating func nextTime(_ now: Int64) -> Int64 {
        lastTime = max(now, lastTime + 1)
        return lastTime
    }

    /// `XXXX-XXXX-XXXX-XXXX` in uppercase base 36: nine digits of the time, seven of a counter.
    mutating func nextUID(_ time: Int64) -> String {
        counter += 1
        func digits(_ value: Int64, _ width: Int) -> String {
            let text = String(value, radix: 36).uppercased()
            return String(repeating: "0", count: max(0, width - text.count)) + text.suffix(width)
        }
        let chars = Array(digits(time, 9) + digits(counter, 7))
        return stride(from: 0, to: 16, by: 4).map { String(chars[$0..<$0 + 4]) }.joined(separator: "-")
    }

    func message(_ uid: String) throws(RongCloudSandboxError) -> RongCloudStoredMessage {
        guard let position = index[uid] else { throw .parameter("\(RongCloudRefusal.messageNotFound): \(uid)") }
        return messages[position]
    }
}
