import Foundation
import ListDiff
import LiveListWire
import LiveQueryCore
import Logging
import NIOCore

/// A hub's subscribers coming, moving their windows, resuming and reset.
extension HubState {
    /// The decision for a client that holds `client` (docs/PROTOCOL.md, "Resume"). Positioned
    /// versions never go back: a client is answered from its version to one at least as late,
    /// or waits while this server is behind it.
    func resumption(from client: WireVersion) -> Resumption {
        guard let result, client.epoch == versions.epoch else { return .unavailable }
        guard versions.isPositioned else {
            guard client.sequence <= sequence else { return .unavailable }
            if client.sequence == sequence { return .current }
            return buffer.firstIndex { $0.from == client.sequence }.map { .buffered(index: $0) } ?? .unavailable
        }
        if query.holds(result, at: client.sequence) { return .current }
        if client.sequence > version.sequence { return .ahead }
        if let index = buffer.lastIndex(where: { entry in entry.fromState.map { query.holds($0, at: client.sequence) } ?? false }) {
            return .buffered(index: index)
        }
        return .unavailable
    }

    func subscribe(_ subscriber: Subscriber, window: Range<Int>, resume: WireResume?, attempt: Int = 0) async {
        guard let resume, let result else {
            subscriptions.set(subscriber, sub: subscriber.sub, window: window)
            await reset(subscriber, reason: .subscribed)
            return
        }
        let plan = resume.held.range == nil ? .unavailable : resumption(from: resume.version)
        if case .ahead = plan {
            guard Self.catchUpInterval * attempt < configuration.resumeWait else {
                // Never an older list than the client's: it tries again later, here or elsewhere.
                subscriber.end(.behind, "this server has not reached version \(resume.version) within \(configuration.resumeWait): try again")
                observer.resumed(.behind)
                return
            }
            pendingResumes.insert(subscriber.key)
            schedule(.resubscribe(subscriber, window: window, resume: resume, attempt: attempt + 1), Self.catchUpInterval)
            return
        }
        if case .current = plan, resume.version.sequence > version.sequence {
            // The result also stands at the client's later version (it opened here earlier, or this
            // server followed commits that did not change it): every subscriber moves up to it.
            await announce(resume.version, observedAt: nil)
        }
        subscriptions.set(subscriber, sub: subscriber.sub, window: window)
        guard let held = resume.held.range else {
            observer.resumed(.reset)
            await reset(subscriber, reason: .versionUnavailable)
            return
        }
        let transition: Transition
        switch plan {
        case .ahead, .unavailable:
            observer.resumed(.reset)
            await reset(subscriber, reason: .versionUnavailable)
            return
        case .current:
            transition = Transition(changes: ListChanges(), old: result.shape, new: result)
        case let .buffered(first):
            let composed = Self.compose(buffer[first...].map(\.changes))
            guard composed.count <= configuration.resetThreshold else {
                observer.resumed(.reset)
                await reset(subscriber, reason: .tooFarBehind)
                return
            }
            transition = Transition(changes: composed, old: buffer[first].old, new: result)
        }
        let positions = transition.missing(window: window, held: held)
        let (rows, failed) = await readRows(at: Set(positions), in: result)
        if failed { retry([subscriber]) }
        let isCurrent = if case .current = plan { true } else { false }
        let message = transition.message(from: resume.version, to: version, rows: positions.compactMap { rows[$0] },
                                         observedAt: isCurrent ? nil : observedAt)
        observer.resumed(.resumed)
        subscriber.send(body: ServerMessage.changes(message).encodedBody(), version: version)
    }

    /// A client ahead of this server asks again this often, for `Configuration.resumeWait` in
    /// all, then gets `behind`.
    static let catchUpInterval: Duration = .milliseconds(20)

