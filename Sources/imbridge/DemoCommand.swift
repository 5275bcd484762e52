import ArgumentParser
import Foundation
import IMBridgeApp
import IMLab
import IMVendors

/// `imbridge demo`: two sandboxes and a bridge in one process; exits 0 only if everything arrived.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo", abstract: "Run a WuKong and a RongCloud sandbox with a bridge between them and a scripted conversation.")

    func run() async throws {
        let passed = try await Demo.run { line in FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
        if !passed { throw ExitCode(1) }
    }
}
