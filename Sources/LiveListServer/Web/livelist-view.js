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

import { displayText } from './livelist.js';
import { Layout } from './livelist/list-layout.js';

/** @typedef {import('./livelist/live-query.js').LiveQuery} LiveQuery */
/** @typedef {import('./livelist/live-query.js').LiveEvent} LiveEvent */
/** @typedef {import('./livelist/positions.js').Sections} Sections */
/** @typedef {import('./livelist/pending-overlay.js').DisplayedList} DisplayedList */
/** @typedef {import('./livelist/pending-overlay.js').DisplayedRow} DisplayedRow */
/** @typedef {import('./livelist/pending-overlay.js').DisplayedTransition} DisplayedTransition */
/** @typedef {import('./livelist/values.js').Value} Value */

/**
 * A row's element, with the top it was last put at.
 * @typedef {HTMLDivElement & {_top?: number | null}} RowElement
 */

/**
 * The list's state row: loading, failed (with its message), empty.
 * @typedef {{kind: 'loading' | 'empty'} | {kind: 'failed', message: string}} ListState
 */

/**
 * What a LiveListView draws with: row and header heights, rows drawn beyond the view, the length
 * of animations, how a row and a header are filled, and the grid's label.
 * @typedef {object} ViewOptions
 * @property {number} [rowHeight]
 * @property {number} [headerHeight]
 * @property {number} [margin]
 * @property {number} [animationMs]
 * @property {(element: HTMLElement, values: Value[], columns: string[], row: DisplayedRow) => void} [renderRow]
 * @property {(element: HTMLElement, key: Value) => void} [renderHeader]
 * @property {string} [label]
 */

