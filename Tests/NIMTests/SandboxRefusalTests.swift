import Foundation
import IMCore
import IMHTTP
import IMSandbox
import NIM
import NIMSandbox
import SandboxTestSupport
import Testing

/// What the sandbox refuses because NIM refuses it (docs/adapters/nim.md, "Sandbox refusals"), with
/// hand-built requests, and which callback answers count as delivered ("Callback delivery and catch-up").
@Suite(.serialized) struct NIMSandboxRefusalTests {
    static func text(_ n: Int) -> String { String(repeating: "x", count: n) }

    @Test func recallRefusesAMessageSentToOneselfAndOverLongFields() async throws {
        try await NIMSandboxHelper.with(.init(callbacks: .none)) { sandbox in
            try await sandbox.createUsers("alice", "bob")
            func recall(_ sent: JSONValue, to: String = "bob", _ extra: [(String, String)] = []) async throws -> JSONValue {
                try await sandbox.call("POST", "/msg/recall.action", .form([
                    ("deleteMsgid", sent["data"]!["msgid"]!.stringValue!), ("timetag", sent["data"]!["timetag"]!.stringValue!),
                    ("type", "7"), ("from", "alice"), ("to", to)] + extra)).json
            }
            let toSelf = try await sandbox.sendText("note to self", from: "alice", to: "alice")
            #expect(toSelf["code"] == 200)
            #expect(try await recall(toSelf, to: "alice")["code"] == 414, "sender and receiver are one account")
            let sent = try await sandbox.sendText("one", from: "alice", to: "bob")
            for (field, length) in [("msg", 129), ("attach", 5001), ("payload", 2049)] {
                let answer = try await recall(sent, [(field, Self.text(length))])
                #expect(answer["code"] == 414 && answer["desc"] == .string("\(field) is longer than \(length - 1)"), "\(field): \(answer)")
            }
            #expect(try await recall(sent, [("msg", Self.text(128)), ("attach", Self.text(5000)), ("payload", Self.text(2048))]) == ["code": 200])
            #expect(try await sandbox.rig.messages().map(\.recalled) == [false, true])
        }
    }

    @Test func sendAttachMsgNeedsARegisteredReceiverAndKeepsThePushLimits() async throws {
        try await NIMSandboxHelper.with(.init(callbacks: .none)) { sandbox in
            try await sandbox.createUsers("alice", "bob")
            func attach(to: String = "bob", msgtype: String = "0", _ extra: [(String, String)] = []) async throws -> JSONValue {
                try await sandbox.call("POST", "/msg/sendAttachMsg.action", .form([("from", "alice"), ("msgtype", msgtype), ("to", to),
                                                                                   ("attach", #"{"name":"typing","data":{}}"#)] + extra)).json
            }
            let ghost = try await attach(to: "ghost")
            #expect(ghost == ["code": 414, "desc": "to accid not registered"])
            #expect(try await attach(to: "BOB")["code"] == 200, "accids are case-insensitive")
            for (field, value) in [("pushcontent", Self.text(501)), ("payload", Self.text(2049)), ("sound", Self.text(31)), ("save", "3"), ("save", "0")] {
                #expect(try await attach([(field, value)])["code"] == 414, "\(field)=\(value.prefix(8))")
            }
            #expect(try await attach([("pushcontent", Self.text(500)), ("payload", Self.text(2048)), ("sound", Self.text(30)), ("save", "2")]) == ["code": 200])
            #expect(try await attach([("save", "1")]) == ["code": 200])
            // A team notification still goes to a team the sender is in.
            try await sandbox.seedGroup("1001", owner: "alice", members: ["bob"])
            #expect(try await attach(to: "1001", msgtype: "1") == ["code": 200])
        }
    }

    @Test func teamAddAttachAndAccountTokenAndPropsHaveTheirLimits() async throws {
        try await NIMSandboxHelper.with(.init(callbacks: .none)) { sandbox in
            func create(_ accid: String, _ extra: [(String, String)]) async throws -> JSONValue {
                try await sandbox.call("POST", "/user/create.action", .form([("accid", accid)] + extra)).json
            }
            #expect(try await create("a1", [("token", Self.text(129))]) == ["code": 414, "desc": "token is longer than 128"])
            #expect(try await create("a1", [("props", Self.text(1025))]) == ["code": 414, "desc": "props is longer than 1024"])
            // Counted in UTF-16 units, as the sandbox's other limits: 65 emoji are 130 units.
            #expect(try await create("a2", [("token", String(repeating: "😀", count: 65))]) == ["code": 414, "desc": "token is longer than 128"])
            #expect(try await create("a1", [("token", Self.text(128)), ("props", Self.text(1024))])["code"] == 200)
            try await sandbox.createUsers("owner", "m1", "m2")
            try await sandbox.seedGroup("1002", owner: "owner", members: [])
            func add(_ member: String, attach: String) async throws -> JSONValue {
                try await sandbox.call("POST", "/team/add.action", .form([("tid", "1002"), ("owner", "owner"), ("members", #"["\#(member)"]"#),
                                                                          ("magree", "0"), ("msg", "join"), ("attach", attach)])).json
            }
            #expect(try await add("m1", attach: Self.text(513)) == ["code": 414, "desc": "attach is longer than 512"])
            #expect(try await add("m1", attach: String(repeating: "😀", count: 257)) == ["code": 414, "desc": "attach is longer than 512"])
            #expect(try await add("m2", attach: Self.text(512)) == ["code": 200])
        }
    }

    /// NIM counts a copy delivered on exactly HTTP 200, and on 500 (its Data Sync overview); a 204 is a
    /// failure, so the same copy comes again. Copies leave in order, so a later copy arriving second shows
    /// that the one before it was not sent again.
    @Test func onlyA200OrA500AnswerEndsACopysRedelivery() async throws {
        try await NIMSandboxHelper.with { sandbox in
            try await sandbox.createUsers("alice", "bob")
            let recorder = try #require(sandbox.callbacks)
            recorder.failNext(1, status: 204)
            _ = try await sandbox.sendText("204 is not 200", from: "alice", to: "bob")
            let twice = await recorder.waitFor(2)
            try #require(twice.count == 2, "a 204 is not a delivery: the copy comes again")
            let first = try JSONValue.parse(Data(twice[0].body)), again = try JSONValue.parse(Data(twice[1].body))
            #expect(first["body"] == "204 is not 200" && again == first, "the same copy again")

            recorder.failNext(1, status: 500)
            _ = try await sandbox.sendText("500 counts as delivered", from: "alice", to: "bob")
            _ = try await sandbox.sendText("next", from: "alice", to: "bob")
            let all = await recorder.waitFor(4)
            try #require(all.count >= 4)
            let bodies = try all.map { try JSONValue.parse(Data($0.body))["body"] }
            #expect(bodies == ["204 is not 200", "204 is not 200", "500 counts as delivered", "next"])
            #expect(await sandbox.vendor.waitForCallbacks())
            let stats = await sandbox.vendor.deliveryStats()
            #expect(stats?.delivered == 3 && stats?.dropped == 0)
        }
    }
}
