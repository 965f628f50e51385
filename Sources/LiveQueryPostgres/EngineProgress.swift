import NIOConcurrencyHelpers

/// The engine's progress, shared with its queries: every commit that ends at or before `applied`
/// is applied to every open query that is following.
final class EngineProgress: Sendable {
    private let stored = NIOLockedValueBox<UInt64>(0)

    var applied: UInt64 {
        get { stored.withLockedValue { $0 } }
        set { stored.withLockedValue { $0 = max($0, newValue) } }
    }
}
