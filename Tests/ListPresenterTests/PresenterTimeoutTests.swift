import ListDiff
@testable import ListPresenter
import ListTesting
import Testing

/// The time-out that guards a stage or a scroll animation lives and dies with it: a stage that
/// completes, a scroll that ends and a new target cancel it, so no sleeping task outlives its work.
/// The tests read the presenter's state (no waiting, no clock): the time-out is an hour long.
@MainActor
struct PresenterTimeoutTests {
    static let configuration = Presenter.Configuration(completionTimeout: .seconds(3_600))

    /// A one-row move that also changes the row's content: a reload stage, then a move stage.
    static func twoStageChange(of model: Model) -> Model {
        PresenterDirectPathTests.oneRowMove(model, step: 1)
    }

    @Test("a stage's time-out is cancelled when the stage completes, and none is left when the batch ends")
    func stageCompletionCancelsItsTimeout() throws {
        let model = PresenterDirectPathTests.model(sections: 1, rowsPerSection: 20)
        let fixture = PresenterFixture(model, configuration: Self.configuration)
        fixture.presenter.update(Self.twoStageChange(of: model))
        let first = try #require(fixture.presenter.state.timeout)
        #expect(!first.isCancelled)

        fixture.view.finishBatchAnimations()
        #expect(fixture.presenter.phase == .applyingBatch, "the change should take two stages")
        #expect(first.isCancelled, "the first stage completed but its time-out still runs")
        let second = try #require(fixture.presenter.state.timeout)
        #expect(second != first && !second.isCancelled)

        fixture.settle()
        #expect(fixture.presenter.phase == .idle)
        #expect(second.isCancelled, "the last stage completed but its time-out still runs")
        #expect(fixture.presenter.state.timeout == nil)
        #expect(fixture.presenter.statistics.timedOutBatches == 0)
        #expect(fixture.isConsistent)
    }

    @Test("a scroll animation's time-out is cancelled when the animation ends or the user takes over")
    func scrollEndCancelsItsTimeout() throws {
        let model = PresenterDirectPathTests.model(sections: 1, rowsPerSection: 50)
        let fixture = PresenterFixture(model, configuration: Self.configuration)
        fixture.presenter.scrollToItem(id: 30, animated: true)
        let ended = try #require(fixture.presenter.state.timeout)
        fixture.view.finishScrollAnimation()
        #expect(fixture.presenter.phase == .idle)
        #expect(ended.isCancelled)

        fixture.presenter.scrollToItem(id: 5, animated: true)
        let interrupted = try #require(fixture.presenter.state.timeout)
        fixture.presenter.userDidInterruptScrolling()
        #expect(interrupted.isCancelled)
    }

    @Test("a new target cancels the time-out in flight and lands the batch's model at once")
    func newTargetCancelsTimeoutAndLandsTheModel() throws {
        let model = PresenterDirectPathTests.model(sections: 1, rowsPerSection: 20)
        let next = Self.twoStageChange(of: model)
        let fixture = PresenterFixture(model, configuration: Self.configuration)
        fixture.presenter.update(next)
        let inFlight = try #require(fixture.presenter.state.timeout)

        let (view, _) = fixture.presenter.attachHeadlessView(viewportRows: 5)
        #expect(inFlight.isCancelled)
        #expect(fixture.presenter.phase == .idle)
        #expect(fixture.displayedIDs == next.sections.flatMap(\.items).map(\.id))
        #expect(fixture.presenter.model.materialized() == next)
        view.layoutIfNeeded()
        #expect(view.violations.isEmpty)

        // The late completion of the dropped batch changes nothing.
        fixture.view.finishBatchAnimations()
        #expect(fixture.presenter.phase == .idle)
        #expect(fixture.displayedIDs == next.sections.flatMap(\.items).map(\.id))
    }
}
