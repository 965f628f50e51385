import CLibPQ
import Foundation
import ListDiff
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A replication connection (`replication=database`) through libpq: its commands
/// (`IDENTIFY_SYSTEM`, `CREATE_REPLICATION_SLOT`, SQL), then the CopyBoth stream that
/// `START_REPLICATION` opens, read and written without blocking. Used by one thread only — the
/// stream's (``ReplicationStream``) — but ``cancel()``, which any thread may call.
///
/// `@unchecked Sendable`: `connection` is only used on the stream's thread; `canceller` is a
/// `Locked` value, set there and used by ``cancel()`` under its lock (libpq's cancel objects are
/// made for other threads; a pointer is not Sendable, so neither is the box).
final class ReplicationConnection: @unchecked Sendable {
    private var connection: OpaquePointer?
    private let canceller = Locked<OpaquePointer?>(nil)

    /// Connects (blocking, within the `connect_timeout` of `conninfo`).
    init(conninfo: String) throws(PostgresLiveQueryError) {
        guard let made = PQconnectdb(conninfo) else { throw .replicationStream(.init(message: "libpq could not allocate a connection")) }
        connection = made
        guard PQstatus(made) == CONNECTION_OK else {
            let failure = Self.failure(of: made, result: nil)
            PQfinish(made)
            connection = nil
            throw .replicationStream(failure)
        }
        canceller.withLock { $0 = PQgetCancel(made) }
    }

    deinit { close() }

    /// Closes the connection (PostgreSQL drops a temporary slot with it).
    func close() {
        canceller.withLock { canceller in
            if let canceller { PQfreeCancel(canceller) }
            canceller = nil
        }
        if let connection { PQfinish(connection) }
        connection = nil
    }

    /// Asks the server to cancel the command in progress (a slot's creation waiting for old
    /// transactions to end): from any thread.
    func cancel() {
        // Under the lock for the whole round trip to the server (longer than `Locked` asks of a
        // body), as before: `close()` must not free the cancel object while `PQcancel` uses it.
        // `PQcancel` takes no lock of its own (libpq makes it safe even in a signal handler).
        canceller.withLock { canceller in
            guard let canceller else { return }
            var buffer = [CChar](repeating: 0, count: 256)
            _ = PQcancel(canceller, &buffer, Int32(buffer.count))
        }
    }

    /// Runs a command or a query (blocking) and returns its rows as text (`nil` for NULL).
    func run(_ command: String) throws(PostgresLiveQueryError) -> [[String?]] {
        guard let connection else { throw .connectionClosed }
        guard let result = PQexec(connection, command) else { throw .replicationStream(Self.failure(of: connection, result: nil)) }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK:
            var rows: [[String?]] = []
            for row in 0..<PQntuples(result) {
                rows.append((0..<PQnfields(result)).map { column in
                    PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column))
                })
            }
            return rows
        default:
            throw .replicationStream(Self.failure(of: connection, result: result))
        }
    }

    /// Sends `START_REPLICATION …` and switches to the CopyBoth stream, read without blocking.
    func startStreaming(_ command: String) throws(PostgresLiveQueryError) {
        guard let connection else { throw .connectionClosed }
        guard let result = PQexec(connection, command) else { throw .replicationStream(Self.failure(of: connection, result: nil)) }
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_COPY_BOTH else { throw .replicationStream(Self.failure(of: connection, result: result)) }
        guard PQsetnonblocking(connection, 1) == 0 else { throw .replicationStream(Self.failure(of: connection, result: nil)) }
    }

    /// The socket to wait on.
    var socket: Int32 { connection.map { PQsocket($0) } ?? -1 }

    /// Reads what the socket holds (after it polled readable).
    func consumeInput() throws(PostgresLiveQueryError) {
        guard let connection else { throw .connectionClosed }
        guard PQconsumeInput(connection) == 1 else { throw .replicationStream(Self.failure(of: connection, result: nil)) }
    }

    /// The next complete CopyData message read, `nil` when none is (yet).
    func nextMessage() throws(PostgresLiveQueryError) -> [UInt8]? {
        guard let connection else { throw .connectionClosed }
        var buffer: UnsafeMutablePointer<CChar>?
        let length = PQgetCopyData(connection, &buffer, 1)
        if length > 0, let buffer {
            defer { PQfreemem(buffer) }
            return buffer.withMemoryRebound(to: UInt8.self, capacity: Int(length)) { Array(UnsafeBufferPointer(start: $0, count: Int(length))) }
        }
        if length == 0 { return nil }
        // -1: the server ended the stream (its error, if any, is the command's result); -2: a failure.
        var failure = Self.failure(of: connection, result: nil)
        while let result = PQgetResult(connection) {
            if PQresultStatus(result) == PGRES_FATAL_ERROR { failure = Self.failure(of: connection, result: result) }
            PQclear(result)
        }
        if failure.message.isEmpty { failure.message = "the server ended the replication stream" }
        throw .replicationStream(failure)
    }

    /// Queues `bytes` as a CopyData message and sends what it can; whether some output is still
    /// waiting for the socket to be writable (then call ``flush()`` when it is).
    func send(_ bytes: [UInt8]) throws(PostgresLiveQueryError) -> Bool {
        guard let connection else { throw .connectionClosed }
        let queued = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { PQputCopyData(connection, $0.baseAddress, Int32($0.count)) }
        }
        guard queued == 1 else { throw .replicationStream(Self.failure(of: connection, result: nil)) }
        return try flush()
    }

    /// Sends queued output; whether some is still waiting for the socket.
    func flush() throws(PostgresLiveQueryError) -> Bool {
        guard let connection else { throw .connectionClosed }
        switch PQflush(connection) {
        case 0: return false
        case 1: return true
        default: throw .replicationStream(Self.failure(of: connection, result: nil))
        }
    }

    private static func failure(of connection: OpaquePointer, result: OpaquePointer?) -> PostgresReplicationFailure {
        if let result, let text = PQresultErrorMessage(result), text.pointee != 0 {
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            return PostgresReplicationFailure(message: Self.trimmed(String(cString: text)), sqlState: state)
        }
        let text = PQerrorMessage(connection).map { String(cString: $0) } ?? ""
        return PostgresReplicationFailure(message: Self.trimmed(text), sqlState: nil)
    }

    /// libpq's messages end with a newline and may start with `ERROR:  `.
    private static func trimmed(_ message: String) -> String {
        var text = message.trimmingCharacters(in: .whitespacesAndNewlines)
        for prefix in ["ERROR:  ", "FATAL:  "] where text.hasPrefix(prefix) { text.removeFirst(prefix.count) }
        return text
    }
}

/// What PostgreSQL (or libpq) said on the replication connection.
public struct PostgresReplicationFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server's (or libpq's) message.
    public var message: String
    /// The SQLSTATE, when the server sent one (`42704`: no such slot; `55006`: the slot is in use).
    public var sqlState: String?

    /// A failure with `message`.
    public init(message: String, sqlState: String? = nil) {
        self.message = message
        self.sqlState = sqlState
    }

    /// The message, and the SQLSTATE when there is one.
    public var description: String { message + (sqlState.map { " (SQLSTATE \($0))" } ?? "") }
}
