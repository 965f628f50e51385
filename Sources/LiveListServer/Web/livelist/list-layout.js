// list-layout.js — where a LiveListView's rows go: section headers (when the list has sections)
// and rows of fixed heights, positions to pixels and back, without the DOM.

/** @typedef {import('./positions.js').Sections} Sections */

/** Where the rows are: section headers (when the list has sections) and rows of fixed heights. */
export class Layout {
  /**
   * @param {Sections} sections
   * @param {number} rowHeight
   * @param {number} headerHeight
   * @param {number} stateHeight
   */
  constructor(sections, rowHeight, headerHeight, stateHeight) {
    this.sections = sections;
    this.rowHeight = rowHeight;
    this.headerHeight = sections.length > 1 || (sections.length === 1 && sections.keys[0] !== null) ? headerHeight : 0;
    this.stateHeight = stateHeight;   // a list state row above the rows (loading, failed), or 0
  }
  get height() { return this.stateHeight + this.sections.count * this.rowHeight + this.sections.length * this.headerHeight; }
  /** @param {number} section */
  headerTop(section) { return this.stateHeight + this.sections.starts[section] * this.rowHeight + section * this.headerHeight; }
  /**
   * @param {number} position
   * @returns {number | null}
   */
  rowTop(position) {
    const path = this.sections.path(position);
    if (!path) return null;
    return this.stateHeight + position * this.rowHeight + (path[0] + 1) * this.headerHeight;
  }
  /**
   * The first position whose row ends below `y`.
   * @param {number} y
   */
  positionAt(y) {
    const sections = this.sections;
    if (sections.count === 0) return 0;
    let low = 0, high = sections.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (this.headerTop(middle) <= y) low = middle; else high = middle - 1;
    }
    const top = this.headerTop(low) + this.headerHeight;
    const item = Math.max(0, Math.floor((y - top) / this.rowHeight));
    return Math.min(sections.count - 1, sections.starts[low] + Math.min(item, Math.max(0, sections.counts[low] - 1)));
  }
}
