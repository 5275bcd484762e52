import Dispatch
import Foundation

/// Waits for SIGINT or SIGTERM (the signals are then handled here instead of killing the process).
enum ShutdownSignal {
    static func wait() async {
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        var sources: [any DispatchSourceSignal] = []
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .main)
            source.setEventHandler { continuation.yield(signalNumber) }
            source.resume()
            sources.append(source)
        }
        var iterator = stream.makeAsyncIterator()
        _ = await iterator.next()
        sources.forEach { $0.cancel() }
    }
}
