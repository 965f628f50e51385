#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Android)
import Android
#elseif canImport(WinSDK)
import WinSDK
#endif

/// A mutual-exclusion lock for ListDiff's few shared caches, without Foundation: the module
/// imports nothing, and Synchronization's `Mutex` needs macOS 15 / iOS 18.
///
/// The platform lock lives at a heap address of its own, which never moves (a stored property's
/// address is not guaranteed to stay put); the lock is non-copyable, so it is freed once.
struct PthreadLock: ~Copyable {
    #if canImport(WinSDK)
    private let handle: UnsafeMutablePointer<SRWLOCK>
    #else
    private let handle: UnsafeMutablePointer<pthread_mutex_t>
    #endif

    init() {
        handle = .allocate(capacity: 1)
        #if canImport(WinSDK)
        InitializeSRWLock(handle)
        #else
        handle.initialize(to: pthread_mutex_t())
        pthread_mutex_init(handle, nil)
        #endif
    }

    deinit {
        #if !canImport(WinSDK)
        pthread_mutex_destroy(handle)
        #endif
        handle.deinitialize(count: 1)
        handle.deallocate()
    }

    /// Runs `body` while holding the lock.
    borrowing func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        #if canImport(WinSDK)
        AcquireSRWLockExclusive(handle)
        defer { ReleaseSRWLockExclusive(handle) }
        #else
        pthread_mutex_lock(handle)
        defer { pthread_mutex_unlock(handle) }
        #endif
        return try body()
    }
}
