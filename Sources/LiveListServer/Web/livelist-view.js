// livelist-view.js — a virtualized, animated list for a LiveQuery of livelist.js.
//
// The scroll area is as tall as the whole list (its count of rows and its section headers); only
// the rows in view and a margin are in the DOM. A changeset animates what is on screen (moves
// slide from their old place, inserts and deletes fade: FLIP), updates the rest without touching
// the DOM, and keeps the first visible row where it is when rows come or go above it. Updates that
// arrive during an animation or a programmatic smooth scroll are applied to the model at once and
// drawn, composed, when it ends. Selection follows the row's identity through moves and is dropped,
// with a `selectionchange` event, when the row leaves. Loading, failed-with-retry and empty are
// rows of the list; rows whose values are on their way are placeholders of the same height.
//
// Accessible as a grid: `aria-rowcount` is the list's count, each row has its `aria-rowindex`, and
// the selected row holds the focus.
//
// It shows the live query's displayed list (`live.displayed`): the server's rows with the pending
// effects of the client's own mutations laid over them. A row an effect shows or changes has the
// class `pending` and `aria-busy="true"`; a pending row that becomes the server's keeps its element
// (its key is its identity), and a row leaving fades out with the class `ll-leaving`.
//
// A list restored from an OfflineStore shows at once (construct the view after `store.keep`),
// with the class `ll-stale` on the scroller until the server's first message.
//
// This module follows the live query: the selection and the anchor through its changes, when to
// draw (around animations and smooth scrolls), the keys and clicks. Its DOM is drawn by
// `livelist/list-drawing.js`, its rows placed by `livelist/list-layout.js`, and where it is
// scrolled to worked out by `livelist/list-viewport.js`.

import { displayText } from './livelist.js';
import { Layout } from './livelist/list-layout.js';
import { ListDrawing } from './livelist/list-drawing.js';
import { anchorAt, anchoredTop, followAnchor, relocateAnchor, rowsInView, topRevealing, topShowingFirst } from './livelist/list-viewport.js';

/** @typedef {import('./livelist/live-query.js').LiveQuery} LiveQuery */
/** @typedef {import('./livelist/live-query.js').LiveEvent} LiveEvent */
/** @typedef {import('./livelist/pending-overlay.js').DisplayedList} DisplayedList */
/** @typedef {import('./livelist/pending-overlay.js').DisplayedTransition} DisplayedTransition */
/** @typedef {import('./livelist/list-drawing.js').ListState} ListState */
/** @typedef {import('./livelist/list-drawing.js').RowRenderer} RowRenderer */
/** @typedef {import('./livelist/list-drawing.js').HeaderRenderer} HeaderRenderer */
/** @typedef {import('./livelist/list-viewport.js').Anchor} Anchor */

/**
 * What a LiveListView draws with: row and header heights, rows drawn beyond the view, the length
 * of animations, how a row and a header are filled, and the grid's label.
 * @typedef {object} ViewOptions
 * @property {number} [rowHeight]
 * @property {number} [headerHeight]
 * @property {number} [margin]
 * @property {number} [animationMs]
 * @property {RowRenderer} [renderRow] `(element, values, columns, row)`: fills a row's element
 * @property {HeaderRenderer} [renderHeader] `(element, key)`: fills a section header's element
 * @property {string} [label]
 */

