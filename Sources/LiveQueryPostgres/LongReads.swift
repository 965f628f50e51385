import NIOPosix

/// Where the connections that read the rest of a large first fetch live: a thread of their own.
///
/// Such a connection decodes its rows, and builds the query's index from them, on its event
/// loop as they arrive (``PostgresSession/decoded(_:_:_:)``). On the shared event loops that work
/// held up the rounds' connections that happened to share its loop — a round's `BEGIN` went
/// unanswered for over ``PostgresSession/controlTimeout`` under ThreadSanitizer, and the query failed
/// with the connection taken for dead. On a loop of their own, long reads only compete for a core.
enum LongReads {
    /// One thread for the whole process, like NIO's own singleton group: never shut down.
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
}
