// positions.js — where rows stand across a transition: the protocol's `changes` in UIKit's
// conventions (deletes, reloads and move sources at old paths; inserts and move destinations at
// new ones) mapped between old and new paths, and sections' counts as flat positions.

/** @typedef {[section: number, item: number]} Path */

/**
 * What a transition does to paths, as `parseChanges` reads a `changes` message (its identities
 * and section keys, which the mappings do not read, as the wire has them).
 * @typedef {object} PathChanges
 * @property {number[]} sectionDeletes
 * @property {number[]} sectionInserts
 * @property {Array<[from: number, to: number]>} sectionMoves
 * @property {Path[]} deletes
 * @property {Array<[section: number, item: number, id: unknown]>} inserts
 * @property {Array<[fromSection: number, fromItem: number, toSection: number, toItem: number, id: unknown]>} moves
 */

/**
 * Positions across one transition: `newPosition(old)` and `oldPosition(new)`, null for a row that
 * went (or came).
 * @typedef {{newPosition(position: number): number | null, oldPosition(position: number): number | null}} PositionMapping
 */

/**
 * How many of `sorted` (increasing) are below `value`.
 * @param {readonly number[]} sorted
 * @param {number} value
 */
function countLess(sorted, value) {
  let low = 0, high = sorted.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (sorted[middle] < value) low = middle + 1; else high = middle;
  }
  return low;
}

/**
 * @param {readonly number[]} sorted
 * @param {number} value
 */
function containsSorted(sorted, value) {
  const index = countLess(sorted, value);
  return index < sorted.length && sorted[index] === value;
}

/**
 * The `rank`-th non-negative integer not in `sorted` (strictly increasing).
 * @param {readonly number[]} sorted
 * @param {number} rank
 */
function selectNotIn(sorted, rank) {
  let low = 0, high = sorted.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (sorted[middle] - middle > rank) high = middle; else low = middle + 1;
  }
  return rank + low;
}

/** Indices across a transition that removes some, occupies others and moves some from one to another. */
class RankMapping {
  /**
   * @param {number[]} removed
   * @param {number[]} occupied
   * @param {Array<[from: number, to: number]>} moves
   */
  constructor(removed, occupied, moves) {
    this.removed = [...removed].sort((a, b) => a - b);
    this.occupied = [...occupied].sort((a, b) => a - b);
    this.movedTo = new Map(moves.map(([from, to]) => [from, to]));
    this.movedFrom = new Map(moves.map(([from, to]) => [to, from]));
  }

  /**
   * @param {number} old
   * @returns {number | null}
   */
  newIndex(old) {
    const moved = this.movedTo.get(old);
    if (moved !== undefined) return moved;
    if (containsSorted(this.removed, old)) return null;
    return selectNotIn(this.occupied, old - countLess(this.removed, old));
  }

  /**
   * @param {number} now
   * @returns {number | null}
   */
  oldIndex(now) {
    const moved = this.movedFrom.get(now);
    if (moved !== undefined) return moved;
    if (containsSorted(this.occupied, now)) return null;
    return selectNotIn(this.removed, now - countLess(this.occupied, now));
  }
}

/**
 * A path as a map key.
 * @param {number} section
 * @param {number} item
 */
export const pathKey = (section, item) => `${section}:${item}`;

/**
 * Maps item paths across one transition: deletes, reloads and move sources are paths before it;
 * inserts and move destinations after it (UIKit's conventions, the protocol's `changes`).
 */
