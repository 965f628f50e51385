/// A value that is only read and written while holding a lock of its own: the package's one
/// replacement for a lock beside the `var`s it guards (a `Mutex`-like box, as GRDB's `Mutex`).
///
/// Built on ``PthreadLock`` (a pthread mutex), since Synchronization's `Mutex` needs iOS 18 and the
/// package targets iOS 17. Keep each `withLock` body short and synchronous: it must not call into
/// code that could take another lock or run for long.
///
/// Sendable when its value is: a non-Sendable value (a class reference) could leave the lock
/// through what a `withLock` body returns and be shared unguarded.
package final class Locked<Value> {
    private let lock = PthreadLock()
    private var value: Value

    package init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value, and returns what it returns.
    package func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        try lock.withLock { try body(&value) }
    }
}

/// `@unchecked Sendable`: the invariant is that `value` is only touched inside `lock.withLock`
/// (it is private, and `withLock` is its one accessor), so accesses from any thread are
/// serialized by the lock; what leaves a body is a copy of a Sendable value.
extension Locked: @unchecked Sendable where Value: Sendable {}
