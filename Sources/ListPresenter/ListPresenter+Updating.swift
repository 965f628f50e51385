import ListDiff

extension ListPresenter {
    @usableFromInline
    func _receive(changeset: Changeset<SectionModel, Item>, differ: @escaping PendingWork<SectionModel, Item>.Differ) {
        noteArrival()
        if let before = changeset.before?.stateID, before == model.stateID {
            if !changeset.isEmpty || changeset.after?.stateID != before { pending.changesets.append(changeset) }
        } else if let after = changeset.after {
            pending.target = .plain(after, differ)
            pending.changesets = []
        }
        advance()
    }

    @usableFromInline
    func _receive(state: Model, differ: @escaping PendingWork<SectionModel, Item>.Differ) {
        noteArrival()
        pending.target = .plain(state, differ)
        pending.changesets = []
        advance()
    }

    /// A change that arrives while another waits is merged with it.
    private func noteArrival() {
        if pending.hasModelWork { statistics.coalescedUpdates += 1 }
    }

    /// The one step function of the state machine: when idle, start the next work — model
    /// changes, then state rows, then cells to reconfigure, then a deferred scroll.
    func advance() {
        guard case .idle = state, let target else { return }
        if pending.hasModelWork {
            startModelChange(on: target)
        } else if pending.blocksChanged {
            pending.blocksChanged = false
            reconcileBlocks(on: target)
        } else if !pending.reconfigures.isEmpty {
            let ids = pending.reconfigures
            pending.reconfigures = []
            reconfigureDisplayed(ids, on: target)
        } else if let scroll = pending.scroll {
            pending.scroll = nil
            performScroll(to: scroll.id, animated: scroll.animated, on: target)
        }
    }

    // MARK: - Model changes

    /// Takes the pending model work as one changeset from the model shown: the queued changesets
    /// composed (no diff), or a diff when a plain state arrived.
    private func startModelChange(on target: any ListTarget) {
        var changeset: Changeset<SectionModel, Item>?
        if let pendingTarget = pending.target {
            pending.target = nil
            switch pendingTarget {
            case let .replacement(model):
                reload(to: model, on: target)
            case let .plain(model, differ):
                if shownModel.sectionCount == 0 && displayed.sectionCount == 0 {
                    reload(to: model, on: target)   // nothing on display yet: nothing to animate from
                } else {
                    let diff = differ(shownModel.snapshot, model.snapshot)
                    statistics.fullDiffs += 1
                    // Staged again over the models themselves, so the data source reads views, not copies.
                    changeset = Changeset(changes: diff.changes, from: shownModel, to: model, duplicates: diff.duplicates)
                }
            }
        }
        if !pending.changesets.isEmpty {
            let queued = pending.changesets
            pending.changesets = []
            var composed = changeset ?? queued[0]
            for next in (changeset == nil ? queued.dropFirst() : queued[...]) {
                if let merged = composed.composed(with: next) {
                    composed = merged
                } else if let after = next.after {
                    composed = Changeset(changes: Changeset(from: shownModel.snapshot, to: after.snapshot).changes, from: shownModel, to: after)
                    statistics.fullDiffs += 1
                }
            }
            if changeset == nil { statistics.directChangesets += 1 }
            changeset = composed
        }
        guard let changeset, let after = changeset.after else {
            advance()
            return
        }
        guard !changeset.isEmpty else {
            shownModel = after
            displayed = PresentedList(model: after, blocks: displayed.blocks)
            pending.blocksChanged = true
            advance()
            return
        }
        if changeset.changes.count > configuration.reloadThreshold || !target.isOnScreen {
            reload(to: after, on: target)
            advance()
            return
        }
        statistics.changesets += 1
        let blocks = displayed.blocks
        let stages = changeset.stages.map { stage in
            PresentedStage(changes: Self.translate(stage.changes, sectionOffset: blocks.sectionOffset),
                           displayed: PresentedList(model: stage.state, blocks: blocks),
                           reconfigures: Self.isReloadOnly(stage.changes) && configuration.prefersReconfigure && target.supportsReconfigure)
        }
        run(stages, finalModel: after, on: target)
    }

    static func isReloadOnly(_ changes: ListChanges) -> Bool {
        !changes.itemReloads.isEmpty && changes.itemReloads.count == changes.count
    }

    /// Model indices to displayed indices: the status section, when shown, comes first; state
    /// rows trail their sections, so item indices are unchanged.
    static func translate(_ changes: ListChanges, sectionOffset offset: Int) -> ListChanges {
        guard offset != 0 else { return changes }
        var result = ListChanges()
        func shifted(_ path: ItemPath) -> ItemPath { ItemPath(section: path.section + offset, item: path.item) }
        result.sectionDeletes = changes.sectionDeletes.map { $0 + offset }
        result.sectionInserts = changes.sectionInserts.map { $0 + offset }
        result.sectionMoves = changes.sectionMoves.map { Move(from: $0.from + offset, to: $0.to + offset) }
        result.sectionReloads = changes.sectionReloads.map { $0 + offset }
        result.itemDeletes = changes.itemDeletes.map(shifted)
        result.itemInserts = changes.itemInserts.map(shifted)
        result.itemMoves = changes.itemMoves.map { Move(from: shifted($0.from), to: shifted($0.to)) }
        result.itemReloads = changes.itemReloads.map(shifted)
        return result
    }

