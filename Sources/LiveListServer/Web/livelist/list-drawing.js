// list-drawing.js — a LiveListView's DOM: its stylesheet, the scroll area, and the elements of the
// rows in the window, their section headers and the list's state row (loading, failed with its
// retry, empty), put at their Layout's places. Rows are kept by identity: a row whose values did
// not change is not rewritten, a moved row slides from its old place and an inserted or deleted
// one fades (FLIP). It keeps no state of the list: the view says what to draw, frame by frame.

/** @typedef {import('./list-layout.js').Layout} Layout */
/** @typedef {import('./pending-overlay.js').DisplayedList} DisplayedList */
/** @typedef {import('./pending-overlay.js').DisplayedRow} DisplayedRow */
/** @typedef {import('./values.js').Value} Value */

/**
 * A row's element, with the top it was last put at.
 * @typedef {HTMLDivElement & {_top?: number | null}} RowElement
 */

/**
 * The list's state row: loading, failed (with its message), empty.
 * @typedef {{kind: 'loading' | 'empty'} | {kind: 'failed', message: string}} ListState
 */

/**
 * Fills a row's element with its values.
 * @typedef {(element: HTMLElement, values: Value[], columns: string[], row: DisplayedRow) => void} RowRenderer
 */

/**
 * Fills a section header's element with the section's key.
 * @typedef {(element: HTMLElement, key: Value) => void} HeaderRenderer
 */

/**
 * What a drawing is made with.
 * @typedef {object} DrawingOptions
 * @property {number} rowHeight
 * @property {number} headerHeight
 * @property {number} animationMs
 * @property {RowRenderer} renderRow
 * @property {HeaderRenderer} renderHeader
 * @property {string} label the grid's
 */

/**
 * One frame: the rows `from` up to `to` of `model` at `layout`'s places, the state row, the
 * selected row; animated (moves, fades) or not.
 * @typedef {object} Frame
 * @property {Layout} layout
 * @property {DisplayedList} model
 * @property {number} from
 * @property {number} to
 * @property {ListState | null} state
 * @property {string[]} columns
 * @property {string | null} selectedKey
 * @property {boolean} animate
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

export class ListDrawing {
  /**
   * Puts the scroll area in `root` (in place of its children), and the stylesheet in the page once.
   * @param {HTMLElement} root
   * @param {DrawingOptions} options
   */
  constructor(root, { rowHeight, headerHeight, animationMs, renderRow, renderHeader, label }) {
    this.rowHeight = rowHeight;
    this.animationMs = animationMs;
    this.renderRow = renderRow;
    this.renderHeader = renderHeader;
    /** @type {Map<string, RowElement>} key → element */
    this.rows = new Map();
    /** @type {Map<string, HTMLDivElement>} section key JSON → element */
    this.headers = new Map();
    this.draws = 0;
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
    this.state.append(this.stateText, this.retryButton);
    this.scroller.append(this.sticky, this.content);
    root.replaceChildren(this.scroller);
  }

  /**
   * The scroll area's height (the whole list's, at least the state row's) and the grid's row
   * count: set before the view scrolls, which the height may allow.
   * @param {Layout} layout
   * @param {DisplayedList} model
   * @param {boolean} hasState
   */
  size(layout, model, hasState) {
    this.content.style.height = `${Math.max(layout.height, hasState ? this.rowHeight : 0)}px`;
    this.scroller.setAttribute('aria-rowcount', String(model.count));
    this.scroller.setAttribute('aria-busy', model.version === null ? 'true' : 'false');
  }

  /**
   * Draws a frame: the state row; the rows, reusing elements by identity, with placeholders for
   * rows whose identity or values are on their way; the rows gone; the section headers. Returns
   * whether anything animates.
   * @param {Frame} frame
   */
  draw({ layout, model, from, to, state, columns, selectedKey, animate }) {
    this.draws += 1;
    this.#drawState(state);
    const old = new Map(this.rows);
    const next = new Map();
    let animated = false;
    for (let position = from; position < to; position++) {
      const row = model.row(position);
      const key = row ? row.key : `#${position}`;
      const kept = old.get(key);
      const existed = kept !== undefined;
      if (existed) old.delete(key);
      const element = kept ?? this.#newRow();
      const place = { position, row, top: layout.rowTop(position), existed, state, columns, selectedKey, animate };
      animated = this.#drawRow(element, place) || animated;
      next.set(key, element);
    }
    animated = this.#removeRows(old, animate) || animated;
    this.rows = next;
    this.#drawHeaders(layout, from, to);
    return animated;
  }

  /**
   * The list's state row (loading, failed with its retry, empty), in the DOM while there is one.
   * @param {ListState | null} state
   */
  #drawState(state) {
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
  }

  /**
   * One row's element at its position: its content when its values changed (or a placeholder),
   * its selection and place, and the move or fade-in that gets it there. Returns whether it animates.
   * @param {RowElement} element
   * @param {{position: number, row: DisplayedRow | null, top: number | null, existed: boolean, state: ListState | null,
   *   columns: string[], selectedKey: string | null, animate: boolean}} place
   */
  #drawRow(element, { position, row, top, existed, state, columns, selectedKey, animate }) {
    const loaded = row !== null && row.values !== null;
    const stamp = loaded ? `${row.stamp}` : '';
    if (element.dataset.stamp !== stamp || !existed) {
      this.domWrites += 1;
      element.dataset.stamp = stamp;
      element.classList.toggle('ll-placeholder', !loaded);
      if (loaded) {
        element.dataset.id = row.key;
        this.renderRow(element, row.values, columns, row);
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
    const selected = selectedKey !== null && row !== null && row.key === selectedKey;
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
      // Not at the first draw: the list appears at once.
      if (animate && row !== null && this.draws > 1) {
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

  /** @returns {RowElement} */
  #newRow() {
    const element = document.createElement('div');
    element.className = 'll-row';
    element.setAttribute('role', 'row');
    element.style.height = `${this.rowHeight}px`;
    return element;
  }

  /**
   * The headers of the sections of the rows `from` up to `to`, and the sticky header of the
   * section at the top of the view.
   * @param {Layout} layout
   * @param {number} from
   * @param {number} to
   */
  #drawHeaders(layout, from, to) {
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
      // The header of the section at the top (of its first row in view) stays in view.
      const path = sections.path(layout.positionAt(this.scroller.scrollTop));
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
}
