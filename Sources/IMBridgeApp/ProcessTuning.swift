import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Process-wide settings `imbridge` applies before it starts any thread (and the benchmark process,
/// which hosts a bridge, applies them too, so that it measures what `imbridge run` does).
public enum ProcessTuning {
    /// glibc's malloc gives a thread that finds the arena it used locked a new arena, up to eight per
    /// core, and memory freed into one arena is not reused by the others. The bridge's threads (event
    /// loops, the cooperative pool, the store's queues) each touch a share of every message, so its
    /// resident memory grew with the number of arenas, not with the work: one arena per core (at least
    /// two) took a 1,000-conversation relay's peak from 123 to 112 MiB (docs/performance.md). An
    /// operator's `MALLOC_ARENA_MAX` wins (glibc reads it itself). True when the limit was set here.
    @discardableResult
    public static func limitMallocArenas() -> Bool {
        #if canImport(Glibc)
        guard getenv("MALLOC_ARENA_MAX") == nil else { return false }
        // `mallopt` and M_ARENA_MAX are declared in <malloc.h>, which the Glibc module does not import:
        // the function is looked up in the process (RTLD_DEFAULT), the constant is the header's value.
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(nil, "mallopt") else { return false }
        let arenaMax: Int32 = -8
        return unsafeBitCast(symbol, to: Mallopt.self)(arenaMax, Int32(max(2, ProcessInfo.processInfo.activeProcessorCount))) == 1
        #else
        return false
        #endif
    }
}
