import Foundation

/// A small, fast, reproducible random number generator (SplitMix64), so that a randomized test or
/// benchmark prints one seed that reproduces it exactly on every platform.
///
/// ```swift
/// import ListTesting
///
/// func shuffled(_ rows: [Int]) -> [Int] {
///     var random = SeededRandomNumberGenerator(seed: 42)
///     return rows.shuffled(using: &random)
/// }
/// ```
public struct SeededRandomNumberGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// Creates a generator whose sequence is fully determined by `seed`.
    public init(seed: UInt64) { state = seed }

    /// The seed of a randomized test run: the `LIVELIST_SEED` environment variable's when it is
    /// set (to repeat a run), else a random one — printed as `<name>: seed <seed>`, so that a
    /// failure's output says how to repeat it.
    public static func testSeed(_ name: String) -> UInt64 {
        let seed = ProcessInfo.processInfo.environment["LIVELIST_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
        print("\(name): seed \(seed) (LIVELIST_SEED=\(seed) repeats it)")
        return seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
