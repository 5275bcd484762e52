import Foundation
import IMBridgeApp
import IMLab
import IMVendors
import IMSandbox

/// A sandbox in a child process: the benchmark runs itself as `imbridge-bench _sandbox <vendor> <callback|-> [k=v…]`,
/// so the sandboxes' heaps, threads and message stores are not counted in the bridge process's RSS and
/// the two sides do not share one Swift runtime's executor.
final class SandboxProcess: @unchecked Sendable {
    let vendor: String
    let process: Process
    let baseURL: String
    private let stdin: Pipe

    /// Starts the child and waits for its `listening on URL` line.
    init(vendor: String, callbackURL: String?, options: [String: String] = [:]) throws {
        self.vendor = vendor
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = ["_sandbox", vendor, callbackURL ?? "-"] + options.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        let out = Pipe()
        let input = Pipe()
        process.standardOutput = out
        process.standardInput = input
        try process.run()
        self.process = process
        self.stdin = input
        var line = Data()
        let handle = out.fileHandleForReading
        while true {
            let byte = handle.readData(ofLength: 1)
            guard !byte.isEmpty else { throw BenchError("sandbox \(vendor) exited before listening") }
            if byte == Data("\n".utf8) { break }
            line.append(byte)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("listening on ") else { throw BenchError("sandbox \(vendor) said: \(text)") }
        baseURL = String(text.dropFirst("listening on ".count))
    }

    /// Peak and current RSS of the child (kB), from /proc/<pid>/status.
    var memory: ProcessMemory? { ProcessMemory.read(pid: process.processIdentifier) }

    func stop() {
        try? stdin.fileHandleForWriting.close()
        process.terminate()
        process.waitUntilExit()
    }

    /// The child side: serve one sandbox until the parent closes our stdin.
    static func serve(_ arguments: [String]) async throws {
        guard arguments.count >= 2, let sandbox = Vendors.named(arguments[0])?.sandbox else {
            throw BenchError("usage: _sandbox <vendor> <callback-url|-> [key=value…]")
        }
        var extra: [String: String] = [:]
        for pair in arguments.dropFirst(2) {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { extra[parts[0]] = parts[1] }
        }
        let options = SandboxOptions(host: "127.0.0.1", port: 0, appKey: BridgeLab.appKey, appSecret: BridgeLab.appSecret,
                                     callbackURL: arguments[1] == "-" ? nil : arguments[1], extra: extra)
        let server = try await sandbox.make(options)
        try await server.start()
        print("listening on \(server.baseURL)")
        fflush(nil)
        await Task.detached { while readLine() != nil {} }.value
        await server.stop()
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
