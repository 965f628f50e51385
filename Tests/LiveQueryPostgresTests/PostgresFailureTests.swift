import LiveQueryCore
import LiveQueryPostgres
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
}
