import MallocInterposerSwift

/// Counts heap allocations of a piece of work through the malloc interposer that `livelist` links.
/// When the interposer did not take over `malloc` (it must come before libc in the symbol lookup
/// order, or be preloaded), counting reports `nil` rather than a wrong zero.
enum AllocationCounter {
    static func count(_ body: () -> Void) -> Int? {
        MallocInterposerSwift.initialize()
        MallocInterposerSwift.reset()
        MallocInterposerSwift.hook()
        body()
        MallocInterposerSwift.unhook()
        let statistics = MallocInterposerSwift.getStatistics()
        return isActive ? statistics.mallocCount : nil
    }

    /// Whether allocations are actually seen: one known allocation must be counted.
    static let isActive: Bool = {
        MallocInterposerSwift.initialize()
        MallocInterposerSwift.reset()
        MallocInterposerSwift.hook()
        let probe = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16)
        probe.deallocate()
        MallocInterposerSwift.unhook()
        let seen = MallocInterposerSwift.getStatistics().mallocCount > 0
        MallocInterposerSwift.reset()
        return seen
    }()
}
