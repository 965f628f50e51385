import ListDiff
import NIOCore

/// Every connection a server has accepted and not yet closed — WebSockets, HTTP requests, and
/// sockets that have not finished their request head — so that shutdown can close the ones
/// still open when its drain time is over, whatever their peers do.
final class OpenChannels: Sendable {
    private let channels = Locked<[ObjectIdentifier: any Channel]>([:])

    /// Tracks `channel` until it closes.
    func insert(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        channels.withLock { $0[key] = channel }
        channel.closeFuture.whenComplete { [weak self] _ in
            _ = self?.channels.withLock { $0.removeValue(forKey: key) }
        }
    }

    /// Closes every connection still open.
    func closeAll() {
        let open = channels.withLock { Array($0.values) }
        for channel in open { channel.close(promise: nil) }
    }
}
