import Foundation
import ListDiff
import LiveQueryCore
import PostgresNIO

/// A row of a query as the index needs it, decoded where it arrives (only this is held, not the
/// row): its identity, its sort values (or section value), and its content token.
struct ReadRow: Sendable {
    var identity: SQLValue
    /// The base table's key, which changes name the row by: the identity itself unless another
    /// column identifies the rows (``PostgresPlan/key``).
    var key: SQLValue
    var values: [SQLValue]
    var token: UInt64
    /// The SELECT's columns, as a payload read gives them, when the read carried them and was
    /// asked to keep them (``PostgresPlan/valuesInReads``).
    var contents: [SQLValue]? = nil
}

/// Numbers the rows of one statement in the order they arrive (one statement's rows are decoded
/// one after the other, by one task).
final class Ordinal: Sendable {
    private let value = Locked<Int64>(0)

    func next() -> Int64 {
        value.withLock { value in
            defer { value += 1 }
            return value
        }
    }
}

/// How a query's rows become index entries and values: one rule for the fetch, the re-reads and
/// the contents, so that a row's token is the same wherever it is read.
enum PostgresRows {
    /// At most this many rows' contents are kept from one read (see
    /// ``PostgresQueryRunner/keptContents(of:)``).
    static let contentsKept = 1_000
    /// The most identities one re-read or lookup statement names: more are read in several.
    static let rereadChunk = 5_000

    /// `values` cut into runs of at most ``rereadChunk``, one statement each; none when empty.
    static func chunks<T>(_ values: [T]) -> [[T]] {
        stride(from: 0, to: values.count, by: rereadChunk).map { Array(values[$0..<min($0 + rereadChunk, values.count)]) }
    }

    /// The index's view of a row, from its first `columns` columns: identity, sort values, then
    /// the content that makes the token (``PostgresPlan/RowShape``).
    /// `keepingContents`: also keep the SELECT's columns when the row carries them.
    static func decode(_ row: PostgresRow, _ plan: PostgresPlan, columns: Int, skipping: Int = 0, keepingContents: Bool = false) -> ReadRow {
        var read = decodeKey(row, plan, columns: columns, skipping: skipping)
        guard keepingContents, let first = plan.valuesInReads else { return read }
        var contents: [SQLValue] = []
        contents.reserveCapacity(plan.columnNames.count)
        for (index, cell) in row.enumerated() where index - skipping >= first && index - skipping < first + plan.columnNames.count {
            contents.append(PostgresType.value(cell.bytes, oid: UInt32(truncatingIfNeeded: cell.dataType.rawValue)))
        }
        if contents.count == plan.columnNames.count { read.contents = contents }
        return read
    }

    private static func decodeKey(_ row: PostgresRow, _ plan: PostgresPlan, columns: Int, skipping: Int) -> ReadRow {
        var values: [SQLValue] = []
        var digest = ContentDigest()
        var identity = SQLValue.null
        var key: SQLValue?
        switch plan.shape {
        case let .positional(sorts, separateKey):
            values.reserveCapacity(sorts + 1)
            // The key, then the identity (separate) or the one value that is both.
            let leading = separateKey ? 2 : 1
            for (index, cell) in row.enumerated() where index >= skipping && index - skipping < columns {
                let column = index - skipping
                let oid = UInt32(truncatingIfNeeded: cell.dataType.rawValue)
                if separateKey && column == 0 {
                    key = PostgresType.value(cell.bytes, oid: oid)
                } else if column < leading {
                    identity = PostgresType.value(cell.bytes, oid: oid)
                } else if column < leading + sorts {
                    let value = PostgresType.value(cell.bytes, oid: oid)
                    values.append(value)
                    digest.combine(value)
                } else {
                    combine(cell, oid, into: &digest)
                }
            }
        case let .named(identityColumn, sectionColumn):
            for (index, cell) in row.enumerated() where index >= skipping && index - skipping < columns {
                let column = index - skipping
                let oid = UInt32(truncatingIfNeeded: cell.dataType.rawValue)
                if column == identityColumn { identity = PostgresType.value(cell.bytes, oid: oid) }
                if column == sectionColumn { values.append(PostgresType.value(cell.bytes, oid: oid)) }
                combine(cell, oid, into: &digest)
            }
        }
        return ReadRow(identity: identity, key: key ?? identity, values: values, token: digest.value)
    }

    private static func combine(_ cell: PostgresCell, _ oid: UInt32, into digest: inout ContentDigest) {
        digest.combine(word: UInt64(oid))
        if let bytes = cell.bytes {
            bytes.withUnsafeReadableBytes { digest.combine(bytes: $0) }
        } else {
            digest.combine(word: 0xFFFF_FFFF_FFFF)
        }
    }

    /// A read row as an index entry. On the refetch path (the server's order) the row key is the
    /// fetch ordinal; else the integer identity, or the row's key (an integer key itself, else one
    /// assigned per key value, `keys`) with the identity ending its sort key.
    static func entry(_ row: ReadRow, _ plan: PostgresPlan, ordinal: Int64, _ keys: inout RowKeys) -> IndexEntry {
        var values = row.values
        let rowid: Int64
        if plan.refetchReason != nil {
            rowid = ordinal
            values.append(row.identity)
        } else if plan.identityIsRowKey, case let .integer(key) = row.identity {
            rowid = key
        } else {
            rowid = keys.rowKey(for: row.key)
            values.append(row.identity)
        }
        return IndexEntry(key: SortKey(values.isEmpty ? [row.identity] : values), rowid: rowid, token: row.token)
    }