    /// A subscriber that held `from` (another live query's list: its old arguments) gets one
    /// changeset from that list to this one, with the rows of its window it lacks — or a reset
    /// when that is more changes than a reset costs.
    ///
    /// - Complexity: O(n + m) for lists of n and m rows (both read in order and matched by
    ///   identity), once per change of arguments.
    func switchIn(_ subscriber: Subscriber, window: Range<Int>, from: Detached) async {
        guard let result else { return }
        subscriptions.set(subscriber, sub: subscriber.sub, window: window)
        let changes = Changeset(from: from.result.materialized(), to: result.materialized()).changes
        guard changes.count <= configuration.resetThreshold else {
            await reset(subscriber, reason: .argumentsChanged)
            return
        }
        let transition = Transition(changes: changes, old: from.result.shape, new: result)
        let positions = transition.missing(window: window, held: from.window)
        let (rows, failed) = await readRows(at: Set(positions), in: result)
        if failed { retry([subscriber]) }
        var message = transition.message(from: from.version, to: version, rows: positions.compactMap { rows[$0] }, observedAt: nil)
        // The new arguments' list may order and filter otherwise: the client takes these in place of its own.
        message.restated = WireRestatement(order: query.order.flatMap(WireOrder.init), effects: subscriber.effects?.wire(for: query.source))
        subscriber.send(body: ServerMessage.changes(message).encodedBody(), version: version)
    }

    /// Rows went out without their values because they could not be read (the database was busy
    /// or failed): the subscribers hear of it, and get their list again once a read succeeds —
    /// no later commit is bound to bring those rows.
    func retry(_ subscribers: [Subscriber]) {
        for subscriber in subscribers {
            subscriber.send(.queryFailed, "rows of the window could not be read; retrying")
        }
        schedule(.resync(subscribers, .readFailed), configuration.readRetryDelay)
    }

    /// The changesets composed into one, neighbours first: k changesets of c changes each cost
    /// O(k·c log(k·c) log k), where composing them one after the other would cost O(k²·c).
    static func compose(_ changesets: [ListChanges]) -> ListChanges {
        var level = changesets
        while level.count > 1 {
            var next: [ListChanges] = []
            next.reserveCapacity((level.count + 1) / 2)
            var index = 0
            while index < level.count {
                next.append(index + 1 < level.count ? level[index].composed(with: level[index + 1]) : level[index])
                index += 2
            }
            level = next
        }
        return level.first ?? ListChanges()
    }

    func move(_ subscriber: Subscriber, to window: Range<Int>) async {
        guard let result, let subscription = subscriptions[subscriber.key] else { return }
        let held = subscription.window.clamped(to: 0..<result.count)
        subscriptions.set(subscriber, sub: subscriber.sub, window: window)
        let wanted = window.clamped(to: 0..<result.count)
        let positions = wanted.filter { !held.contains($0) }
        let (rows, failed) = await readRows(at: Set(positions), in: result)
        if failed { retry([subscriber]) }
        let message = WireRows(sub: 0, version: version, window: WireWindow(window), rows: positions.compactMap { rows[$0] })
        subscriber.send(body: ServerMessage.rows(message).encodedBody(), version: version)
    }

    func reset(_ subscriber: Subscriber, reason: WireResetReason) async {
        guard let result, let subscription = subscriptions[subscriber.key] else { return }
        let window = subscription.window.clamped(to: 0..<result.count)
        let (rows, failed) = await readRows(at: Set(window), in: result)
        if failed { retry([subscriber]) }
        var sections: [WireSection] = []
        sections.reserveCapacity(result.sectionCount)
        for index in 0..<result.sectionCount {
            let section = result.sectionInfo(at: index)
            sections.append(WireSection(key: section.key.wire, count: section.count))
        }
        let message = WireReset(sub: 0, version: version, reason: reason, columns: query.columnNames, sections: sections,
                                window: WireWindow(subscription.window), rows: window.compactMap { rows[$0] },
                                order: query.order.flatMap(WireOrder.init), effects: subscriber.effects?.wire(for: query.source))
        subscriber.send(body: ServerMessage.reset(message).encodedBody(), isReset: true, version: version)
    }
}