export class LiveListView extends EventTarget {
  /**
   * `root`: an element with a height; `live`: a LiveQuery (not started: the view starts it).
   * `renderRow(element, values, columns)` fills a row; `renderHeader(element, key)` a header.
   * @param {HTMLElement} root
   * @param {LiveQuery} live
   * @param {ViewOptions} options
   */
  constructor(root, live, { rowHeight = 36, headerHeight = 28, margin = 8, animationMs = 180, renderRow, renderHeader, label = 'list' } = {}) {
    super();
    this.root = root;
    this.live = live;
    this.rowHeight = rowHeight;
    this.headerHeight = headerHeight;
    this.margin = margin;
    this.animationMs = animationMs;
    /** @type {RowRenderer} */
    this.renderRow = renderRow ?? ((element, values) => { element.textContent = values.map(displayText).join(' · '); });
    /** @type {HeaderRenderer} */
    this.renderHeader = renderHeader ?? ((element, key) => { element.textContent = displayText(key); });
    /** @type {string | null} */
    this.selectedKey = null;
    /** @type {number | null} */
    this.selectedPosition = null;
    /** @type {Anchor | null} the first visible row and its distance from the top */
    this.anchor = null;
    this.busyUntil = 0;           // an animation or a smooth scroll runs until then
    /** @type {{observedAt: number[]} | null} a render waiting for it */
    this.pending = null;
    /** @type {number[]} commit → painted, ms (the server's `at`) */
    this.latencies = [];
    this.renders = 0;
    this.lastRender = 0;

    this.drawing = new ListDrawing(root, {
      rowHeight, headerHeight, animationMs, label,
      renderRow: (element, values, columns, row) => this.renderRow(element, values, columns, row),
      renderHeader: (element, key) => this.renderHeader(element, key),
    });
    this.scroller = this.drawing.scroller;
    this.drawing.retryButton.addEventListener('click', () => this.live.retry());
    this.scroller.addEventListener('scroll', () => this.#scrolled());
    this.scroller.addEventListener('click', (event) => this.#clicked(event));
    this.scroller.addEventListener('keydown', (event) => this.#key(event));
    this.scroller.addEventListener('scrollend', () => { if (this.smoothScrolling) { this.smoothScrolling = false; this.#flush(); } });
    live.onEvent = (event) => this.#event(event);
    this.scroller.classList.toggle('ll-stale', live.staleSince != null);
    this.layout = this.#makeLayout();
    live.start();
    this.#render(null);
  }

  /** The positions in view now. */
  get visibleRange() {
    return rowsInView(this.layout, this.scroller.scrollTop, this.scroller.clientHeight);
  }

  /** The rows' elements in the DOM, by key. */
  get rows() { return this.drawing.rows; }

  /** How many times a row's content was written (its values changed, or it came into the window). */
  get domWrites() { return this.drawing.domWrites; }

  /**
   * Scrolls so that `position` is the first row in view (smoothly: updates wait for the end).
   * @param {number} position
   * @param {{smooth?: boolean}} options
   */
  scrollToPosition(position, { smooth = false } = {}) {
    const target = topShowingFirst(this.layout, position);
    if (target === null) return;
    if (smooth) {
      this.smoothScrolling = true;
      this.busyUntil = Math.max(this.busyUntil, performance.now() + 1000);
      this.scroller.scrollTo({ top: target, behavior: 'smooth' });
    } else {
      this.scroller.scrollTop = target;
      this.#scrolled();
    }
  }

  /**
   * Selects the row at `position` (by its identity from now on).
   * @param {number} position
   * @param {{focus?: boolean}} options
   */
  select(position, { focus = true } = {}) {
    const row = this.live.displayed.row(position);
    this.selectedPosition = position;
    this.selectedKey = row ? row.key : null;
    this.#announceSelection('selected');
    this.#render(null);
    if (focus && this.selectedKey !== null) this.rows.get(this.selectedKey)?.focus({ preventScroll: true });
  }

  #makeLayout() {
    const displayed = this.live.displayed;
    const stateHeight = this.#listState() && displayed.count > 0 ? this.rowHeight : 0;
    return new Layout(displayed.sections, this.rowHeight, this.headerHeight, stateHeight);
  }

  /**
   * The list's state row: loading before the first state, failed with retry, empty.
   * @returns {ListState | null}
   */
  #listState() {
    const live = this.live;
    if (live.failure) return { kind: 'failed', message: live.failure.message };
    if (live.displayed.version === null) return { kind: 'loading' };
    if (live.displayed.count === 0) return { kind: 'empty' };
    return null;
  }

  /** @param {LiveEvent} event */
  #event(event) {
    // A list restored offline (`live.restore`) until the server answers: the class `ll-stale`.
    this.scroller.classList.toggle('ll-stale', this.live.staleSince != null);
    switch (event.type) {
      case 'reset':
        this.#reset();
        break;
      case 'changes':
        this.#follow(event.transition);
        this.#schedule(this.live.displayed.lastObservedAt !== null && event.changes.at !== null ? this.live.displayed.lastObservedAt : null);
        break;
      case 'rows':      // the window moved: pending rows may come or go with the rows held
      case 'pending':   // the client's own mutations' effects came or went
        this.#follow(event.transition);
        this.#schedule(null);
        break;
      default:   // state, failure, recovered, stale
        this.#schedule(null);
        this.dispatchEvent(new CustomEvent('statechange', { detail: { state: this.live.state, failure: this.live.failure, staleSince: this.live.staleSince ?? null } }));
    }
  }

  /** A new first state: the anchor and the selection stay on their rows when they are still there. */
  #reset() {
    const displayed = this.live.displayed;
    if (this.selectedKey !== null) {
      const position = displayed.positionOf(this.selectedKey);
      const held = this.selectedPosition !== null && this.selectedPosition >= displayed.regionStart && this.selectedPosition < displayed.regionEnd;
      if (position === null && held) {
        this.#dropSelection('removed');
      } else if (position !== null) {
        this.selectedPosition = position;
      }
    }
    if (this.anchor) relocateAnchor(this.anchor, displayed);
    this.#schedule(null);
  }

  /** The selection and the anchor follow their rows through one transition of the displayed list. */
  /** @param {DisplayedTransition} transition */
  #follow(transition) {
    const displayed = this.live.displayed;
    // A row deleted and inserted (its section came or went): its identity says where it went.
    if (this.selectedPosition !== null) {
      const next = transition.newPosition(this.selectedPosition) ?? (this.selectedKey !== null ? displayed.positionOf(this.selectedKey) : null);
      if (next === null) this.#dropSelection('removed'); else this.selectedPosition = next;
    }
    if (this.anchor) followAnchor(this.anchor, transition, displayed);
  }

  /** @param {string} reason */
  #dropSelection(reason) {
    const key = this.selectedKey;
    this.selectedKey = null;
    this.selectedPosition = null;
    if (key !== null) this.#announceSelection(reason, key);
  }