    /// The rows of `sql` as index entries, in order.
    /// - Complexity: O(rows); only the decoded rows are held while the statement runs.
    static func read(_ plan: PostgresPlan, _ sql: String, _ binding: StatementBinding, _ keys: inout RowKeys,
                     _ session: PostgresSession) async throws(PostgresLiveQueryError) -> [IndexEntry] {
        try await read(plan, sql, binding, &keys, session, keepingContents: 0).entries
    }

    /// The rows of `sql` as index entries, in order, and the contents of the first
    /// `keepingContents` of them when the statement carries them (``PostgresPlan/valuesInReads``);
    /// none when it returned more rows than that.
    /// - Complexity: O(rows); only the decoded rows, and at most `keepingContents` rows' contents,
    ///   are held while the statement runs.
    static func read(_ plan: PostgresPlan, _ sql: String, _ binding: StatementBinding, _ keys: inout RowKeys,
                     _ session: PostgresSession, keepingContents: Int) async throws(PostgresLiveQueryError)
        -> (entries: [IndexEntry], contents: [ReadRow]) {
        let keeping = plan.valuesInReads == nil ? 0 : keepingContents
        func rows<T: Sendable>(_ decode: @escaping @Sendable (PostgresRow) -> T) async throws(PostgresLiveQueryError) -> [T] {
            try await session.submit(sql, binding, decode).value()
        }
        if plan.refetchReason != nil || plan.integerKeys {
            // No key to assign: each row becomes its entry where it arrives.
            let counter = Ordinal()
            let read = try await rows { row -> (IndexEntry, ReadRow?) in
                var none = RowKeys(integerKeys: true)
                let ordinal = counter.next()
                let decoded = decode(row, plan, columns: row.count, keepingContents: ordinal < keeping)
                return (entry(decoded, plan, ordinal: ordinal, &none), decoded.contents == nil ? nil : decoded)
            }
            return (read.map(\.0), read.count > keeping ? [] : read.compactMap(\.1))
        }
        let counter = Ordinal()
        let read = try await rows { decode($0, plan, columns: $0.count, keepingContents: counter.next() < keeping) }
        return (entries(read, plan, &keys), read.count > keeping ? [] : read.filter { $0.contents != nil })
    }

    static func entries(_ rows: [ReadRow], _ plan: PostgresPlan, _ keys: inout RowKeys) -> [IndexEntry] {
        var entries: [IndexEntry] = []
        entries.reserveCapacity(rows.count)
        for (ordinal, row) in rows.enumerated() { entries.append(entry(row, plan, ordinal: Int64(ordinal), &keys)) }
        return entries
    }

    /// The SELECT's columns of the rows among `identities` (text, as the statements take them),
    /// with each row's identity and token: what ``PostgresQueryRunner/payloads(of:_:)`` checks.
    static func payloads(_ plan: PostgresPlan, identities: [String], _ session: PostgresSession)
        async throws(PostgresLiveQueryError) -> [(row: ReadRow, values: [SQLValue])] {
        var binds = plan.arguments
        binds.append(identities)
        return try await session.decoded(plan.payloadSQL, binds) { row in
            let read = decode(row, plan, columns: plan.payloadOffset)
            var values: [SQLValue] = []
            for (column, cell) in row.enumerated() where column >= plan.payloadOffset {
                values.append(PostgresType.value(cell.bytes, oid: UInt32(truncatingIfNeeded: cell.dataType.rawValue)))
            }
            return (read, values)
        }
    }
}

/// Rows read before the tracker asks for them: the seam's reads are synchronous, PostgreSQL's are
/// not, so the runner reads what the tracker's action needs first.
struct PrefetchedReads: EngineReads {
    var entries: [IndexEntry]

    func reread(_ keys: [Int64]) throws(LiveQueryError) -> [IndexEntry] {
        let wanted = Set(keys)
        return entries.filter { wanted.contains($0.rowid) }
    }

    func fetchAll(into builder: inout IndexBuilder, mayBeLarge: Bool) throws(LiveQueryError) {
        for entry in entries { builder.append(entry) }
    }
}

/// The index's row key of each value of the base table's key (``PostgresPlan/key``, which
/// changes name rows by): the integer itself for an integer primary key, else a number assigned
/// on first sight (and forgotten when the row leaves the result).
struct RowKeys: Sendable {
    let integerKeys: Bool
    private var rowKeyOfValue: [SQLValue: Int64] = [:]
    private var valueOfRowKey: [Int64: SQLValue] = [:]
    private var next: Int64 = 1

    init(integerKeys: Bool) { self.integerKeys = integerKeys }

    mutating func rowKey(for value: SQLValue) -> Int64 {
        if integerKeys, case let .integer(integer) = value { return integer }
        if let key = rowKeyOfValue[value] { return key }
        let key = next
        next += 1
        rowKeyOfValue[value] = key
        valueOfRowKey[key] = value
        return key
    }

    /// The key value of row key `key`: what a re-read names the row by.
    func value(of key: Int64) -> SQLValue? {
        integerKeys ? .integer(key) : valueOfRowKey[key]
    }

    mutating func forget(_ keys: some Sequence<Int64>) {
        guard !integerKeys else { return }
        for key in keys {
            if let value = valueOfRowKey.removeValue(forKey: key) { rowKeyOfValue[value] = nil }
        }
    }
}