const css = `
.ll-scroller { position: relative; overflow-y: auto; overflow-x: hidden; outline: none; contain: strict; overflow-anchor: none; }
.ll-content { position: relative; width: 100%; }
.ll-row, .ll-header, .ll-state { position: absolute; left: 0; right: 0; box-sizing: border-box; will-change: transform; }
.ll-row { display: flex; align-items: center; padding: 0 12px; border-bottom: 1px solid #eee; cursor: default; background: #fff; transition: opacity 0.18s; }
.ll-row[aria-selected="true"] { background: #dbe9ff; }
.ll-row.ll-placeholder { color: #999; }
.ll-row.pending { opacity: 0.5; }
.ll-row.ll-leaving { pointer-events: none; }
.ll-row.ll-placeholder .ll-skeleton { display: inline-block; width: 60%; height: 0.8em; border-radius: 4px; background: linear-gradient(90deg, #eee, #f6f6f6, #eee); }
.ll-header { display: flex; align-items: center; padding: 0 12px; font-weight: 600; background: #f3f4f6; color: #333; z-index: 1; }
.ll-sticky { position: sticky; top: 0; height: 0; z-index: 2; }
.ll-sticky > .ll-header { position: absolute; top: 0; }
.ll-state { display: flex; align-items: center; gap: 12px; padding: 0 12px; color: #555; background: #fafafa; }
.ll-state.ll-failed { color: #a40000; background: #fff0f0; }
`;

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
    /** @type {NonNullable<ViewOptions['renderRow']>} */
    this.renderRow = renderRow ?? ((element, values) => { element.textContent = values.map(displayText).join(' · '); });
    /** @type {NonNullable<ViewOptions['renderHeader']>} */
    this.renderHeader = renderHeader ?? ((element, key) => { element.textContent = displayText(key); });
    /** @type {string | null} */
    this.selectedKey = null;
    /** @type {number | null} */
    this.selectedPosition = null;
    /** @type {{position: number, key: string | null, offset: number} | null} the first visible row and its distance from the top */
    this.anchor = null;
    /** @type {Map<string, RowElement>} key → element */
    this.rows = new Map();
    /** @type {Map<string, HTMLDivElement>} section key JSON → element */
    this.headers = new Map();
    this.busyUntil = 0;           // an animation or a smooth scroll runs until then
    /** @type {{observedAt: number[]} | null} a render waiting for it */
    this.pending = null;
    this.pendingMoves = new Map();
    /** @type {number[]} commit → painted, ms (the server's `at`) */
    this.latencies = [];
    this.renders = 0;
    this.lastRender = 0;
    this.domWrites = 0;

    if (!document.getElementById('ll-style')) {
      const style = document.createElement('style');
      style.id = 'll-style';
      style.textContent = css;
      document.head.append(style);
    }
    this.scroller = document.createElement('div');
    this.scroller.className = 'll-scroller';
    this.scroller.style.height = '100%';
    this.scroller.setAttribute('role', 'grid');
    this.scroller.setAttribute('aria-label', label);
    this.scroller.tabIndex = 0;
    this.sticky = document.createElement('div');
    this.sticky.className = 'll-sticky';
    this.stickyHeader = document.createElement('div');
    this.stickyHeader.className = 'll-header';
    this.stickyHeader.setAttribute('aria-hidden', 'true');
    this.stickyHeader.style.height = `${headerHeight}px`;
    this.sticky.append(this.stickyHeader);
    this.content = document.createElement('div');
    this.content.className = 'll-content';
    this.state = document.createElement('div');
    this.state.className = 'll-state';
    this.state.setAttribute('role', 'row');
    this.state.style.height = `${rowHeight}px`;
    this.stateText = document.createElement('span');
    this.retryButton = document.createElement('button');
    this.retryButton.type = 'button';
    this.retryButton.className = 'll-retry';
    this.retryButton.textContent = 'Retry';
    this.retryButton.addEventListener('click', () => this.live.retry());
    this.state.append(this.stateText, this.retryButton);
    this.scroller.append(this.sticky, this.content);
    root.replaceChildren(this.scroller);

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
    const layout = this.layout;
    if (layout.sections.count === 0) return [0, 0];
    const top = this.scroller.scrollTop, bottom = top + this.scroller.clientHeight;
    return [layout.positionAt(top), Math.min(layout.sections.count, layout.positionAt(bottom) + 1)];
  }

  /**
   * Scrolls so that `position` is the first row in view (smoothly: updates wait for the end).
   * @param {number} position
   * @param {{smooth?: boolean}} options
   */
  scrollToPosition(position, { smooth = false } = {}) {
    const top = this.layout.rowTop(Math.max(0, Math.min(position, this.layout.sections.count - 1)));
    if (top === null) return;
    const target = Math.max(0, top - this.layout.headerHeight);
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
    if (this.anchor && this.anchor.key) {
      const position = displayed.positionOf(this.anchor.key);
      if (position !== null) this.anchor.position = position;
    }
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
    if (this.anchor) {
      // The first visible row, or the first one after it that is still in the list.
      let position = this.anchor.position, next = transition.newPosition(position) ?? (this.anchor.key ? displayed.positionOf(this.anchor.key) : null), steps = 0;
      const survived = next !== null;
      while (next === null && position + 1 < transition.from.count && steps < 200) { position += 1; steps += 1; next = transition.newPosition(position); }
      this.anchor.position = next ?? Math.min(this.anchor.position, Math.max(0, displayed.count - 1));
      if (!survived) this.anchor.key = displayed.row(this.anchor.position)?.key ?? null;
    }
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
    const layout = this.layout;
    const [first] = this.visibleRange;
    const top = layout.rowTop(first);
    const row = this.live.displayed.row(first);
    this.anchor = top === null ? null : { position: first, key: row ? row.key : null, offset: top - this.scroller.scrollTop };
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
    this.content.style.height = `${Math.max(layout.height, this.#listState() ? this.rowHeight : 0)}px`;
    this.scroller.setAttribute('aria-rowcount', String(model.count));
    this.scroller.setAttribute('aria-busy', model.version === null ? 'true' : 'false');
    this.#keepAnchor(layout, model);
    const [first, end] = this.visibleRange;
    const from = Math.max(0, first - this.margin), to = Math.min(model.count, end + this.margin);
    live.showRows(first, end);
    const state = this.#renderState();

    // Rows: reuse by identity; placeholders for rows whose identity or values are on their way.
    const old = new Map(this.rows);
    const next = new Map();
    const now = performance.now();
    let animated = false;
    for (let position = from; position < to; position++) {
      const row = model.row(position);
      const key = row ? row.key : `#${position}`;
      const kept = old.get(key);
      const existed = kept !== undefined;
      if (existed) old.delete(key);
      const element = kept ?? this.#newRow();
      animated = this.#renderRow(element, { position, row, top: layout.rowTop(position), existed, state, animate }) || animated;
      next.set(key, element);
    }
    animated = this.#removeRows(old, animate) || animated;
    this.rows = next;
    this.#renderHeaders(layout, from, to);
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
    if (!this.anchor || model.count === 0) return;
    if (this.anchor.key !== null) {
      const position = model.positionOf(this.anchor.key);
      if (position !== null) this.anchor.position = position;
    }
    const top = layout.rowTop(Math.min(this.anchor.position, model.count - 1));
    if (top === null) return;
    const wanted = Math.max(0, top - this.anchor.offset);
    if (Math.abs(this.scroller.scrollTop - wanted) >= 1) {
      this.scroller.scrollTop = wanted;
      this.ownScrollTop = this.scroller.scrollTop;
    }
  }

  /** The list's state row (loading, failed with its retry, empty), in the DOM while there is one; returns the state. */
  #renderState() {
    const state = this.#listState();
    if (state) {
      this.state.className = `ll-state ll-${state.kind}`;
      this.state.setAttribute('aria-rowindex', '1');
      this.state.style.transform = 'translateY(0px)';
      const text = state.kind === 'failed' ? `⚠ ${state.message}` : state.kind === 'loading' ? 'Loading…' : 'Nothing here';
      if (this.stateText.textContent !== text) this.stateText.textContent = text;
      this.retryButton.hidden = state.kind !== 'failed';
    }
    if (state && this.state.parentNode !== this.content) this.content.append(this.state);
    if (!state && this.state.parentNode) this.state.remove();
    return state;
  }

  /**
   * One row's element at its position: its content when its values changed (or a placeholder),
   * its selection and place, and the move or fade-in that gets it there. Returns whether it animates.
   * @param {RowElement} element
   * @param {{position: number, row: DisplayedRow | null, top: number | null, existed: boolean, state: ListState | null, animate: boolean}} place
   */
  #renderRow(element, { position, row, top, existed, state, animate }) {
    const loaded = row !== null && row.values !== null;
    const stamp = loaded ? `${row.stamp}` : '';
    if (element.dataset.stamp !== stamp || !existed) {
      this.domWrites += 1;
      element.dataset.stamp = stamp;
      element.classList.toggle('ll-placeholder', !loaded);
      if (loaded) {
        element.dataset.id = row.key;
        this.renderRow(element, row.values, this.live.displayed.columns, row);
      } else {
        delete element.dataset.id;
        const skeleton = document.createElement('span');
        skeleton.className = 'll-skeleton';
        skeleton.setAttribute('aria-label', 'loading');
        element.replaceChildren(skeleton);
      }
    }
    // A row an effect of the client's own mutation shows or changes, not yet the server's.
    const pending = loaded && row.pending === true;
    element.classList.toggle('pending', pending);
    if ((element.getAttribute('aria-busy') === 'true') !== pending) {
      if (pending) element.setAttribute('aria-busy', 'true'); else element.removeAttribute('aria-busy');
    }
    element.setAttribute('aria-rowindex', String(position + 1 + (state ? 1 : 0)));
    const selected = this.selectedKey !== null && row !== null && row.key === this.selectedKey;
    element.setAttribute('aria-selected', selected ? 'true' : 'false');
    element.tabIndex = selected ? 0 : -1;
    element.dataset.position = String(position);
    let animated = false;
    const previousTop = element._top;
    if (previousTop !== top) {
      element.style.transform = `translateY(${top}px)`;
      element._top = top;
      if (animate && existed && previousTop !== undefined && previousTop !== null && top !== null && Math.abs(previousTop - top) < 4 * this.scroller.clientHeight) {
        element.animate([{ transform: `translateY(${previousTop}px)` }, { transform: `translateY(${top}px)` }],
          { duration: this.animationMs, easing: 'ease-out' });
        animated = true;
      }
    }
    if (!existed) {
      this.content.append(element);
      if (animate && row !== null && this.renders > 1) {
        element.animate([{ opacity: 0, offset: 0 }], { duration: this.animationMs });   // to its own opacity (a pending row's is lower)
        animated = true;
      }
    }
    return animated;
  }

  /**
   * Rows gone: deleted ones in view fade out; others leave at once. Returns whether any fades.
   * @param {Map<string, RowElement>} gone
   * @param {boolean} animate
   */
  #removeRows(gone, animate) {
    let animated = false;
    for (const [key, element] of gone) {
      if (animate && !key.startsWith('#') && element._top !== undefined) {
        element.classList.add('ll-leaving');
        element.setAttribute('aria-hidden', 'true');
        element.removeAttribute('aria-selected');
        element.tabIndex = -1;
        const fading = element.animate([{ opacity: 0 }], { duration: this.animationMs, fill: 'forwards' });
        fading.onfinish = () => element.remove();
        animated = true;
      } else {
        element.remove();
      }
    }
    return animated;
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

  /** @returns {RowElement} */
  #newRow() {
    const element = document.createElement('div');
    element.className = 'll-row';
    element.setAttribute('role', 'row');
    element.style.height = `${this.rowHeight}px`;
    return element;
  }

  /**
   * @param {Layout} layout
   * @param {number} from
   * @param {number} to
   */
  #renderHeaders(layout, from, to) {
    const sections = layout.sections;
    const next = new Map();
    if (layout.headerHeight > 0 && sections.count > 0) {
      const firstPath = sections.path(Math.min(from, sections.count - 1)), lastPath = sections.path(Math.max(0, Math.min(to, sections.count) - 1));
      for (let section = firstPath ? firstPath[0] : 0; lastPath && section <= lastPath[0]; section++) {
        const key = JSON.stringify(sections.keys[section]);
        let element = this.headers.get(key);
        if (element) this.headers.delete(key); else {
          element = document.createElement('div');
          element.className = 'll-header';
          element.setAttribute('role', 'row');
          element.style.height = `${layout.headerHeight}px`;
          element.dataset.key = key;
          this.renderHeader(element, sections.keys[section]);
          this.content.append(element);
        }
        element.style.transform = `translateY(${layout.headerTop(section)}px)`;
        next.set(key, element);
      }
      // The header of the section at the top stays in view.
      const [first] = this.visibleRange;
      const path = sections.path(first);
      // Only once the section's own header has scrolled out (never over the list's state row).
      if (path && this.scroller.scrollTop > layout.headerTop(path[0])) {
        this.renderHeader(this.stickyHeader, sections.keys[path[0]]);
        this.stickyHeader.style.display = '';
      } else {
        this.stickyHeader.style.display = 'none';
      }
    } else {
      this.stickyHeader.style.display = 'none';
    }
    for (const element of this.headers.values()) element.remove();
    this.headers = next;
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
    const layout = this.layout;
    const top = layout.rowTop(position);
    if (top === null) return;
    const viewTop = this.scroller.scrollTop + layout.headerHeight, viewBottom = this.scroller.scrollTop + this.scroller.clientHeight;
    if (top < viewTop) this.scroller.scrollTop = top - layout.headerHeight;
    else if (top + this.rowHeight > viewBottom) this.scroller.scrollTop = top + this.rowHeight - this.scroller.clientHeight;
    this.#scrolled();
  }
}
