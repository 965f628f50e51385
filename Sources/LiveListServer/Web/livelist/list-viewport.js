// list-viewport.js — where a LiveListView is scrolled to over its Layout, without the DOM: the rows
// in view, the anchor (the first visible row and its distance from the top) carried through the
// list's changes, and the scroll positions that keep the anchor in place, put a row first, or
// reveal a row.

/** @typedef {import('./list-layout.js').Layout} Layout */
/** @typedef {import('./pending-overlay.js').DisplayedList} DisplayedList */
/** @typedef {import('./pending-overlay.js').DisplayedTransition} DisplayedTransition */

/**
 * The first visible row — its position, its identity (null for a row whose identity is on its
 * way) — and its distance from the top of the viewport.
 * @typedef {{position: number, key: string | null, offset: number}} Anchor
 */

/**
 * The positions in view, first and end, when the viewport shows `height` pixels from `top`.
 * @param {Layout} layout
 * @param {number} top
 * @param {number} height
 * @returns {[number, number]}
 */
export function rowsInView(layout, top, height) {
  if (layout.sections.count === 0) return [0, 0];
  return [layout.positionAt(top), Math.min(layout.sections.count, layout.positionAt(top + height) + 1)];
}

/**
 * The anchor of the viewport at `top`: its first visible row (null when the list has no rows).
 * @param {Layout} layout
 * @param {DisplayedList} displayed
 * @param {number} top
 * @param {number} height
 * @returns {Anchor | null}
 */
export function anchorAt(layout, displayed, top, height) {
  const [first] = rowsInView(layout, top, height);
  const rowTop = layout.rowTop(first);
  const row = displayed.row(first);
  return rowTop === null ? null : { position: first, key: row ? row.key : null, offset: rowTop - top };
}

/**
 * Moves the anchor to its row's position when the displayed list holds the row (by identity).
 * @param {Anchor} anchor
 * @param {DisplayedList} displayed
 */
export function relocateAnchor(anchor, displayed) {
  if (anchor.key === null) return;
  const position = displayed.positionOf(anchor.key);
  if (position !== null) anchor.position = position;
}

/**
 * Carries the anchor through one transition of the displayed list: to its row, or to the first
 * row after it that is still in the list (which it then follows by identity).
 * @param {Anchor} anchor
 * @param {DisplayedTransition} transition
 * @param {DisplayedList} displayed the list after the transition
 */
export function followAnchor(anchor, transition, displayed) {
  let position = anchor.position, next = transition.newPosition(position) ?? (anchor.key ? displayed.positionOf(anchor.key) : null), steps = 0;
  const survived = next !== null;
  while (next === null && position + 1 < transition.from.count && steps < 200) { position += 1; steps += 1; next = transition.newPosition(position); }
  anchor.position = next ?? Math.min(anchor.position, Math.max(0, displayed.count - 1));
  if (!survived) anchor.key = displayed.row(anchor.position)?.key ?? null;
}

/**
 * The scroll position at which the anchor row keeps its distance from the top of the viewport:
 * found by its identity when the window holds it, else at its position carried through every
 * changeset (the anchor is moved to it). Null when there is no such row.
 * @param {Anchor} anchor
 * @param {Layout} layout
 * @param {DisplayedList} displayed
 * @returns {number | null}
 */
export function anchoredTop(anchor, layout, displayed) {
  if (displayed.count === 0) return null;
  relocateAnchor(anchor, displayed);
  const top = layout.rowTop(Math.min(anchor.position, displayed.count - 1));
  return top === null ? null : Math.max(0, top - anchor.offset);
}

/**
 * The scroll position at which `position` (clamped to the list) is the first row in view, under
 * its section's header; null when the list has no rows.
 * @param {Layout} layout
 * @param {number} position
 * @returns {number | null}
 */
export function topShowingFirst(layout, position) {
  const top = layout.rowTop(Math.max(0, Math.min(position, layout.sections.count - 1)));
  return top === null ? null : Math.max(0, top - layout.headerHeight);
}

/**
 * The scroll position nearest `top` at which `position` is in view (below the sticky header);
 * `top` itself when it already is, null when there is no such row.
 * @param {Layout} layout
 * @param {number} position
 * @param {number} top
 * @param {number} height
 * @returns {number | null}
 */
export function topRevealing(layout, position, top, height) {
  const rowTop = layout.rowTop(position);
  if (rowTop === null) return null;
  if (rowTop < top + layout.headerHeight) return rowTop - layout.headerHeight;
  if (rowTop + layout.rowHeight > top + height) return rowTop + layout.rowHeight - height;
  return top;
}