  /**
   * @param {string} reason
   * @param {string | null} [previous]
   */
  #announceSelection(reason, previous = null) {
    this.dispatchEvent(new CustomEvent('selectionchange', { detail: { key: this.selectedKey, position: this.selectedPosition, reason, previous } }));
  }

  /** Draws now, or once the running animation or smooth scroll ends (composed with later updates). */
  /** @param {number | null} observedAt */
  #schedule(observedAt) {
    if (this.pending) {
      if (observedAt !== null) this.pending.observedAt.push(observedAt);
      return;
    }
    this.pending = { observedAt: observedAt === null ? [] : [observedAt] };
    const now = performance.now();
    const wait = this.busyUntil - now;
    if (wait > 0 || this.smoothScrolling) {
      if (!this.smoothScrolling) setTimeout(() => this.#flush(), wait);
      return;
    }
    // An update after a quiet frame is drawn at once (painted with the next frame); updates that
    // come faster are composed into one draw per frame.
    if (now - this.lastRender > 16) {
      this.#flush();
      return;
    }
    requestAnimationFrame(() => this.#flush());
  }

  #flush() {
    const pending = this.pending;
    if (!pending) return;
    if (this.smoothScrolling) return;
    const wait = this.busyUntil - performance.now();
    if (wait > 1) { setTimeout(() => this.#flush(), wait); return; }
    this.pending = null;
    this.#render(pending.observedAt, true);
  }

  #scrolled() {
    // The scroll event of a position this view set itself: the anchor is already right (and the
    // model may have changed since, with this layout not yet drawn).
    if (this.ownScrollTop !== undefined && Math.abs(this.scroller.scrollTop - this.ownScrollTop) < 1) return;
    this.ownScrollTop = undefined;
    this.anchor = anchorAt(this.layout, this.live.displayed, this.scroller.scrollTop, this.scroller.clientHeight);
    if (!this.pending && !this.scrollFrame) {
      this.scrollFrame = requestAnimationFrame(() => { this.scrollFrame = null; this.#render(null); });
    }
  }

  /** Puts the rows in view (and the margin) in the DOM; animates moves, inserts and deletes when `animate`. */
  /**
   * @param {number[] | null} observedAt
   * @param {boolean} [animate]
   */
  #render(observedAt, animate = false) {
    this.renders += 1;
    this.lastRender = performance.now();
    const live = this.live, model = live.displayed;
    const layout = this.#makeLayout();
    this.layout = layout;
    this.drawing.size(layout, model, this.#listState() !== null);
    this.#keepAnchor(layout, model);
    const [first, end] = this.visibleRange;
    const from = Math.max(0, first - this.margin), to = Math.min(model.count, end + this.margin);
    live.showRows(first, end);
    const state = this.#listState();
    const now = performance.now();
    const animated = this.drawing.draw({ layout, model, from, to, state, columns: live.displayed.columns, selectedKey: this.selectedKey, animate });
    if (animated) this.busyUntil = Math.max(this.busyUntil, now + this.animationMs);
    this.#reportPaint(observedAt);
    this.dispatchEvent(new CustomEvent('rendered'));
  }

  /**
   * The anchor row keeps its distance from the top of the viewport: found by its identity when
   * the window holds it, else at its position carried through every changeset.
   */
  /**
   * @param {Layout} layout
   * @param {DisplayedList} model
   */
  #keepAnchor(layout, model) {
    if (!this.anchor) return;
    const wanted = anchoredTop(this.anchor, layout, model);
    if (wanted !== null && Math.abs(this.scroller.scrollTop - wanted) >= 1) {
      this.scroller.scrollTop = wanted;
      this.ownScrollTop = this.scroller.scrollTop;
    }
  }

  /** Painted at the next frame: commit → screen, by the server's clock (one machine, or NTP). */
  /** @param {number[] | null} observedAt */
  #reportPaint(observedAt) {
    if (!observedAt || !observedAt.length) return;
    requestAnimationFrame(() => {
      const painted = Date.now() * 1000;
      for (const at of observedAt) this.latencies.push((painted - at) / 1000);
      performance.mark('livelist:painted');
      this.dispatchEvent(new CustomEvent('painted', { detail: { latencies: observedAt.map((at) => (painted - at) / 1000) } }));
    });
  }

  /** @param {MouseEvent} event */
  #clicked(event) {
    const element = event.target instanceof Element ? event.target.closest('.ll-row') : null;
    if (!(element instanceof HTMLElement) || element.dataset.position === undefined) return;
    this.select(Number(element.dataset.position));
  }

  /** @param {KeyboardEvent} event */
  #key(event) {
    const model = this.live.displayed;
    if (model.count === 0) return;
    const current = this.selectedPosition ?? this.visibleRange[0];
    let target = null;
    const page = Math.max(1, Math.floor(this.scroller.clientHeight / this.rowHeight) - 1);
    switch (event.key) {
      case 'ArrowDown': target = Math.min(model.count - 1, current + (this.selectedPosition === null ? 0 : 1)); break;
      case 'ArrowUp': target = Math.max(0, current - 1); break;
      case 'PageDown': target = Math.min(model.count - 1, current + page); break;
      case 'PageUp': target = Math.max(0, current - page); break;
      case 'Home': target = 0; break;
      case 'End': target = model.count - 1; break;
      default: return;
    }
    event.preventDefault();
    this.#reveal(target);
    this.select(target);
  }

  /**
   * Scrolls as little as needed for `position` to be in view.
   * @param {number} position
   */
  #reveal(position) {
    const top = topRevealing(this.layout, position, this.scroller.scrollTop, this.scroller.clientHeight);
    if (top === null) return;
    if (top !== this.scroller.scrollTop) this.scroller.scrollTop = top;
    this.#scrolled();
  }
}
