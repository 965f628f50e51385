#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LiveQueryCore

/// Which file sits at a path (device and inode): a connection keeps reading the file it opened
/// even after another one replaces it at the path, so a live query compares identities to tell.
struct DatabaseFileIdentity: Equatable, Sendable {
    var device: UInt64
    var inode: UInt64

    /// The identity of the file at `path`, or `nil` when there is none.
    static func of(_ path: String) -> DatabaseFileIdentity? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return DatabaseFileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// Whether `path` names a file on disk (not an in-memory or temporary database).
    static func isFile(_ path: String) -> Bool {
        !path.isEmpty && path != ":memory:" && !path.hasPrefix("file::memory:")
    }
}
