import Foundation
import NIOCore

/// Every connection a server has accepted and not yet closed — WebSockets, HTTP requests, and
/// sockets that have not finished their request head — so that shutdown can close the ones
/// still open when its drain time is over, whatever their peers do.
///
/// `@unchecked Sendable`: `channels` is read and written under `lock` only.
final class _OpenChannels: @unchecked Sendable {
    private let lock = NSLock()
    private var channels: [ObjectIdentifier: any Channel] = [:]

    /// Tracks `channel` until it closes.
    func insert(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        lock.withLock { channels[key] = channel }
        channel.closeFuture.whenComplete { [weak self] _ in
            self?.lock.withLock { _ = self?.channels.removeValue(forKey: key) }
        }
    }

    /// Closes every connection still open.
    func closeAll() {
        let open = lock.withLock { Array(channels.values) }
        for channel in open { channel.close(promise: nil) }
    }
}
