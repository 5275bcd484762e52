import BridgeTestSupport
import Foundation
import IMVendors
import Testing
import PostgresTestSupport

/// `imbridge` is one self-contained executable: copied alone into an empty directory and run there with the
/// source checkout hidden (an empty tmpfs mounted over it in a private mount namespace, `unshare`), it shows
/// its version and commit, lists its shipped mappings, checks a config and runs the demo.
@Suite(.serialized) struct SelfContainedBinaryTests {
    static var checkout: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    }

    /// Runs the copied binary with `arguments` in `directory`, the checkout hidden; returns status and output.
    /// Where the environment forbids mount namespaces (a container without the privilege), the binary runs
    /// from `directory` with the checkout still in place — the code no longer has a path that reads it — and
    /// the test says so in its output.
    func runHidden(_ binary: String, _ arguments: [String], in directory: String) async throws -> (status: Int32, output: String) {
        let quoted = ([binary] + arguments).map { "'\($0)'" }.joined(separator: " ")
        let marker = "__checkout_hidden__"
        let script = "mount -t tmpfs none '\(Self.checkout)' && test -z \"$(ls -A '\(Self.checkout)')\" && echo \(marker) && cd '\(directory)' && exec \(quoted)"
        let unshare = "/usr/bin/unshare"
        let hidden = FileManager.default.isExecutableFile(atPath: unshare)
            ? try await Subprocess.run(unshare, ["--mount", "--map-root-user", "sh", "-c", script]) : (status: 127, output: "no \(unshare)")
        if hidden.output.hasPrefix(marker) { return (hidden.status, String(hidden.output.dropFirst(marker.count + 1))) }
        print("SelfContainedBinaryTests: cannot hide the checkout here (\(hidden.output.prefix(200))); running from \(directory) only")
        return try await Subprocess.run("/bin/sh", ["-c", "cd '\(directory)' && exec \(quoted)"])
    }

    @Test func theBinaryAloneRunsCheckMappingsAndTheDemo() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-alone-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let binary = directory + "/imbridge"
        try FileManager.default.copyItem(atPath: try BridgeProcess.binary(), toPath: binary)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["imbridge"], "nothing beside the binary")

        let version = try await runHidden(binary, ["--version"], in: directory)
        let expected = try String(contentsOfFile: Self.checkout + "/VERSION", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(version.status == 0, "\(version.output)")
        #expect(version.output.hasPrefix("imbridge \(expected) (commit "), "\(version.output)")
        #expect(version.output.range(of: #"\(commit ([0-9a-f]{12}|unknown)\)"#, options: .regularExpression) != nil, "\(version.output)")

        let mappings = try await runHidden(binary, ["mappings", "check"], in: directory)
        #expect(mappings.status == 0, "\(mappings.output)")
        for vendor in Vendors.names {
            #expect(mappings.output.contains("shipped:\(vendor).yaml"), "the shipped \(vendor) table is inside the binary: \(mappings.output)")
        }

        let config = """
            store: \(directory)/bridge.sqlite
            listen: 127.0.0.1:0
            backends:
              wk:
                adapter: wukong
                im_url: http://127.0.0.1:1
                webhook_secret: alone-secret
              rc:
                adapter: rongcloud
                app_key: alone-key
                app_secret: alone-secret
                api_url: http://127.0.0.1:1
            routes:
              - from: "wk:group:*"
                to: "rc:group:*"
            """
        try config.write(toFile: directory + "/bridge.yaml", atomically: true, encoding: .utf8)
        let check = try await runHidden(binary, ["check", "--config", "bridge.yaml"], in: directory)
        #expect(check.status == 0, "\(check.output)")

        let demo = try await runHidden(binary, ["demo"], in: directory)
        #expect(demo.status == 0, "\(demo.output.suffix(3000))")
        #expect(demo.output.contains("0 dead letters"), "\(demo.output.suffix(3000))")
    }

    /// The optimized build is what users run, and the tests run a debug one: a miscompile the debug build
    /// does not have goes unnoticed there. Swift 6.3's optimized build crashed on the first relayed message
    /// (a task-local of a function type, `WriteGate.check`) while every test passed. `make test` builds
    /// `imbridge` in release and names it in `IMBRIDGE_RELEASE_BINARY`; this runs its demo (a relay each
    /// way, edits, recalls, expansions, custom content) and wants every step done.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["IMBRIDGE_RELEASE_BINARY"] != nil, "make test sets IMBRIDGE_RELEASE_BINARY"))
    func theReleaseBuildRunsTheDemo() async throws {
        let binary = ProcessInfo.processInfo.environment["IMBRIDGE_RELEASE_BINARY"]!
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-release-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let demo = try await Subprocess.run("/bin/sh", ["-c", "cd '\(directory)' && exec '\(binary)' demo"])
        #expect(demo.status == 0, "\(demo.output.suffix(3000))")
        #expect(!demo.output.contains("crashed"), "\(demo.output.suffix(3000))")
        #expect(demo.output.contains("0 dead letters"), "\(demo.output.suffix(3000))")
        #expect(!demo.output.contains("✘"), "\(demo.output.suffix(3000))")
    }
}