    /// Large or off-screen changes and first states: one reload, with the anchor and the
    /// selection restored by identity.
    func reload(to model: Model, on target: any ListTarget) {
        let anchors = captureAnchors(on: target)
        let selected = selectedItemIDs
        shownModel = model
        displayed = PresentedList(model: model, blocks: desiredBlocks(for: model))
        statistics.reloads += 1
        target.reloadAll()
        target.layoutNow()
        restoreAnchor(anchors, on: target) { displayed.path(ofItem: $0) }
        reselect(selected, on: target)
    }

    // MARK: - Batches

    func run(_ stages: [PresentedStage], finalModel: Model?, on target: any ListTarget) {
        guard !stages.isEmpty else {
            advance()
            return
        }
        state = .applying(Batch(stages: stages[...], finalModel: finalModel, token: 0, timeout: nil, context: StageContext()))
        runNextStage(on: target)
    }

    private func runNextStage(on target: any ListTarget) {
        guard case var .applying(batch) = state, let stage = batch.stages.popFirst() else { return }
        batch.context = captureContext(on: target)
        nextToken += 1
        let token = nextToken
        batch.token = token
        batch.timeout = scheduleTimeout(for: token)
        batch.inFlight = (stage.changes, stage.reconfigures)
        state = .applying(batch)
        statistics.batches += 1
        target.performBatch({
            // The data source switches inside the batch, right before the view is told (§3.1).
            self.displayed = stage.displayed
            if stage.reconfigures {
                target.recordReconfigures(stage.changes.itemReloads)
            } else {
                target.recordChanges(stage.changes)
            }
        }, completion: { [weak self] in
            self?.stageDidFinish(token: token, timedOut: false, changes: stage.changes, reconfigured: stage.reconfigures)
        })
    }

    private func stageDidFinish(token: Int, timedOut: Bool, changes: ListChanges, reconfigured: Bool) {
        guard case let .applying(batch) = state, batch.token == token, let target else { return }
        batch.timeout?.cancel()   // the stage is over, however it ended
        if timedOut { statistics.timedOutBatches += 1 }
        restore(batch.context, after: changes, reconfigured: reconfigured, on: target)
        if !batch.stages.isEmpty {
            runNextStage(on: target)
            return
        }
        state = .idle
        if let finalModel = batch.finalModel {
            shownModel = finalModel
            resolveSelectionInTransit(except: batch.context.deselected, on: target)
            pending.blocksChanged = true
        }
        advance()
    }

    /// Starts the clock on a batch or scroll animation: if its completion has not come when the
    /// time is up, it is treated as done, so a view that never reports cannot freeze the list.
    /// The caller keeps the task in the state it guards and cancels it when that work ends.
    func scheduleTimeout(for token: Int) -> Task<Void, Never>? {
        guard let timeout = configuration.completionTimeout else { return nil }
        return Task { @MainActor [weak self] in
            do {
                try await Task.sleep(for: timeout)
            } catch {
                return
            }
            self?.timeIsUp(for: token)
        }
    }

    private func timeIsUp(for token: Int) {
        switch state {
        case let .applying(batch) where batch.token == token:
            // The view applied the stage's changes when the batch opened; only their animation's
            // end is missing. The anchor and the selection follow them as at a completion (a
            // selected row the stage deleted is reported dropped).
            stageDidFinish(token: token, timedOut: true, changes: batch.inFlight.changes, reconfigured: batch.inFlight.reconfigures)
        case let .scrolling(scrollToken, _) where scrollToken == token:
            statistics.timedOutScrolls += 1
            becomeIdle()
            advance()
        default:
            break
        }
    }

    /// Ends the work in flight: its time-out is cancelled, so no clock outlives what it guards.
    func becomeIdle() {
        state.timeout?.cancel()
        state = .idle
    }

    /// A new target: the work in flight is dropped with its time-out. A batch's model lands at
    /// once — the new target shows ``displayed`` with a reload — so that ``model``, the model
    /// shown and what is displayed agree again, and later changesets start from where the view is.
    func dropWorkInFlight() {
        if let finalModel = state.modelInFlight {
            shownModel = finalModel
            displayed = PresentedList(model: finalModel, blocks: desiredBlocks(for: finalModel))
        }
        becomeIdle()
    }

    // MARK: - Cells to reconfigure

    /// Re-reads the cells of `ids` in one batch wherever they are displayed, not only the visible
    /// ones: a view holds cells prepared ahead of a scroll (UIKit's prefetched cells, a headless
    /// view's margin) and shows them as they are when they scroll in — a view without a cell for
    /// a row only notes the reconfigure. Rows no longer displayed are skipped.
    private func reconfigureDisplayed(_ ids: Set<Item.ID>, on target: any ListTarget) {
        let paths = ids.compactMap { displayed.path(ofItem: .item($0)) }.sorted()
        guard !paths.isEmpty else {
            advance()
            return
        }
        var changes = ListChanges()
        changes.itemReloads = paths
        let reconfigures = configuration.prefersReconfigure && target.supportsReconfigure
        run([PresentedStage(changes: changes, displayed: displayed, reconfigures: reconfigures)], finalModel: nil, on: target)
    }
}
