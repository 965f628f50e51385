import LiveQueryCore

/// When a live query looks again for another connection's commit after a file event. In WAL
/// mode a commit is written to the WAL (which raises file events) and then published in the
/// shared-memory index (which raises none): a look woken by the writes can come before the
/// publication, and nothing wakes the query when it happens. So every look after an event is
/// followed by another, at growing delays, until `horizon` after the event — whether it found a
/// commit or not, since one look may find the first of two commits whose writes woke it once.
/// Usually the publication follows the last write within a fraction of a millisecond; a writer
/// process preempted between the two (a loaded machine) is seen when it resumes, up to the
/// horizon, and after it by the poll (``LiveQueryOptions/dataVersionPollInterval``).
enum RecheckSchedule {
    /// The delay before each look after the first, in order.
    static let delays: [Duration] = [
        .microseconds(300), .milliseconds(1), .milliseconds(3), .milliseconds(10), .milliseconds(30),
        .milliseconds(100), .milliseconds(300), .milliseconds(600),
    ]

    /// How long after a file event looks go on: the sum of ``delays`` (about a second).
    static var horizon: Duration { delays.reduce(.zero, +) }

    /// The delay before the look that follows look number `look` (0: the one the event woke),
    /// or `nil` when the looks for this event are over.
    static func delay(after look: Int) -> Duration? {
        look >= 0 && look < delays.count ? delays[look] : nil
    }
}
