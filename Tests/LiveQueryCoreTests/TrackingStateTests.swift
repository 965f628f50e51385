import Testing
@testable import LiveQueryCore

/// The core's decisions, without a database: events in, actions out.
@Suite("Tracking state")
struct TrackingStateTests {
    @Test("a transaction's touched rows are re-read at its commit, once; a rollback forgets them")
    func rowsAtCommit() {
        var state = TrackingState(isBuilding: false, refetchThreshold: 10)
        state.touched(3)
        state.touched(1)
        state.touched(3)
        let result1 = state.committed()
        #expect(result1 == .reread([1, 3]))
        let result2 = state.committed()
        #expect(result2 == .none)
        state.touched(7)
        state.rolledBack()
        let result3 = state.committed()
        #expect(result3 == .none)
    }

    @Test("past the threshold a transaction refetches, and stops wanting rows")
    func threshold() {
        var state = TrackingState(isBuilding: false, refetchThreshold: 2)
        let first = state.touched(1), second = state.touched(2), third = state.touched(3)
        #expect(first && second && !third)
        #expect(!state.wantsRows)
        let fourth = state.touched(4)
        #expect(!fourth)
        let result4 = state.committed()
        #expect(result4 == .refetch(.tooManyRowsChanged(threshold: 2)))
        #expect(state.wantsRows)
    }

    @Test("the first reason for a refetch wins; rows touched before it do not matter")
    func firstReasonWins() {
        var state = TrackingState(isBuilding: false, refetchThreshold: 10)
        state.touched(1)
        state.needsRefetch(.tableChanged("album"))
        state.needsRefetch(.undescribedChanges)
        state.touched(2)
        let result5 = state.committed()
        #expect(result5 == .refetch(.tableChanged("album")))
    }

    @Test("after a failure the next commit refetches to catch up, even one that touched nothing; a refetch clears it")
    func recovery() {
        var state = TrackingState(isBuilding: false, refetchThreshold: 10)
        state.failed()
        #expect(state.nothingCommittedElsewhere() == .refetch(.recovering))
        state.touched(5)
        let result6 = state.committed()
        #expect(result6 == .refetch(.recovering))
        state.refetched()
        let result7 = state.committed()
        #expect(result7 == .none)
        #expect(state.nothingCommittedElsewhere() == .none)
        state.failed()
        state.needsRefetch(.schemaChanged)
        let result8 = state.committed()
        #expect(result8 == .refetch(.schemaChanged))
    }

    @Test("another connection's commit re-reads its rows; after a failure it refetches instead, the lost rows with it")
    func commitsElsewhere() {
        var state = TrackingState(isBuilding: false, refetchThreshold: 10)
        #expect(state.committedElsewhere(touching: [4, 7]) == .reread([4, 7]))
        #expect(state.committedElsewhere(touching: []) == .none)
        state.failed()
        #expect(state.committedElsewhere(touching: [4]) == .refetch(.recovering))
        state.refetched()
        #expect(state.committedElsewhere(touching: [4]) == .reread([4]))
        let building = TrackingState(isBuilding: true, refetchThreshold: 10)
        #expect(building.committedElsewhere(touching: [4]) == .none, "looks wait for the first fetch")
    }

    @Test("while the first fetch is read, commits are remembered and applied when it completes")
    func building() {
        var state = TrackingState(isBuilding: true, refetchThreshold: 10)
        #expect(state.isBuilding && !state.looksForOtherCommits)
        state.touched(1)
        let result9 = state.committed()
        #expect(result9 == .none)
        state.touched(2)
        let result10 = state.committed()
        #expect(result10 == .none)
        let result11 = state.buildFinished(succeeded: true)
        #expect(result11 == .complete(then: .reread([1, 2])))
        #expect(!state.isBuilding && state.looksForOtherCommits)
        let result12 = state.buildFinished(succeeded: true)
        #expect(result12 == .abandoned)

        var untouched = TrackingState(isBuilding: true, refetchThreshold: 10)
        let result13 = untouched.buildFinished(succeeded: true)
        #expect(result13 == .complete(then: .none))

        var refetching = TrackingState(isBuilding: true, refetchThreshold: 10)
        refetching.touched(1)
        _ = refetching.committed()
        refetching.needsRefetch(.undescribedChanges)
        _ = refetching.committed()
        refetching.needsRefetch(.schemaChanged)
        _ = refetching.committed()
        let result14 = refetching.buildFinished(succeeded: true)
        #expect(result14 == .complete(then: .refetch(.undescribedChanges)))
    }

    @Test("a failed first fetch leaves the query behind; a new request or a stop abandons the build")
    func buildEnds() {
        var failed = TrackingState(isBuilding: true, refetchThreshold: 10)
        let result15 = failed.buildFinished(succeeded: false)
        #expect(result15 == .failed)
        let result16 = failed.committed()
        #expect(result16 == .refetch(.recovering))

        var replaced = TrackingState(isBuilding: true, refetchThreshold: 10)
        replaced.requestChanged()
        let result17 = replaced.buildFinished(succeeded: true)
        #expect(result17 == .abandoned)

        var stopped = TrackingState(isBuilding: true, refetchThreshold: 10)
        let result18 = stopped.stop()
        #expect(result18)
        let stopsAgain = stopped.stop()
        #expect(!stopsAgain)
        let result19 = stopped.buildFinished(succeeded: true)
        #expect(result19 == .abandoned)
    }

    @Test("a stopped query wants no rows and does nothing at commit")
    func stopped() {
        var state = TrackingState(isBuilding: false, refetchThreshold: 10)
        state.touched(1)
        let result20 = state.stop()
        #expect(result20)
        #expect(!state.wantsRows && !state.looksForOtherCommits)
        state.needsRefetch(.undescribedChanges)
        let result21 = state.committed()
        #expect(result21 == .none)
        state.failed()
        #expect(state.nothingCommittedElsewhere() == .none)
    }

    @Test("reasons read as sentences, and a request's shapes are all named")
    func reasons() {
        #expect(RefetchReason.request([.groupBy, .aggregate("count")]).description == "GROUP BY; an aggregate function (count)")
        #expect(RefetchReason.anotherConnection(.noChangeLog).description == "another connection committed")
        #expect(RefetchReason.anotherConnection(.untrackedTables(["album"])).description
            == "another connection committed; album not tracked by the change log")
        #expect(LiveUpdatePath.refetch(reason: .tooManyRowsChanged(threshold: 5)).description
            == "refetch (more than 5 rows changed in one transaction)")
    }
}
