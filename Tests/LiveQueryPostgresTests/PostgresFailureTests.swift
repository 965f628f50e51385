import LiveQueryCore
@testable import LiveQueryPostgres
import Testing

/// A PostgreSQL query's failures in the terms every engine shares (what a `ListController`, the
/// server and an app match), with PostgreSQL's own error kept.
@Suite("PostgreSQL failures as LiveQueryError")
struct PostgresFailureTests {
    @Test("missing tables and columns keep their cases; a timeout is busy with its statement; the rest is the engine's own; each keeps postgresError")
    func failuresMapToSharedCases() {
        guard case .unknownTable("track") = LiveQueryError(PostgresLiveQueryError.unknownTable("track")) else {
            Issue.record("unknownTable")
            return
        }
        guard case .unknownColumn(table: "track", column: "title") = LiveQueryError(.unknownColumn(table: "track", column: "title")) else {
            Issue.record("unknownColumn")
            return
        }
        let timedOut = LiveQueryError(.timedOut(sql: "SELECT 1", after: .seconds(5)))
        guard case let .databaseBusy(failure) = timedOut else {
            Issue.record("timedOut is \(timedOut)")
            return
        }
        #expect(failure.sql == "SELECT 1")
        #expect("\(timedOut)".contains("no answer from PostgreSQL"))
        guard case .timedOut? = timedOut.postgresError else {
            Issue.record("postgresError of a timeout")
            return
        }
        let lost = LiveQueryError(.slotLost("livelist_1"))
        guard case .underlying = lost, case .slotLost("livelist_1")? = lost.postgresError else {
            Issue.record("slotLost is \(lost)")
            return
        }
        #expect(!lost.isTerminal)
        #expect(LiveQueryError.databaseGone("x").postgresError == nil)
    }

    @Test("a slot in use is said to be in use, not a missing privilege; a privilege or a limit is named as such")
    func slotHints() {
        #expect(PostgresLiveQueryError.slotHint("55006").hasPrefix("another connection holds the slot"))
        #expect(PostgresLiveQueryError.slotHint("42710").hasPrefix("another connection holds the slot"))
        #expect(PostgresLiveQueryError.slotHint("42501") == "the role needs the REPLICATION attribute")
        #expect(PostgresLiveQueryError.slotHint("53400").contains("max_replication_slots"))
        #expect(!PostgresLiveQueryError.slotHint("55006").contains("REPLICATION attribute"))
    }
}
