import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Calls `onChange` soon after the database file, its WAL or its rollback journal is written:
/// inotify on Linux, DispatchSource file-system events on Apple platforms. Other connections'
/// commits are noticed within milliseconds instead of at the next poll. `nil` where the platform
/// offers neither; polling `PRAGMA data_version` stays the fallback either way.
///
/// `@unchecked Sendable`: its only mutable state is `sources`, set in `init` and read by `stop()`
/// under `lock`; event handlers run on `queue` and touch nothing else.
final class _FileChangeMonitor: @unchecked Sendable {
    private let lock = NSLock()
    private var sources: [any DispatchSourceProtocol] = []
    private let queue = DispatchQueue(label: "livelist.file-change-monitor")

    init?(path: String, onChange: @escaping @Sendable () -> Void) {
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        let names: Set<String> = [url.lastPathComponent, url.lastPathComponent + "-wal", url.lastPathComponent + "-journal"]
        #if canImport(Glibc)
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { return nil }
        let mask = UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_TO)
        guard inotify_add_watch(descriptor, directory, mask) >= 0 else {
            close(descriptor)
            return nil
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        source.setEventHandler {
            var buffer = [UInt8](repeating: 0, count: 16_384)
            var relevant = false
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                guard count > 0 else { break }
                var offset = 0
                // struct inotify_event { int wd; uint32_t mask, cookie, len; char name[]; }
                while offset + 16 <= count {
                    let length = buffer.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self)) }
                    let nameBytes = buffer[(offset + 16)..<min(count, offset + 16 + length)].prefix { $0 != 0 }
                    if names.contains(String(decoding: nameBytes, as: UTF8.self)) { relevant = true }
                    offset += 16 + length
                }
            }
            if relevant { onChange() }
        }
        source.setCancelHandler { close(descriptor) }
        source.resume()
        sources = [source]
        #elseif canImport(Darwin)
        // The directory (the WAL and the journal come and go), and the files that exist now.
        for target in [directory, path, path + "-wal"] {
            let descriptor = open(target, O_EVTONLY)
            guard descriptor >= 0 else { continue }
            let source = DispatchSource.makeFileSystemObjectSource(fileDescriptor: descriptor, eventMask: [.write, .extend], queue: queue)
            source.setEventHandler { onChange() }
            source.setCancelHandler { close(descriptor) }
            source.resume()
            sources.append(source)
        }
        guard !sources.isEmpty else { return nil }
        #else
        return nil
        #endif
    }

    /// Stops watching; no call to `onChange` starts after it returns.
    func stop() {
        let sources = lock.withLock {
            defer { self.sources = [] }
            return self.sources
        }
        for source in sources { source.cancel() }
        queue.sync {}
    }

    deinit {
        for source in sources { source.cancel() }
    }
}
