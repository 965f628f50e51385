import ListDiff

/// The engine's progress, shared with its queries: every commit that ends at or before `applied`
/// is applied to every open query that is following.
final class EngineProgress: Sendable {
    private let stored = Locked<UInt64>(0)

    var applied: UInt64 {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = max($0, newValue) } }
    }
}