export class PathMapping {
  /** @param {PathChanges} changes */
  constructor(changes) {
    this.sections = new RankMapping(
      [...changes.sectionDeletes, ...changes.sectionMoves.map(([from]) => from)],
      [...changes.sectionInserts, ...changes.sectionMoves.map(([, to]) => to)],
      changes.sectionMoves);
    /** @type {Map<number, number[]>} */
    const removed = new Map();
    /** @type {Map<number, number[]>} */
    const occupied = new Map();
    /** @type {(map: Map<number, number[]>, section: number, item: number) => void} */
    const add = (map, section, item) => {
      const items = map.get(section);
      if (items) items.push(item); else map.set(section, [item]);
    };
    /** @type {Map<string, Path>} */
    this.movedTo = new Map();
    /** @type {Map<string, Path>} */
    this.movedFrom = new Map();
    for (const [s, i] of changes.deletes) add(removed, s, i);
    for (const [s, i] of changes.inserts) add(occupied, s, i);
    for (const [fs, fi, ts, ti] of changes.moves) {
      add(removed, fs, fi);
      add(occupied, ts, ti);
      this.movedTo.set(pathKey(fs, fi), [ts, ti]);
      this.movedFrom.set(pathKey(ts, ti), [fs, fi]);
    }
    for (const list of removed.values()) list.sort((a, b) => a - b);
    for (const list of occupied.values()) list.sort((a, b) => a - b);
    this.removed = removed;
    this.occupied = occupied;
    this.deleted = new Set(changes.deletes.map(([s, i]) => pathKey(s, i)));
    this.inserted = new Set(changes.inserts.map(([s, i]) => pathKey(s, i)));
  }

  /**
   * The path after the transition of the row at `[section, item]` before it; null when it went.
   * @param {number} section
   * @param {number} item
   * @returns {Path | null}
   */
  newPath(section, item) {
    const moved = this.movedTo.get(pathKey(section, item));
    if (moved) return moved;
    if (this.deleted.has(pathKey(section, item))) return null;
    const target = this.sections.newIndex(section);
    if (target === null) return null;
    const rank = item - countLess(this.removed.get(section) ?? [], item);
    return [target, selectNotIn(this.occupied.get(target) ?? [], rank)];
  }

  /**
   * The path before the transition of the row at `[section, item]` after it; null when it came.
   * @param {number} section
   * @param {number} item
   * @returns {Path | null}
   */
  oldPath(section, item) {
    const moved = this.movedFrom.get(pathKey(section, item));
    if (moved) return moved;
    if (this.inserted.has(pathKey(section, item))) return null;
    const source = this.sections.oldIndex(section);
    if (source === null) return null;
    const rank = item - countLess(this.occupied.get(section) ?? [], item);
    return [source, selectNotIn(this.removed.get(source) ?? [], rank)];
  }
}

/** Sections (key and count) with O(log s) position ↔ path. */
export class Sections {
  /**
   * @param {import('./values.js').Value[]} keys
   * @param {number[]} counts
   */
  constructor(keys, counts) {
    this.keys = keys;
    this.counts = counts;
    /** @type {number[]} */
    this.starts = new Array(counts.length + 1);
    this.starts[0] = 0;
    for (let i = 0; i < counts.length; i++) this.starts[i + 1] = this.starts[i] + counts[i];
  }

  /** The rows of every section. */
  get count() { return this.starts[this.starts.length - 1]; }

  /** The sections. */
  get length() { return this.counts.length; }

  /**
   * The path `[section, item]` of a position, or null.
   * @param {number} position
   * @returns {Path | null}
   */
  path(position) {
    if (!(position >= 0 && position < this.count)) return null;
    let low = 0, high = this.counts.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (this.starts[middle] <= position) low = middle; else high = middle - 1;
    }
    return [low, position - this.starts[low]];
  }

  /**
   * The position of path `[section, item]`, or null.
   * @param {number} section
   * @param {number} item
   * @returns {number | null}
   */
  position(section, item) {
    if (!(section >= 0 && section < this.counts.length && item >= 0 && item < this.counts[section])) return null;
    return this.starts[section] + item;
  }
}

/**
 * The server's positions across one of its transitions (a `changes`): the model's `mapping`
 * between `oldSections` and `newSections`, as flat positions.
 * @param {Sections} oldSections
 * @param {Sections} newSections
 * @param {PathMapping} mapping
 * @returns {PositionMapping}
 */
export function serverPositionMapping(oldSections, newSections, mapping) {
  return {
    newPosition(position) {
      const path = oldSections.path(position);
      const target = path && mapping.newPath(path[0], path[1]);
      return target ? newSections.position(target[0], target[1]) : null;
    },
    oldPosition(position) {
      const path = newSections.path(position);
      const source = path && mapping.oldPath(path[0], path[1]);
      return source ? oldSections.position(source[0], source[1]) : null;
    },
  };
}
