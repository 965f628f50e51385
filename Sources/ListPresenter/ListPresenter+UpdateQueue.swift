import ListDiff

extension ListPresenter {
    /// The one step function of the state machine: when idle, run the next stage in flight, else
    /// the next update, else a deferred scroll.
    @inlinable
    func advance() {
        guard phase == .idle, let target else { return }
        if !remainingStages.isEmpty {
            runNextStage(on: target)
        } else if needsUpdate {
            needsUpdate = false
            startUpdate(on: target)
        } else if !pendingReconfigures.isEmpty {
            let ids = pendingReconfigures
            pendingReconfigures = []
            reconfigureVisible(ids, on: target)
        } else if let scroll = pendingScroll {
            pendingScroll = nil
            performScroll(to: scroll.id, animated: scroll.animated, on: target)
        }
    }

    @inlinable
    func startUpdate(on target: any ListTarget) {
        let presented = compose()
        let changeset = Changeset(from: displayed, to: presented)
        guard !changeset.isEmpty else {
            _displayed = presented   // content-equal, but hand the data source the newest values
            advance()
            return
        }
        // Nothing on display yet (first load): there is nothing to animate from.
        if displayed.sections.isEmpty || changeset.changes.count > configuration.reloadThreshold || !target.isOnScreen {
            reload(to: presented, on: target)
            advance()
            return
        }
        _statistics.changesets += 1
        stagesTarget = presented
        remainingStages = changeset.stages[...]
        runNextStage(on: target)
    }

    @inlinable
    func runNextStage(on target: any ListTarget) {
        guard let stage = remainingStages.popFirst() else { return }
        let reconfigureOnly = configuration.prefersReconfigure && target.supportsReconfigure
            && stage.changes.itemReloads.count == stage.changes.count
        var context = captureContext(on: target)
        context.replaced = replacedRows(by: stage, reconfiguring: reconfigureOnly)
        _phase = .applyingBatch
        _statistics.batches += 1
        target.performBatch({
            // The data source switches inside the batch, right before the view is told (§3.1).
            self._displayed = stage.snapshot
            if reconfigureOnly {
                target.recordReconfigures(stage.changes.itemReloads)
            } else {
                target.recordChanges(stage.changes)
            }
        }, completion: { [weak self] in
            self?.stageDidFinish(context)
        })
    }

    @inlinable
    func stageDidFinish(_ context: BatchContext<Row.ID>) {
        guard let target else { return }
        restore(context, on: target)
        _phase = .idle
        // New data arrived during the animation: the next diff starts from this valid intermediate
        // state and covers the remaining stages too, so they are dropped rather than replayed.
        if needsUpdate { remainingStages = [] }
        advance()
    }

    /// Re-reads the visible cells of `ids` in one batch; cells off screen will read fresh content
    /// when they appear anyway.
    @inlinable
    func reconfigureVisible(_ ids: Set<Item.ID>, on target: any ListTarget) {
        let visible = target.visibleItemPaths.filter { path in
            displayed.row(at: path)?.item.map { ids.contains($0.id) } ?? false
        }
        guard !visible.isEmpty else {
            advance()
            return
        }
        // A one-stage batch of reloads over what is displayed: runNextStage turns it into
        // reconfigures where the target supports them.
        var reloads = ListChanges()
        reloads.itemReloads = visible
        stagesTarget = displayed
        remainingStages = [ChangesetStage(changes: reloads, snapshot: displayed)]
        runNextStage(on: target)
    }

    /// Large or off-screen changes: one reload, with the anchor and the selection restored.
    @inlinable
    func reload(to presented: Displayed, on target: any ListTarget) {
        let context = captureContext(on: target)
        stagesTarget = presented
        _displayed = presented
        _statistics.reloads += 1
        target.reloadAll()
        target.layoutNow()
        restore(context, on: target)
    }
}
