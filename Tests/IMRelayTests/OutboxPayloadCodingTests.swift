import Foundation
import IMCore
@testable import IMRelay
import IMTesting
import Testing
@testable import IMOutbox

/// `PayloadJSON` against the synthesized `Codable` it stands in for: the same JSON written, the same
/// payload read, and for every damaged row the same payload or the same refusal as `JSONDecoder`.
@Suite struct OutboxPayloadCodingTests {
    static let routes: [Route] = [
        Route(from: try! RouteEndpoint(parsing: "wk:group:*"), to: try! RouteEndpoint(parsing: "rc:group:*"),
              direction: .both, fallbacks: [.edit: .drop, .reactions: .notice]),
        Route(from: try! RouteEndpoint(parsing: "rc:direct:*"), to: try! RouteEndpoint(parsing: "nim:direct:*"), direction: .forward,
              usersOnTarget: .relay(account: "bridge", nameFormat: "{name}: "), media: .rehost),
    ]

    static let attachment = MediaAttachment(remoteURL: "https://cdn.example.com/a/b.jpg?x=1&y=2", mimeType: "image/jpeg", size: 482_113,
                                            width: 640, height: 480, transferState: .needsDownload)

    /// Every content kind (text here, the others through `JSONEncoder` for their member).
    static let contents: [MessageContent] = [
        .text("你好 \"quoted\" \\ / \n\t\u{01} 😀"),
        .text(""),
        .image(ImageContent(attachment)),
        .gif(GIFContent(MediaAttachment())),
        .voice(VoiceContent(MediaAttachment(remoteURL: "https://v.example/a.amr", durationMs: 3_200, transferState: .uploaded))),
        .video(VideoContent(attachment, cover: attachment)),
        .file(FileContent(attachment, name: "报告.pdf")),
        .location(LocationContent(latitude: 31.2304, longitude: 121.4737, title: "上海", address: nil)),
        .card(CardContent(userID: "alice", name: "Alice", avatar: "https://a.example/p.png")),
        .command(CommandContent(name: "typing", data: ["n": 1, "f": 0.5, "big": .int(9_007_199_254_740_993)])),
        .notice(NoticeContent(text: "joined", template: "{a} joined", parameters: ["a", 2, .null])),
        .custom(CustomContent(raw: "order_card", payload: #"{"orderID":"A1","amountCents":1999}"#)),
        .unsupported(UnsupportedContent(vendor: "wk", vendorType: "99", raw: #"{"type":99}"#)),
    ]

    static func outgoing(_ content: MessageContent, full: Bool) -> OutgoingMessage {
        full
            ? OutgoingMessage(conversation: .direct("bob", "alice"), sender: "wk_alice", content: content,
                              clientMessageID: ClientMessageID("imbridge-7"), mentions: Mentions(all: true, users: ["bob", "carol"]),
                              reply: ReplyRef(messageID: "m0", sender: "bob", digest: "[图片]"),
                              options: MessageOptions(persist: true, countUnread: false, push: false, receiptRequested: true, pushText: "新消息"),
                              expansion: ["k": "v", "空": ""], sentAt: 1_700_000_000_123,
                              vendorExtras: ["x": .object(["n": .int(1), "d": .double(2.5), "a": .array([.bool(true), .null])])])
            : OutgoingMessage(conversation: .group("g1"), sender: "wk_alice", content: content)
    }

    /// Every action, each with its optionals absent and present, on every content kind where it carries one.
    static let payloads: [OutboxPayload] = {
        var actions: [RelayAction] = []
        for content in contents {
            for full in [false, true] {
                actions.append(.send(outgoing: outgoing(content, full: full), source: "wk-1", replyToSource: full ? "wk-0" : nil))
            }
            actions.append(.edit(source: "wk-1", by: "alice", content: content))
        }
        actions += [
            .notice(outgoing: outgoing(.notice(NoticeContent(text: "[不支持的消息]")), full: false), replyToSource: nil),
            .notice(outgoing: outgoing(.text("edited"), full: true), replyToSource: "wk-1"),
            .recall(source: "wk-1", by: "alice"),
            .delete(source: "wk-1", by: "alice", forUser: nil),
            .delete(source: "wk-1", by: "alice", forUser: "bob"),
            .expansion(source: "wk-1", by: "alice", delta: ExpansionDelta(version: 3, set: ["like": "1"], removed: ["b", "a"], cleared: false)),
            .expansion(source: "wk-1", by: "alice", delta: ExpansionDelta(version: 4, cleared: true)),
            .reaction(source: "wk-1", by: "alice", emoji: "👍", added: true),
            .reaction(source: "wk-1", by: "alice", emoji: "👍", added: false),
            .read(upToSource: "wk-9", by: "bob"),
            .profile(source: "alice", puppet: "wk_alice"),
            .group(source: "g1", target: "g1", users: .puppet(prefix: "wk_")),
            .group(source: "g1", target: "rc-g1", users: .relay(account: "bridge", nameFormat: "{user}")),
            .group(source: "g1", target: nil, users: .puppet(prefix: "wk_")),
            .user(profile: UserProfile(id: "wk_alice", name: "Alice", avatar: "https://a/1.png", extra: ["sign": .string("hi")]), known: true),
            .user(profile: UserProfile(id: "wk_bob", name: "wk_bob"), known: false),
            .retract(source: "wk-1", copy: nil, outgoing: outgoing(.text("late"), full: false), attemptAt: 17),
            .retract(source: "wk-1", copy: "rc-5", outgoing: outgoing(.text("late"), full: true), attemptAt: -1),
            .dissolve(source: "g1", keep: false, notice: outgoing(.text("[群已解散]"), full: false)),
            .dissolve(source: "g1", keep: true, notice: outgoing(.text("[群已解散]"), full: true)),
        ]
        var payloads: [OutboxPayload] = []
        for (index, action) in actions.enumerated() {
            var payload = OutboxPayload(action: action, route: routes[index % routes.count], eventTimeMs: Int64(index) * 1_000_003,
                                        sourceConversation: index % 3 == 0 ? nil : .group(GroupID("g\(index)")),
                                        migration: index % 4 == 0 ? MigrationMark(run: "wk:g1>rc:g1", tally: index % 8 == 0 ? "copied" : nil,
                                                                                  kind: "text", senderMigrated: index % 8 == 0 ? true : nil,
                                                                                  outcome: index % 8 == 4 ? "migrate-account:wk->rc:user:alice" : nil) : nil)
            if index % 5 == 1 { payload.requeues = index }
            if index % 7 == 2 { payload.firstCopyOnly = true }
            if index % 6 == 3 { payload.sourceSender = UserID("u\(index)") }
            payloads.append(payload)
        }
        return payloads
    }()

    @Test func writesTheJSONCodableWrites() throws {
        for payload in Self.payloads {
            let written = try payload.encoded()
            #expect(try Self.routeApart(JSONValue.parse(written)) == Self.routeApart(JSONValue.parse(JSONEncoder().encode(payload))),
                    "\(String(decoding: written, as: UTF8.self))")
            #expect(try JSONDecoder().decode(OutboxPayload.self, from: written) == payload, "JSONDecoder reads the row back")
        }
    }

    @Test func readsWhatCodableWroteWithoutFallingBack() throws {
        #expect(Self.payloads.count > 40)
        for payload in Self.payloads {
            let rowByCodable = try JSONEncoder().encode(payload)
            // Read by PayloadJSON itself (a fallback to JSONDecoder would hide a shape it misreads).
            #expect(try PayloadJSON.read(JSONValue.parse(rowByCodable)) == payload)
            #expect(try PayloadJSON.read(JSONValue.parse(payload.encoded())) == payload)
            #expect(try OutboxPayload.decode(rowByCodable) == payload)
        }
    }

    /// Every member of every row removed, made `null`, or given a value of each other JSON type: the
    /// reader gives what `JSONDecoder` gives, a payload or a refusal.
    @Test func damagedRowsReadAsJSONDecoderReadsThem() async throws {
        var compared = 0
        var refused = 0
        for payload in Self.payloads {
            // About 8 s of work in a debug build: given back to the 2-thread pool between payloads, so
            // that tests waiting on their own deadlines beside it are not starved.
            await Task.yield()
            let value = try JSONValue.parse(payload.encoded())
            for damaged in Self.damaged(value) {
                let row = damaged.jsonData()
                let reference = try? JSONDecoder().decode(OutboxPayload.self, from: row)
                let read = try? OutboxPayload.decode(row)
                #expect(read == reference, "\(String(decoding: row, as: UTF8.self))")
                compared += 1
                if reference == nil { refused += 1 }
            }
        }
        #expect(compared > 15_000 && refused > 10_000 && refused < compared - 2_000, "\(compared) rows, \(refused) refused")
    }

    @Test func randomTextsAndExtrasRoundTrip() throws {
        var random = SplitMix64(seed: 0x5EED_0A7B)
        let alphabet = Array("aZ09 \"\\/\n\t\u{00}\u{1F}\u{7F}é中😀\u{2028}{}[]:,")
        func text() -> String { String((0..<Int.random(in: 0...24, using: &random)).map { _ in alphabet.randomElement(using: &random)! }) }
        func json(_ depth: Int) -> JSONValue {
            switch Int.random(in: 0...(depth > 2 ? 4 : 6), using: &random) {
            case 0: .null
            case 1: .bool(Bool.random(using: &random))
            case 2: .int(Int64.random(in: .min ... .max, using: &random))
            // Not integral: JSON does not keep 2.0 apart from 2 (`JSONValue` reads either back as `.int`).
            case 3: .double(Double(Int.random(in: -1_000_000...1_000_000, using: &random)) / 64 + 1.0 / 128)
            case 4: .string(text())
            case 5: .array((0..<Int.random(in: 0...3, using: &random)).map { _ in json(depth + 1) })
            default: .object(Dictionary((0..<Int.random(in: 0...3, using: &random)).map { _ in (text(), json(depth + 1)) },
                                        uniquingKeysWith: { first, _ in first }))
            }
        }
        for round in 0..<300 {
            let message = OutgoingMessage(conversation: .group(GroupID(text() + "g")), sender: UserID(text()), content: .text(text()),
                                          clientMessageID: round % 2 == 0 ? ClientMessageID(text()) : nil,
                                          mentions: Mentions(all: round % 3 == 0, users: [UserID(text())]),
                                          expansion: round % 2 == 1 ? [text(): text()] : nil, sentAt: Int64.random(in: .min ... .max, using: &random),
                                          vendorExtras: Dictionary([(text(), json(0)), (text(), json(0))], uniquingKeysWith: { first, _ in first }))
            let payload = OutboxPayload(action: .send(outgoing: message, source: MessageID(text()), replyToSource: nil),
                                        route: Self.routes[round % 2], eventTimeMs: Int64.random(in: .min ... .max, using: &random))
            let row = try payload.encoded()
            #expect(try PayloadJSON.read(JSONValue.parse(row)) == payload, "\(String(decoding: row, as: UTF8.self))")
            #expect(try JSONDecoder().decode(OutboxPayload.self, from: row) == payload)
        }
    }

    @Test func aNumberJSONCannotHoldIsRefusedAtIntake() {
        let message = OutgoingMessage(conversation: .group("g1"), sender: "a", content: .text("x"), vendorExtras: ["n": .double(.nan)])
        let payload = OutboxPayload(action: .send(outgoing: message, source: "s", replyToSource: nil), route: Self.routes[0], eventTimeMs: 1)
        #expect(throws: IMError.self) { try payload.encoded() }
        #expect(throws: (any Error).self) { try JSONEncoder().encode(payload) }
    }

    /// A row's members but the route, and the route it names. (A route's JSON is not unique: `JSONEncoder`
    /// writes its `fallbacks` dictionary as an array in the dictionary's own order, which two equal
    /// dictionaries need not share.)
    struct RouteApart: Equatable {
        var members: JSONValue
        var route: Route?
    }

    static func routeApart(_ row: JSONValue) throws -> RouteApart {
        guard case .object(var members) = row, let route = members.removeValue(forKey: "route") else { return RouteApart(members: row) }
        return RouteApart(members: .object(members), route: try JSONDecoder().decode(Route.self, from: route.jsonData()))
    }

    /// `value` with each member, at every depth, removed, `null`, or replaced by a value of each JSON type.
    static func damaged(_ value: JSONValue) -> [JSONValue] {
        let replacements: [JSONValue] = [.null, .bool(true), .int(7), .double(0.5), .string("x"), .array([]), .object([:]),
                                         .object(["text": .object(["_0": .object(["text": .string("t")])])])]
        var results: [JSONValue] = []
        switch value {
        case .object(let members):
            for (key, member) in members {
                var removed = members
                removed[key] = nil
                results.append(.object(removed))
                for replacement in replacements where replacement != member {
                    var replaced = members
                    replaced[key] = replacement
                    results.append(.object(replaced))
                }
                for inner in damaged(member) {
                    var replaced = members
                    replaced[key] = inner
                    results.append(.object(replaced))
                }
            }
            var extra = members
            extra["unknown"] = .int(1)
            results.append(.object(extra))
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                for inner in damaged(element) {
                    var replaced = elements
                    replaced[index] = inner
                    results.append(.array(replaced))
                }
            }
        default:
            break
        }
        return results
    }
}
