import ArgumentParser
import Foundation
import IMCore

/// How `check` and `run` report a configuration they refuse: every problem on its own line on standard
/// error (`FILE:LINE: key: reason`), then exit status 1 — no usage text, which would only hide the
/// problems. Messages come from `ConfigCheck`, which never quotes a secret nor the value of a `${NAME}`.
enum ConfigFailure {
    static func report(_ error: any Error, config: String) -> ExitCode {
        let lines: [String]
        if let error = error as? IMError {
            // In file order, as a linter lists them (a problem without a line keeps its place at the end).
            func line(_ text: String) -> Int {
                guard text.hasPrefix(config + ":") else { return .max }
                return Int(text.dropFirst(config.count + 1).prefix { $0.isNumber }) ?? .max
            }
            lines = error.message.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
                .enumerated().sorted { (line($0.element), $0.offset) < (line($1.element), $1.offset) }.map(\.element)
        } else {
            lines = ["\(config): \(error)"]
        }
        var text = "imbridge: \(config): \(lines.count == 1 ? "1 problem" : "\(lines.count) problems")\n"
        // Last guard: the credentials of any URL a line holds (docs/architecture.md, "Secrets in errors and logs").
        for line in lines { text += "  \(Redaction.text(line))\n" }
        FileHandle.standardError.write(Data(text.utf8))
        return ExitCode.failure
    }
}
