/// A small deterministic random number generator (SplitMix64) for reproducible fuzz tests: the same
/// seed gives the same sequence on every platform and run, unlike `SystemRandomNumberGenerator`.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// `count` random bytes.
    public mutating func bytes(_ count: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(count)
        while out.count < count {
            var word = next()
            for _ in 0..<min(8, count - out.count) {
                out.append(UInt8(truncatingIfNeeded: word))
                word >>= 8
            }
        }
        return out
    }

    /// `bytes` with `flips` random bytes replaced, some bytes dropped or duplicated: a mutation of a valid input.
    public mutating func mutate(_ input: [UInt8], flips: Int) -> [UInt8] {
        var out = input
        for _ in 0..<flips where !out.isEmpty {
            let index = Int.random(in: 0..<out.count, using: &self)
            switch Int.random(in: 0..<4, using: &self) {
            case 0: out[index] = UInt8.random(in: 0...255, using: &self)
            case 1: out.remove(at: index)
            case 2: out.insert(out[index], at: index)
            default: out[index] = [UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: "\""), UInt8(ascii: "["), 0, UInt8(ascii: "&"),
                                   UInt8(ascii: "=")].randomElement(using: &self)!
            }
        }
        return out
    }
}
