import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ListDiff
import LiveQueryCore

/// Calls `onChange` soon after the database file, its WAL or its rollback journal is written:
/// inotify on Linux, DispatchSource file-system events on Apple platforms. Other connections'
/// commits are noticed within milliseconds instead of at the next poll. `nil` where the platform
/// offers neither; polling `PRAGMA data_version` stays the fallback either way.
///
/// `@unchecked Sendable`: its only mutable state is `sources`, a `Locked` value set in `init` and
/// taken by `stop()`, only touched under its lock (Dispatch does not mark its sources Sendable, so
/// neither is the box); event handlers run on `queue` and touch nothing else.
final class FileChangeMonitor: @unchecked Sendable {
    private let sources = Locked<[any DispatchSourceProtocol]>([])
    private let queue = DispatchQueue(label: "livelist.file-change-monitor")

    init?(path: String, onChange: @escaping @Sendable () -> Void) {
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        let names = [url.lastPathComponent, url.lastPathComponent + "-wal", url.lastPathComponent + "-journal"].map { Array($0.utf8) }
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
            // On the stack: the handler runs on a dispatch thread that otherwise allocates nothing
            // (a heap buffer there costs the process a malloc arena).
            let relevant = withUnsafeTemporaryAllocation(byteCount: 4_096, alignment: 8) { buffer -> Bool in
                var relevant = false
                while true {
                    let count = read(descriptor, buffer.baseAddress, buffer.count)
                    guard count > 0 else { break }
                    var offset = 0
                    // struct inotify_event { int wd; uint32_t mask, cookie, len; char name[]; }
                    while offset + 16 <= count {
                        let length = Int(buffer.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                        let name = UnsafeRawBufferPointer(rebasing: buffer[(offset + 16)..<min(count, offset + 16 + length)])
                        let bytes = name.prefix { $0 != 0 }
                        if names.contains(where: { $0.elementsEqual(bytes) }) { relevant = true }
                        offset += 16 + length
                    }
                }
                return relevant
            }
            if relevant { onChange() }
        }
        source.setCancelHandler { close(descriptor) }
        source.resume()
        sources.withLock { $0 = [source] }
        #elseif canImport(Darwin)
        // The directory (the WAL and the journal come and go), and the files that exist now.
        for target in [directory, path, path + "-wal"] {
            let descriptor = open(target, O_EVTONLY)
            guard descriptor >= 0 else { continue }
            let source = DispatchSource.makeFileSystemObjectSource(fileDescriptor: descriptor, eventMask: [.write, .extend], queue: queue)
            source.setEventHandler { onChange() }
            source.setCancelHandler { close(descriptor) }
            source.resume()
            sources.withLock { $0.append(source) }
        }
        guard !sources.withLock({ $0.isEmpty }) else { return nil }
        #else
        return nil
        #endif
    }

    /// Stops watching; no call to `onChange` starts after it returns.
    func stop() {
        let sources = self.sources.withLock { sources in
            defer { sources = [] }
            return sources
        }
        for source in sources { source.cancel() }
        queue.sync {}
    }

    deinit {
        for source in sources.withLock({ $0 }) { source.cancel() }
    }
}
