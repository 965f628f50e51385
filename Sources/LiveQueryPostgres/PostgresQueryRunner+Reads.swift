import Foundation
import ListDiff
import LiveQueryCore
import PostgresNIO

/// Reading rows for a query: re-reads of the rows a round changed, the values of rows a list
/// asks for, and the contents kept from the query's own reads.
extension PostgresQueryRunner {
    func reread(_ rows: Set<Int64>, _ session: PostgresSession) async throws(PostgresLiveQueryError) -> PrefetchedReads {
        var entries: [IndexEntry] = []
        // By their keys (the identity, unless another column identifies the rows).
        let values = rows.compactMap { keys.value(of: $0) }
        var offset = 0
        repeat {
            let batch = values[offset..<min(offset + PostgresRows.rereadChunk, values.count)]
            offset += batch.count
            let texts = batch.map(Self.text(of:))
            // Prepared on the connection when the query has no arguments: its keys are then its
            // only parameter, typed by the statement's text.
            let binding: StatementBinding
            if plan.arguments.count == 0, plan.refetchReason == nil {
                binding = .prepared(StatementParameters(texts: texts))
            } else {
                var binds = plan.arguments
                binds.append(texts)
                binding = .text(binds)
            }
            let read = try await PostgresRows.read(plan, plan.rereadSQL, binding, &keys, session, keepingContents: PostgresRows.contentsKept)
            entries += read.entries
            keep(read.contents)
        } while offset < values.count
        // Counted where they are applied (`LiveTracker.applyRows`), once.
        return PrefetchedReads(entries: entries)
    }

    static func text(of identity: SQLValue) -> String {
        switch identity {
        case let .integer(value): String(value)
        case let .text(text): text.string
        default: identity.description
        }
    }

    /// The SELECT's columns of `rows`, read now and kept only where a row still has the content
    /// token `rows` give it: a row that changed since is left out (its commit's update reloads it).
    /// - Complexity: one statement per 5,000 rows.
    func payloads(of rows: [LiveRow<ID>], _ session: PostgresSession) async throws(PostgresLiveQueryError) -> [ID: [SQLValue]] {
        var wanted: [SQLValue: (id: ID, token: UInt64)] = [:]
        for row in rows { wanted[row.id.identityValue] = (row.id, row.version) }
        var payloads: [ID: [SQLValue]] = [:]
        guard !wanted.isEmpty else { return payloads }
        let identities = Array(wanted.keys)
        // A `UUID` identity holds its 16 bytes; the statement takes the uuid's text.
        let isUUID = plan.identity.typeOID == 2950
        for chunk in PostgresRows.chunks(identities) {
            let batch = chunk.map { identity in
                if isUUID, case let .blob(bytes) = identity, bytes.count == 16 {
                    return String(decoding: PostgresType.uuidText(bytes), as: UTF8.self)
                }
                return Self.text(of: identity)
            }
            for (row, values) in try await PostgresRows.payloads(plan, identities: batch, session) {
                let canonical = ID(identityValue: row.identity)?.identityValue ?? row.identity
                guard let wanted = wanted[canonical], wanted.token == row.token else { continue }
                payloads[wanted.id] = values
            }
        }
        return payloads
    }


    /// Keeps the contents that rows read to follow the query carried, by identity and token.
    /// Bounded: past ``PostgresRows/contentsKept`` rows it starts over.
    /// - Complexity: O(rows).
    func keep(_ rows: [ReadRow]) {
        guard !rows.isEmpty else { return }
        readContents.withLock { kept in
            if kept.count + rows.count > PostgresRows.contentsKept { kept.removeAll(keepingCapacity: true) }
            for row in rows {
                guard let contents = row.contents else { continue }
                kept[ID(identityValue: row.identity)?.identityValue ?? row.identity] = (row.token, contents)
            }
        }
    }

    /// The contents of those of `rows` that the query's own reads carried lately with the very
    /// content token `rows` give them (a refetch, a round's re-reads): the same columns a
    /// ``payloads(of:_:)`` read would give, without reading them again. The rest are `missing`.
    /// - Complexity: O(rows).
    func keptContents(of rows: [LiveRow<ID>]) -> (found: [ID: [SQLValue]], missing: [LiveRow<ID>]) {
        var found: [ID: [SQLValue]] = [:]
        var missing: [LiveRow<ID>] = []
        readContents.withLock { kept in
            for row in rows {
                if let entry = kept[row.id.identityValue], entry.token == row.version {
                    found[row.id] = entry.values
                } else {
                    missing.append(row)
                }
            }
        }
        return (found, missing)
    }
}
