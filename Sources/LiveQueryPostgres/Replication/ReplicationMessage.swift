import Foundation

/// One message of PostgreSQL's streaming replication protocol in CopyBoth mode, as the server
/// sends it inside a CopyData message: WAL data (for a logical slot, one `pgoutput` message) or a
/// keepalive. Parsed and built without I/O (`ReplicationStreamTests`).
///
/// Format: PostgreSQL's documentation, "Streaming Replication Protocol". `package`: the
/// replication fuzz target reads messages too.
package enum ReplicationMessage: Equatable, Sendable {
    /// `w`: WAL data starting at `start`; `serverEnd` is the end of the WAL on the server.
    case data(start: PostgresLSN, serverEnd: PostgresLSN, payload: [UInt8])
    /// `k`: the sender has sent everything it decoded before `sentThrough`; `replyNow` asks for a
    /// status update at once (or the connection is ended after `wal_sender_timeout`).
    case keepalive(sentThrough: PostgresLSN, replyNow: Bool)

    /// Parses one CopyData payload from the server.
    /// - Complexity: O(bytes).
    package static func parse(_ bytes: [UInt8]) throws(PgOutputFormatError) -> ReplicationMessage {
        var reader = ByteReader(bytes)
        switch try reader.byte() {
        case UInt8(ascii: "w"):
            let start = PostgresLSN(try reader.uint64())
            let end = PostgresLSN(try reader.uint64())
            _ = try reader.uint64()   // the server's clock
            return .data(start: start, serverEnd: end, payload: Array(bytes[25...]))
        case UInt8(ascii: "k"):
            let sent = PostgresLSN(try reader.uint64())
            _ = try reader.uint64()   // the server's clock
            let reply = try reader.byte()
            guard reader.isAtEnd else { throw reader.error("a keepalive of \(bytes.count) bytes, not 18") }
            return .keepalive(sentThrough: sent, replyNow: reply == 1)
        case let tag:
            throw reader.error("a replication message of type \(tag)", back: 1)
        }
    }

    /// A standby status update (`r`): everything before `received` arrived and is kept by the
    /// process (the slot may forget it, and a new stream on it starts after it), every commit that
    /// ends at or before `applied` is applied to the queries (shown as `replay_lsn` in
    /// `pg_stat_replication`); `replyNow` asks the server for a keepalive at once.
    static func statusUpdate(received: PostgresLSN, applied: PostgresLSN, replyNow: Bool, at date: Date = Date()) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(ascii: "r")]
        bytes.reserveCapacity(34)
        // Microseconds since 2000-01-01 UTC, PostgreSQL's epoch.
        let clock = Int64((date.timeIntervalSince1970 - 946_684_800) * 1_000_000)
        for value in [received.value, received.value, applied.value, UInt64(bitPattern: clock)] {
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        }
        bytes.append(replyNow ? 1 : 0)
        return bytes
    }
}
