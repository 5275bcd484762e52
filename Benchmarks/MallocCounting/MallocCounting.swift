// Nothing here: this target exists so that `swift build` builds the malloc interposer's library
// (libMallocInterposerSwift.so), which `imbridge-bench costs` expects preloaded (Benchmarks/CostBench.swift).
