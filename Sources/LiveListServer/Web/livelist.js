// livelist.js — the LiveList wire protocol (docs/PROTOCOL.md) in the browser, without the DOM:
// the exact values and the list's order, the list model a client keeps (counts, sections, the
// window's identities and rows) and a live query over a WebSocket that subscribes, applies every
// changeset in order, asks for rows as the window moves, resumes from its version and reconnects
// with backoff; the client's own mutations (Mutator), shown at once as pending rows; and the last
// lists, pending mutations and their pending rows kept across page loads (OfflineStore).
//
// No dependencies; an ES module for browsers and Node (20+, where `WebSocket` is passed in).

// ---------------------------------------------------------------------------------------------
// Values

/** A value that JSON cannot carry exactly: an integer beyond ±(2⁵³ − 1), kept as a BigInt. */
export function decodeValue(json) {
  if (json === null || typeof json === 'string') return json;
  if (typeof json === 'number') {
    if (!Number.isInteger(json)) throw new ProtocolError(`a bare number with a fraction: ${json}`);
    return json;
  }
  if (typeof json === 'object' && !Array.isArray(json)) {
    const keys = Object.keys(json);
    if (keys.length === 1) {
      if (keys[0] === 'i' && typeof json.i === 'string' && /^-?[0-9]+$/.test(json.i)) return BigInt(json.i);
      if (keys[0] === 'f') {
        if (typeof json.f === 'number') return new Real(json.f);
        if (json.f === 'inf') return new Real(Infinity);
        if (json.f === '-inf') return new Real(-Infinity);
      }
      if (keys[0] === 'b' && typeof json.b === 'string') return base64Decode(json.b);
    }
  }
  throw new ProtocolError(`not a value: ${JSON.stringify(json)}`);
}

/** A REAL (so that 1.0 stays a real, not the integer 1). */
export class Real {
  constructor(value) { this.value = value; }
  toString() { return Number.isInteger(this.value) ? this.value.toFixed(1) : String(this.value); }
}

/** The text a cell shows for a value. */
export function displayText(value) {
  if (value === null || value === undefined) return '';
  if (value instanceof Uint8Array) return `⟨${value.length} bytes⟩`;
  return String(value);
}

function base64Decode(text) {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) throw new ProtocolError('bad base64');
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** A message the client cannot apply: its version does not follow, or it contradicts the list. */
export class ProtocolError extends Error {
  constructor(message, kind = 'inconsistent') {
    super(message);
    this.name = 'ProtocolError';
    this.kind = kind;
  }
}

// ---------------------------------------------------------------------------------------------
// The list's order: how the server orders a list, when its reset states it (docs/PROTOCOL.md).

const collations = new Set(['binary', 'nocase', 'rtrim']);

/**
 * The `order` of a reset, checked: terms {column (an index into `columns`, or null for the row's
 * identity), descending, nullsFirst, collation ('binary' when absent, 'nocase' or 'rtrim')}, the
 * last one the identity. Null when there is none, or when it is not one this client can read (not
 * an array, a column out of range, a collation it does not know, a flag missing): the list is then
 * one without a stated order, and the reset stands.
 */
export function parseOrder(json, columnCount) {
  if (!Array.isArray(json) || json.length === 0) return null;
  const terms = [];
  for (const term of json) {
    if (term === null || typeof term !== 'object' || Array.isArray(term)) return null;
    const { column, descending, nullsFirst, collation = 'binary' } = term;
    if (!(column === null || (Number.isInteger(column) && column >= 0 && column < columnCount))) return null;
    if (typeof descending !== 'boolean' || typeof nullsFirst !== 'boolean' || !collations.has(collation)) return null;
    terms.push(Object.freeze({ column, descending, nullsFirst, collation }));
  }
  if (terms[terms.length - 1].column !== null) return null;   // the identity ends every order
  return Object.freeze(terms);
}

/** A value as the model holds it (a BigInt, a Real, a Uint8Array…) from itself or from its JSON. */
function orderable(value) {
  if (typeof value === 'bigint' || value instanceof Real || value instanceof Uint8Array) return value;
  return decodeValue(value);
}

/** The class a value sorts in: numbers, then text, then bytes. */
function orderClass(value) {
  if (typeof value === 'string') return 2;
  if (value instanceof Uint8Array) return 3;
  return 1;
}

/**
 * Integers (numbers, BigInts) and reals by value, exactly: JavaScript compares a BigInt with a
 * number by their mathematical values (9007199254740993n > 9007199254740992), infinities included.
 */
function compareNumbers(a, b) {
  const x = a instanceof Real ? a.value : typeof a === 'bigint' ? a : BigInt(a);
  const y = b instanceof Real ? b.value : typeof b === 'bigint' ? b : BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * A UTF-16 code unit's rank in code point order: surrogates (the halves of U+10000 and above) after
 * U+E000–U+FFFF. At the first unit where two well-formed strings differ, ranks order them as their
 * code points, and so as their UTF-8 bytes.
 */
const codePointRank = (unit) => (unit >= 0xe000 ? unit - 0x800 : unit >= 0xd800 ? unit + 0x2000 : unit);

/**
 * Text by its UTF-8 bytes after the collation: `nocase` folds A–Z only and stops at the left
 * text's first NUL (then the shorter first), `rtrim` drops trailing U+0020; never normalized.
 */
function compareText(a, b, collation) {
  let endA = a.length, endB = b.length;
  if (collation === 'rtrim') {
    while (endA > 0 && a.charCodeAt(endA - 1) === 0x20) endA--;
    while (endB > 0 && b.charCodeAt(endB - 1) === 0x20) endB--;
  }
  const fold = collation === 'nocase';
  const common = Math.min(endA, endB);
  for (let i = 0; i < common; i++) {
    let x = a.charCodeAt(i), y = b.charCodeAt(i);
    // NOCASE compares up to the first NUL of the left text, then by UTF-8 length (SQLite's rule).
    if (fold && x === 0) {
      if (y !== 0) return -1;
      const bytesA = utf8Length(a, endA), bytesB = utf8Length(b, endB);
      return bytesA < bytesB ? -1 : bytesA > bytesB ? 1 : 0;
    }
    if (x === y) continue;
    if (fold) {
      if (x >= 0x41 && x <= 0x5a) x += 0x20;
      if (y >= 0x41 && y <= 0x5a) y += 0x20;
      if (x === y) continue;
    }
    return codePointRank(x) < codePointRank(y) ? -1 : 1;
  }
  return endA < endB ? -1 : endA > endB ? 1 : 0;
}

/** The bytes of the UTF-8 encoding of `text`'s first `end` UTF-16 units (a lone surrogate: 3, as U+FFFD). */
function utf8Length(text, end) {
  let bytes = 0;
  for (let i = 0; i < end; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit < 0xdc00 && i + 1 < end && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) { bytes += 4; i++; }
    else bytes += 3;
  }
  return bytes;
}

/** Bytes by their bytes, a prefix before a longer value. */
function compareBytes(a, b) {
  const common = Math.min(a.length, b.length);
  for (let i = 0; i < common; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  return a.length < b.length ? -1 : a.length > b.length ? 1 : 0;
}

/**
 * Negative, zero or positive as value `a` stands before, with, or after `b` under one term of a
 * list's order: NULL first or last as `nullsFirst` says (whatever `descending` says); then numbers
 * before text before bytes; numbers by exact value, text by its UTF-8 bytes after the collation,
 * bytes by their bytes; `descending` reverses that. Values as the model holds them (numbers,
 * BigInts, Reals, strings, Uint8Arrays, null) or as the wire's JSON (`{"i":…}`, `{"f":…}`,
 * `{"b":…}`); anything else throws a ProtocolError.
 */
export function compareValues(term, a, b) {
  a = orderable(a);
  b = orderable(b);
  if (a === null || b === null) {
    if (a === b) return 0;
    return (a === null) === term.nullsFirst ? -1 : 1;
  }
  const classA = orderClass(a), classB = orderClass(b);
  let result;
  if (classA !== classB) result = classA < classB ? -1 : 1;
  else if (classA === 1) result = compareNumbers(a, b);
  else if (classA === 2) result = compareText(a, b, term.collation ?? 'binary');
  else result = compareBytes(a, b);
  return term.descending && result !== 0 ? -result : result;
}

/**
 * Negative, zero or positive as row `a` stands before, with, or after `b` in a list of `order`
 * (the model's `order`): term after term, by the value of the term's column, or by the identity
 * (`id`) for a term whose column is null. A row is {id, values} (values in the order of
 * `columns`, as `ListModel.row` gives them); a row without values cannot be ordered (TypeError).
 */
export function compareRows(order, a, b) {
  for (const term of order) {
    const result = compareValues(term, orderedValue(a, term.column), orderedValue(b, term.column));
    if (result !== 0) return result;
  }
  return 0;
}

function orderedValue(row, column) {
  if (column === null) return row.id;
  if (!row.values) throw new TypeError('a row without values has no place in the order');
  return row.values[column];
}

// ---------------------------------------------------------------------------------------------
// Positions: how a transition in UIKit's conventions maps old indices to new ones.

function countLess(sorted, value) {
  let low = 0, high = sorted.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (sorted[middle] < value) low = middle + 1; else high = middle;
  }
  return low;
}

function containsSorted(sorted, value) {
  const index = countLess(sorted, value);
  return index < sorted.length && sorted[index] === value;
}

/** The `rank`-th non-negative integer not in `sorted` (strictly increasing). */
function selectNotIn(sorted, rank) {
  let low = 0, high = sorted.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (sorted[middle] - middle > rank) high = middle; else low = middle + 1;
  }
  return rank + low;
}

class RankMapping {
  constructor(removed, occupied, moves) {
    this.removed = [...removed].sort((a, b) => a - b);
    this.occupied = [...occupied].sort((a, b) => a - b);
    this.movedTo = new Map(moves.map(([from, to]) => [from, to]));
    this.movedFrom = new Map(moves.map(([from, to]) => [to, from]));
  }
  newIndex(old) {
    if (this.movedTo.has(old)) return this.movedTo.get(old);
    if (containsSorted(this.removed, old)) return null;
    return selectNotIn(this.occupied, old - countLess(this.removed, old));
  }
  oldIndex(now) {
    if (this.movedFrom.has(now)) return this.movedFrom.get(now);
    if (containsSorted(this.occupied, now)) return null;
    return selectNotIn(this.removed, now - countLess(this.occupied, now));
  }
}

const pathKey = (section, item) => `${section}:${item}`;

/**
 * Maps item paths across one transition: deletes, reloads and move sources are paths before it;
 * inserts and move destinations after it (UIKit's conventions, the protocol's `changes`).
 */
export class PathMapping {
  constructor(changes) {
    this.sections = new RankMapping(
      [...changes.sectionDeletes, ...changes.sectionMoves.map(([from]) => from)],
      [...changes.sectionInserts, ...changes.sectionMoves.map(([, to]) => to)],
      changes.sectionMoves);
    const removed = new Map(), occupied = new Map();
    const add = (map, section, item) => { if (!map.has(section)) map.set(section, []); map.get(section).push(item); };
    this.movedTo = new Map();
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
  newPath(section, item) {
    const moved = this.movedTo.get(pathKey(section, item));
    if (moved) return moved;
    if (this.deleted.has(pathKey(section, item))) return null;
    const target = this.sections.newIndex(section);
    if (target === null) return null;
    const rank = item - countLess(this.removed.get(section) ?? [], item);
    return [target, selectNotIn(this.occupied.get(target) ?? [], rank)];
  }
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

// ---------------------------------------------------------------------------------------------
// Sections: counts and their prefix sums.

/** Sections (key and count) with O(log s) position ↔ path. */
export class Sections {
  constructor(keys, counts) {
    this.keys = keys;
    this.counts = counts;
    this.starts = new Array(counts.length + 1);
    this.starts[0] = 0;
    for (let i = 0; i < counts.length; i++) this.starts[i + 1] = this.starts[i] + counts[i];
  }
  get count() { return this.starts[this.starts.length - 1]; }
  get length() { return this.counts.length; }
  /** The path `[section, item]` of a position, or null. */
  path(position) {
    if (!(position >= 0 && position < this.count)) return null;
    let low = 0, high = this.counts.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (this.starts[middle] <= position) low = middle; else high = middle - 1;
    }
    return [low, position - this.starts[low]];
  }
  position(section, item) {
    if (!(section >= 0 && section < this.counts.length && item >= 0 && item < this.counts[section])) return null;
    return this.starts[section] + item;
  }
}

// ---------------------------------------------------------------------------------------------
// The list model

const isIndex = (value) => Number.isInteger(value) && value >= 0 && value <= 0x7fffffff;

function parseVersion(value, field) {
  if (typeof value !== 'string' || !/^[A-Za-z0-9_-]{1,64}:[0-9]+$/.test(value)) throw new ProtocolError(`${field}: not a version`, 'malformed');
  return value;
}

function indices(list, width, field) {
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw new ProtocolError(`${field}: not an array`, 'malformed');
  return list.map((entry) => {
    if (width === 0) {
      if (!isIndex(entry)) throw new ProtocolError(`${field}: not an index`, 'malformed');
      return entry;
    }
    if (!Array.isArray(entry) || entry.length !== width || !entry.every(isIndex)) throw new ProtocolError(`${field}: expected ${width} indices`, 'malformed');
    return entry;
  });
}

/** Arrays of `width` indices and a value (an identity or a section key). */
function identified(list, width, field) {
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw new ProtocolError(`${field}: not an array`, 'malformed');
  return list.map((entry) => {
    if (!Array.isArray(entry) || entry.length !== width + 1 || !entry.slice(0, width).every(isIndex)) {
      throw new ProtocolError(`${field}: expected ${width} indices and a value`, 'malformed');
    }
    decodeValue(entry[width]);
    return entry;
  });
}

function parseRows(list) {
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw new ProtocolError('rows: not an array', 'malformed');
  return list.map((entry) => {
    if (!Array.isArray(entry) || entry.length !== 3 || !isIndex(entry[0]) || !(entry[2] === null || Array.isArray(entry[2]))) {
      throw new ProtocolError('rows: expected [position, id, values | null]', 'malformed');
    }
    decodeValue(entry[1]);
    return { position: entry[0], id: entry[1], key: JSON.stringify(entry[1]), values: entry[2] === null ? null : entry[2].map(decodeValue) };
  });
}

/** The changes of a `changes` message, checked for shape. */
export function parseChanges(message) {
  return {
    from: parseVersion(message.from, 'from'),
    to: parseVersion(message.to, 'to'),
    sectionDeletes: indices(message.sectionDeletes, 0, 'sectionDeletes'),
    sectionInserts: identified(message.sectionInserts, 1, 'sectionInserts').map(([index]) => index),
    sectionInsertKeys: identified(message.sectionInserts, 1, 'sectionInserts').map(([, key]) => decodeValue(key)),
    sectionMoves: indices(message.sectionMoves, 2, 'sectionMoves'),
    sectionReloads: indices(message.sectionReloads, 0, 'sectionReloads'),
    deletes: indices(message.deletes, 2, 'deletes'),
    inserts: identified(message.inserts, 2, 'inserts'),
    moves: identified(message.moves, 4, 'moves'),
    reloads: identified(message.reloads, 2, 'reloads'),
    rows: parseRows(message.rows),
    at: typeof message.at === 'number' ? message.at : null,
  };
}

/**
 * A remote list as the server's messages make it, without I/O: the sections and counts, the
 * version, the window the server sends rows for, the identities and values of the window's rows,
 * and the list's order when the last reset stated it (`order`, for `compareRows`; else null). `receive(message)` applies one message and says what changed; a message that cannot be
 * applied throws a ProtocolError and changes nothing.
 */
export class ListModel {
  constructor() {
    this.sections = new Sections([], []);
    this.version = null;
    this.columns = [];
    this.order = null;               // the reset's order (parseOrder), or null: not stated
    this.window = [0, 0];            // [start, end)
    this.requestedWindow = null;     // [start, end) asked for, not answered yet
    this.known = new Map();          // position → {key, id, stamp}
    this.records = new Map();        // key → {stamp, values}
    this.lastReset = null;
    this.lastObservedAt = null;
    this.nextStamp = 1;
  }

  get count() { return this.sections.count; }

  /** The row at `position`: {key, id, values (null: not loaded)}, or null when its identity is unknown. */
  row(position) {
    const known = this.known.get(position);
    if (!known) return null;
    const record = this.records.get(known.key);
    return { key: known.key, id: known.id, values: record && record.stamp === known.stamp ? record.values : null, stamp: known.stamp };
  }

  /** What a resuming client holds: its version and the longest run of its window held with values. */
  get resume() {
    if (this.version === null) return null;
    let best = [0, 0], runStart = null;
    const [start, end] = this.window;
    for (let position = start; position < Math.min(end, this.count); position++) {
      const row = this.row(position);
      if (row && row.values) {
        if (runStart === null) runStart = position;
        if (position + 1 - runStart > best[1] - best[0]) best = [runStart, position + 1];
      } else {
        runStart = null;
      }
    }
    return { version: this.version, held: [best[0], best[1] - best[0]] };
  }

  /**
   * The list held, as the `reset` the server would send for it at its version (values in the
   * wire's JSON form): its sections and counts, its window, the window's rows held (with their
   * values, or null when not loaded) — never rows outside the window — and its order. Null
   * before the first state. O(w + s) for w positions of the window and s sections.
   */
  heldList() {
    if (this.version === null) return null;
    const [start, end] = this.window;
    const rows = [];
    for (let position = start; position < Math.min(end, this.count); position++) {
      const row = this.row(position);
      if (row) rows.push([position, wireForm(row.id), row.values === null ? null : row.values.map(wireForm)]);
    }
    const list = {
      sub: 0, type: 'reset', version: this.version, reason: this.lastReset ?? 'subscribed', columns: [...this.columns],
      sections: this.sections.keys.map((key, index) => [wireForm(key), this.sections.counts[index]]),
      window: [start, end - start], rows,
    };
    if (this.order) list.order = this.order.map(({ column, descending, nullsFirst, collation }) => ({ column, descending, nullsFirst, collation }));
    return list;
  }

  didRequest(window) { this.requestedWindow = window; }

  didSubscribe(window) {
    this.window = window;
    this.requestedWindow = null;
  }

  /**
   * Applies one message of the subscription. Returns
   * - {type: 'reset', reason} — a new first state;
   * - {type: 'changes', changes, mapping, oldSections, loaded} — a transition (positions in
   *   `changes`, `mapping` from old paths to new ones), `loaded` the keys whose values arrived;
   * - {type: 'rows', loaded, replaced} — rows of a moved window arrived;
   * - {type: 'error', error} — the server's error for the subscription.
   */
  receive(message) {
    switch (message.type) {
      case 'reset': return this.#reset(message);
      case 'changes': return this.#changes(parseChanges(message));
      case 'rows': return this.#rows(message);
      case 'error': return { type: 'error', error: { code: String(message.code), message: String(message.message ?? '') } };
      default: return { type: 'none' };   // later versions may add messages
    }
  }

  #stamp() { return this.nextStamp++; }

  #reset(message) {
    const version = parseVersion(message.version, 'version');
    if (!Array.isArray(message.sections) || !message.sections.every((s) => Array.isArray(s) && s.length === 2 && isIndex(s[1]))) {
      throw new ProtocolError('sections: expected [[key, count]]', 'malformed');
    }
    if (!Array.isArray(message.columns) || !message.columns.every((c) => typeof c === 'string')) throw new ProtocolError('columns', 'malformed');
    const window = message.window;
    if (!Array.isArray(window) || window.length !== 2 || !window.every(isIndex)) throw new ProtocolError('window', 'malformed');
    const sections = new Sections(message.sections.map(([key]) => decodeValue(key)), message.sections.map(([, count]) => count));
    const rows = parseRows(message.rows);
    this.sections = sections;
    this.version = version;
    this.columns = message.columns;
    this.order = parseOrder(message.order, message.columns.length);
    this.window = [window[0], window[0] + window[1]];
    this.requestedWindow = null;
    this.lastReset = String(message.reason);
    this.known = new Map();
    this.records = new Map();
    for (const row of rows) {
      if (row.position >= sections.count) continue;
      const stamp = this.#stamp();
      this.known.set(row.position, { key: row.key, id: decodeValue(row.id), stamp });
      if (row.values) this.records.set(row.key, { stamp, values: row.values });
    }
    return { type: 'reset', reason: this.lastReset };
  }

  #sectionsAfter(changes) {
    const old = this.sections;
    const oldCount = old.length;
    const deleted = new Set(changes.sectionDeletes);
    if (deleted.size !== changes.sectionDeletes.length || changes.sectionDeletes.some((s) => s >= oldCount)) {
      throw new ProtocolError(`section deletes ${changes.sectionDeletes} of ${oldCount}`);
    }
    const newCount = oldCount - deleted.size + changes.sectionInserts.length;
    const inserted = new Set(changes.sectionInserts);
    if (inserted.size !== changes.sectionInserts.length || changes.sectionInserts.some((s) => s >= newCount)) {
      throw new ProtocolError(`section inserts ${changes.sectionInserts} of ${newCount}`);
    }
    for (const [from, to] of changes.sectionMoves) {
      if (from >= oldCount || deleted.has(from) || to >= newCount || inserted.has(to)) throw new ProtocolError(`section move ${from} → ${to}`);
    }
    if (changes.sectionReloads.some((s) => s >= oldCount)) throw new ProtocolError('section reload out of range');
    const mapping = new PathMapping(changes);
    const keys = new Array(newCount).fill(undefined);
    const counts = new Array(newCount).fill(0);
    for (let section = 0; section < oldCount; section++) {
      if (deleted.has(section)) continue;
      const target = mapping.sections.newIndex(section);
      if (target === null || target >= newCount || keys[target] !== undefined) throw new ProtocolError(`section ${section} has no place after the changes`);
      keys[target] = old.keys[section];
      counts[target] = old.counts[section];
    }
    changes.sectionInserts.forEach((index, i) => { keys[index] = changes.sectionInsertKeys[i]; });
    for (const [s] of changes.deletes) {
      if (deleted.has(s)) continue;
      const target = mapping.sections.newIndex(s);
      if (target !== null) counts[target] -= 1;
    }
    for (const [fs, , ts] of changes.moves) {
      const source = mapping.sections.newIndex(fs);
      if (source === null || ts >= newCount) throw new ProtocolError(`item move from section ${fs}`);
      counts[source] -= 1;
      counts[ts] += 1;
    }
    for (const [s] of changes.inserts) {
      if (s >= newCount) throw new ProtocolError(`item insert in section ${s}`);
      counts[s] += 1;
    }
    if (counts.some((c) => c < 0)) throw new ProtocolError('a section count below zero');
    return { sections: new Sections(keys.map((k) => (k === undefined ? null : k)), counts), mapping };
  }

  #checkItems(changes, old, now) {
    const inOld = ([s, i]) => s < old.length && i < old.counts[s];
    const inNew = ([s, i]) => s < now.length && i < now.counts[s];
    const sources = [...changes.deletes, ...changes.moves.map((m) => [m[0], m[1]])];
    const unique = (paths) => new Set(paths.map(([s, i]) => pathKey(s, i))).size === paths.length;
    const deleted = new Set(changes.deletes.map(([s, i]) => pathKey(s, i)));
    if (!sources.every(inOld) || !unique(sources) || !changes.reloads.every(inOld) || changes.reloads.some(([s, i]) => deleted.has(pathKey(s, i)))) {
      throw new ProtocolError('an item delete, move or reload outside the list before');
    }
    const targets = [...changes.inserts.map((m) => [m[0], m[1]]), ...changes.moves.map((m) => [m[2], m[3]])];
    if (!targets.every(inNew) || !unique(targets)) throw new ProtocolError('an item insert or move outside the list after');
  }

  #changes(changes) {
    if (changes.from !== this.version) throw new ProtocolError(`changes from ${changes.from}, the list is at ${this.version}`, 'versionGap');
    const old = this.sections;
    const { sections, mapping } = this.#sectionsAfter(changes);
    this.#checkItems(changes, old, sections);
    const newCount = sections.count;
    const bad = changes.rows.find((row) => row.position >= newCount);
    if (bad) throw new ProtocolError(`row at ${bad.position} of ${newCount}`);
    // Identities known before, carried to their new positions (reloaded rows get a new stamp).
    const reloaded = new Set(changes.reloads.map(([s, i]) => pathKey(s, i)));
    const known = new Map();
    for (const [position, row] of this.known) {
      const path = old.path(position);
      if (!path || reloaded.has(pathKey(path[0], path[1]))) continue;
      const target = mapping.newPath(path[0], path[1]);
      if (!target) continue;
      const next = sections.position(target[0], target[1]);
      if (next !== null) known.set(next, row);
    }
    const place = (section, item, idJSON, keep) => {
      const position = sections.position(section, item);
      if (position === null) return;
      const key = JSON.stringify(idJSON);
      const stamp = keep && keep.key === key ? keep.stamp : this.#stamp();
      known.set(position, { key, id: decodeValue(idJSON), stamp });
    };
    for (const [s, i, id] of changes.inserts) place(s, i, id, null);
    for (const [fs, fi, ts, ti, id] of changes.moves) {
      if (reloaded.has(pathKey(fs, fi))) continue;
      const before = old.position(fs, fi);
      place(ts, ti, id, before === null ? null : this.known.get(before));
    }
    for (const [s, i, id] of changes.reloads) {
      const target = mapping.newPath(s, i);
      if (target) place(target[0], target[1], id, null);
    }
    const loaded = [];
    for (const row of changes.rows) {
      const existing = known.get(row.position);
      const kept = existing && existing.key === row.key ? existing.stamp : null;
      const stamp = kept ?? this.#stamp();
      known.set(row.position, { key: row.key, id: decodeValue(row.id), stamp });
      if (row.values) {
        if (kept !== null && this.records.get(row.key)?.stamp !== stamp) loaded.push(row.key);
        this.records.set(row.key, { stamp, values: row.values });
      }
    }
    this.version = changes.to;
    if (changes.at !== null) this.lastObservedAt = changes.at;
    const oldSections = old;
    this.sections = sections;
    this.known = this.#pruned(known);
    return { type: 'changes', changes, mapping, oldSections, loaded };
  }

  #rows(message) {
    const version = parseVersion(message.version, 'version');
    if (version !== this.version) throw new ProtocolError(`rows at ${version}, the list is at ${this.version}`, 'versionGap');
    const window = message.window;
    if (!Array.isArray(window) || window.length !== 2 || !window.every(isIndex)) throw new ProtocolError('window', 'malformed');
    const rows = parseRows(message.rows);
    if (rows.some((row) => row.position >= this.count)) throw new ProtocolError('a row past the list');
    const range = [window[0], window[0] + window[1]];
    this.window = range;
    if (this.requestedWindow && this.requestedWindow[0] === range[0] && this.requestedWindow[1] === range[1]) this.requestedWindow = null;
    const loaded = [], replaced = [];
    for (const row of rows) {
      const existing = this.known.get(row.position);
      let stamp;
      if (existing && existing.key === row.key) {
        stamp = existing.stamp;
        if (row.values) loaded.push(row.key);
      } else {
        stamp = this.#stamp();
        this.known.set(row.position, { key: row.key, id: decodeValue(row.id), stamp });
        replaced.push(row.position);
      }
      if (row.values) this.records.set(row.key, { stamp, values: row.values });
    }
    this.known = this.#pruned(this.known);
    return { type: 'rows', loaded, replaced };
  }

  /** Keeps the rows of the window (and of a window asked for) and their records. */
  #pruned(known) {
    const count = this.count;
    const inside = (range, position) => range && position >= range[0] && position < Math.min(range[1], count);
    const kept = new Map();
    const keys = new Set();
    for (const [position, row] of known) {
      if (inside(this.window, position) || inside(this.requestedWindow, position)) {
        kept.set(position, row);
        keys.add(row.key);
      }
    }
    for (const key of [...this.records.keys()]) if (!keys.has(key)) this.records.delete(key);
    return kept;
  }
}

// ---------------------------------------------------------------------------------------------
// Pending rows: what the client's own mutations are expected to do, shown at once over the rows
// the client holds, until the server's list shows it (docs/PROTOCOL.md, "The list's order").

const maximumSafe = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * A value of a pending row as the model holds it: null, a string, an integer (a number within
 * ±(2⁵³ − 1), a BigInt beyond), a Real, a Uint8Array — given as such or in the wire's JSON form
 * (`{"i":…}`, `{"f":…}`, `{"b":…}`). A number with a fraction is refused (a real is a `Real`).
 */
export function pendingValue(value) {
  if (value === null || typeof value === 'string') return value;
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) throw new TypeError(`${value}: a real is given as a Real`);
    return Number.isSafeInteger(value) ? value : BigInt(value);
  }
  if (typeof value === 'bigint') return value >= -maximumSafe && value <= maximumSafe ? Number(value) : value;
  if (value instanceof Real || value instanceof Uint8Array) return value;
  if (value === undefined) throw new TypeError('undefined is not a value (null is)');
  let decoded;
  try {
    decoded = decodeValue(value);
  } catch {
    throw new TypeError(`not a value: ${JSON.stringify(value)}`);
  }
  return pendingValue(decoded);
}

/** A value in the wire's JSON form. */
function wireForm(value) {
  if (typeof value === 'bigint') return { i: String(value) };
  if (value instanceof Real) return { f: value.value === Infinity ? 'inf' : value.value === -Infinity ? '-inf' : value.value };
  if (value instanceof Uint8Array) {
    let binary = '';
    for (const byte of value) binary += String.fromCharCode(byte);
    return { b: btoa(binary) };
  }
  return value;
}

/** The key the model gives the row of identity `id` (a value as `pendingValue` reads it). */
export function identityKey(id) {
  return JSON.stringify(wireForm(pendingValue(id)));
}

/** Whether two values (as the model holds them) are the same value, of the same class: exactly. */
function sameValue(a, b) {
  if (a === b) return true;
  if (a instanceof Real && b instanceof Real) return a.value === b.value;
  if (a instanceof Uint8Array && b instanceof Uint8Array) return a.length === b.length && a.every((byte, i) => byte === b[i]);
  return false;
}

function sameValues(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!sameValue(a[i], b[i])) return false;
  return true;
}

/**
 * One expected effect of a mutation on one list, checked: `{insert: {id, values, placement}}`,
 * `{update: {id, values}}` or `{delete: {id}}` — `values` by column name (columns not given read
 * as null; names the list does not have are ignored), `placement` `'sorted'` (the default),
 * `{first: sectionKey}` or `{last: sectionKey}`. Throws a TypeError for anything else.
 */
export class PendingEffect {
  constructor(effect) {
    if (effect instanceof PendingEffect) return effect;
    if (effect === null || typeof effect !== 'object') throw new TypeError('an effect is {insert}, {update} or {delete}');
    const kinds = ['insert', 'update', 'delete'].filter((kind) => effect[kind] !== undefined);
    if (kinds.length !== 1) throw new TypeError('an effect is one of {insert}, {update} or {delete}');
    const kind = kinds[0], body = effect[kind];
    if (body === null || typeof body !== 'object' || body.id === undefined) throw new TypeError(`${kind}: an id is needed`);
    this.kind = kind;
    this.id = pendingValue(body.id);
    this.key = JSON.stringify(wireForm(this.id));
    if (kind !== 'delete') {
      const values = body.values ?? {};
      if (values === null || typeof values !== 'object' || Array.isArray(values)) throw new TypeError(`${kind}: values by column name`);
      this.values = new Map(Object.entries(values).map(([name, value]) => [name, pendingValue(value)]));
    }
    if (kind === 'insert') {
      const placement = body.placement ?? 'sorted';
      if (placement === 'sorted') this.placement = sortedPlacement;
      else if (placement !== null && typeof placement === 'object' && ('first' in placement) !== ('last' in placement)) {
        this.placement = 'first' in placement ? { edge: 'first', section: pendingValue(placement.first) } : { edge: 'last', section: pendingValue(placement.last) };
      } else {
        throw new TypeError("insert: placement is 'sorted', {first: sectionKey} or {last: sectionKey}");
      }
    }
    Object.freeze(this);
  }
}

const sortedPlacement = Object.freeze({ edge: 'sorted' });

/**
 * Where a pending row stands among the rows held (the region: the server's positions
 * `start ..< end`, the window within the list), exactly or not at all (null).
 */
class Placer {
  constructor(model, start, end) {
    this.sections = model.sections;
    this.order = model.order;
    this.start = start;
    this.end = end;
    // One section keyed null is a list without sections.
    this.sectioned = this.sections.length !== 1 || this.sections.keys[0] !== null;
  }

  /** {index among `slots`, section} for the row `id` with `values` (an array in column order). */
  place(id, values, placement, slots) {
    const sections = this.sections;
    if (placement.edge === 'sorted') {
      const order = this.order;
      if (!order || sections.length === 0) return null;
      // The server's rows held (no effect touched them) are in its order: binary search for the
      // gap among them (no two rows tie: the identity ends the order), then the place among the
      // pending rows already in that gap.
      const row = { id, values };
      const before = (other) => (other.key === null || other.values === null ? null : compareRows(order, row, other) < 0);
      const settled = [];
      slots.forEach((slot, index) => { if (!slot.pending) settled.push(index); });
      let low = 0, high = settled.length;
      while (low < high) {
        const middle = (low + high) >> 1;
        const comes = before(slots[settled[middle]]);
        if (comes === null) return null;
        if (comes) high = middle; else low = middle + 1;
      }
      // Before the first row held, or after the last, the place is exact only at the list's ends.
      if (low === 0 && this.start > 0) return null;
      if (low === settled.length && this.end < sections.count) return null;
      let index = low > 0 ? settled[low - 1] + 1 : 0;
      const runEnd = low < settled.length ? settled[low] : slots.length;
      for (; index < runEnd; index++) {
        const comes = before(slots[index]);
        if (comes === null) return null;
        if (comes) break;
      }
      low = index;
      const first = low > 0 ? slots[low - 1].section : 0;
      const last = low < slots.length ? slots[low].section : sections.length - 1;
      if (first > last) return null;
      if (!this.sectioned) return { index: low, section: first };
      // With sections, the first term's column is the row's section: one of those around its place.
      const column = order[0].column;
      if (column === null || column >= values.length) return null;
      for (let section = first; section <= last; section++) {
        if (sameValue(sections.keys[section], values[column])) return { index: low, section };
      }
      return null;   // it would open a section
    }
    const section = sections.keys.findIndex((key) => sameValue(key, placement.section));
    if (section < 0) return null;
    const edge = placement.edge === 'first' ? sections.starts[section] : sections.starts[section + 1];
    if (edge < this.start || edge > this.end) return null;
    const index = slots.findIndex((slot) => (placement.edge === 'first' ? slot.section >= section : slot.section > section));
    return { index: index < 0 ? slots.length : index, section };
  }
}

function applyEffect(effect, slots, held, columns, columnIndex, placer) {
  switch (effect.kind) {
    case 'insert': {
      // The server's list shows it already, or an earlier effect did.
      if (held.has(effect.key) || slots.some((slot) => slot.key === effect.key)) return;
      const values = columns.map((name) => (effect.values.has(name) ? effect.values.get(name) : null));
      const place = placer.place(effect.id, values, effect.placement, slots);
      if (!place) return;
      slots.splice(place.index, 0, { key: effect.key, id: effect.id, values, section: place.section, serverPosition: null, pending: true });
      return;
    }
    case 'update': {
      const index = slots.findIndex((slot) => slot.key === effect.key);
      if (index < 0 || slots[index].values === null) return;
      const old = slots[index].values;
      const values = [...old];
      for (const [name, value] of effect.values) {
        const column = columnIndex.get(name);
        if (column !== undefined) values[column] = value;
      }
      if (sameValues(values, old)) return;
      const [slot] = slots.splice(index, 1);
      const place = placer.place(slot.id, values, sortedPlacement, slots);
      if (place && (place.index !== index || place.section !== slot.section)) {
        slots.splice(place.index, 0, { ...slot, values, section: place.section, pending: true });
      } else {
        slots.splice(index, 0, { ...slot, values, pending: true });   // its place is not among the rows held: it stays
      }
      return;
    }
    default: {
      const index = slots.findIndex((slot) => slot.key === effect.key);
      if (index >= 0) slots.splice(index, 1);
    }
  }
}

let lastPendingStamp = 0;

/**
 * The list a client shows: the server's list (a ListModel) at its version with the pending
 * effects laid over the rows it holds. Read it as a ListModel: `count`, `sections`, `row(position)`
 * ({key, id, values, stamp, pending} or null), `positionOf(key)`, `version`, `columns`, `order`.
 * The effects touch only the region — the server's window within the list, positions
 * `regionStart ..< regionStart + regionCount` — so rows before it keep their positions and rows
 * after it shift by `count - model.count`.
 */
export class DisplayedList {
  constructor(model, start, end, slots, previous) {
    this.version = model.version;
    this.columns = model.columns;
    this.order = model.order;
    this.lastObservedAt = model.lastObservedAt;
    this.regionStart = start;
    this.regionCount = end - start;
    const plain = slots === null;
    if (plain) slots = regionSlots(model, start, end);
    this.plain = plain;
    this.shift = slots.length - this.regionCount;
    this.count = model.count + this.shift;
    // The sections: their counts less the region's rows, plus the rows shown there.
    if (plain) {
      this.sections = model.sections;
    } else {
      const counts = [...model.sections.counts];
      let section = 0;
      for (let position = start; position < end; position++) {
        while (section + 1 < model.sections.length && model.sections.starts[section + 1] <= position) section += 1;
        counts[section] -= 1;
      }
      for (const slot of slots) counts[slot.section] += 1;
      this.sections = new Sections(model.sections.keys, counts);
    }
    // The rows shown in the region; pending ones keep their stamp while their values do not change.
    const previousPending = previous?.pendingRecords ?? new Map();
    this.pendingRecords = new Map();
    this.rows = new Array(slots.length);
    this.serverPositions = new Array(slots.length);
    this.byServer = new Int32Array(this.regionCount).fill(-1);
    this.byKey = new Map();
    this.inserted = new Set();
    slots.forEach((slot, offset) => {
      this.serverPositions[offset] = slot.serverPosition;
      if (slot.serverPosition !== null) this.byServer[slot.serverPosition - start] = offset;
      if (slot.key === null) { this.rows[offset] = null; return; }
      let stamp = slot.stamp;
      if (slot.pending) {
        const last = previousPending.get(slot.key);
        stamp = last && sameValues(last.values, slot.values) ? last.stamp : `p${++lastPendingStamp}`;
        this.pendingRecords.set(slot.key, { values: slot.values, stamp });
      }
      if (slot.serverPosition === null) this.inserted.add(slot.key);
      this.rows[offset] = Object.freeze({ key: slot.key, id: slot.id, values: slot.values, stamp, pending: slot.pending });
      this.byKey.set(slot.key, start + offset);
    });
    // Rows known outside the region (a window asked for), where they stand now.
    this.outside = new Map();
    for (const [position, known] of model.known) {
      if (position >= start && position < end) continue;
      const shown = position < start ? position : position + this.shift;
      this.outside.set(shown, model.row(position));
      if (!this.byKey.has(known.key)) this.byKey.set(known.key, shown);
    }
    Object.freeze(this);
  }

  /** The row at `position`: {key, id, values (null: not loaded), stamp, pending}, or null when its identity is unknown. */
  row(position) {
    const offset = position - this.regionStart;
    if (offset >= 0 && offset < this.rows.length) return this.rows[offset];
    return this.outside.get(position) ?? null;
  }

  /** The position of the row whose key is `key` among the rows known, or null. */
  positionOf(key) { return this.byKey.get(key) ?? null; }

  /** The end of the region in displayed positions: `regionStart` plus the rows shown there. */
  get regionEnd() { return this.regionStart + this.rows.length; }

  /** Whether rows the effects brought in or changed show (false: this is the server's list). */
  get hasPending() { return !this.plain; }

  /** The server's position of displayed `position` (for a pending row, the nearest held one). */
  serverPosition(position) {
    const offset = position - this.regionStart;
    if (offset < 0) return position;
    if (offset >= this.rows.length) return position - this.shift;
    return this.serverPositions[offset] ?? this.regionStart + Math.min(offset, Math.max(0, this.regionCount - 1));
  }

  // For DisplayedTransition: positions of server rows, and the region's slots.

  /** The displayed position of the server's row at `position`, or null when an effect took it out. */
  fromServer(position) {
    const offset = position - this.regionStart;
    if (offset < 0) return position;
    if (offset >= this.regionCount) return position + this.shift;
    const shown = this.byServer[offset];
    return shown < 0 ? null : this.regionStart + shown;
  }

  /** The server's position of the row at displayed `position`; null for a row an effect inserted. */
  toServer(position) {
    const offset = position - this.regionStart;
    if (offset < 0) return position;
    if (offset >= this.rows.length) return position - this.shift;
    return this.serverPositions[offset];
  }

  /** The key of the region's row at displayed `position`, or null (outside the region, unknown). */
  regionKey(position) {
    const offset = position - this.regionStart;
    return offset >= 0 && offset < this.rows.length ? this.rows[offset]?.key ?? null : null;
  }

  /** The displayed position of the region's row that holds the server's `position`, and its key. */
  regionKeyOfServer(position) {
    const offset = position - this.regionStart;
    if (offset < 0 || offset >= this.regionCount || this.byServer[offset] < 0) return null;
    return this.rows[this.byServer[offset]]?.key ?? null;
  }

  /** The displayed position of key `key` in the region, or null. */
  regionPositionOf(key) {
    const position = this.byKey.get(key);
    return position !== undefined && position >= this.regionStart && position < this.regionStart + this.rows.length ? position : null;
  }
}

function regionSlots(model, start, end) {
  const slots = [];
  const sections = model.sections;
  let section = 0;
  for (let position = start; position < end; position++) {
    while (section + 1 < sections.length && sections.starts[section + 1] <= position) section += 1;
    const row = model.row(position);
    slots.push(row
      ? { key: row.key, id: row.id, values: row.values, stamp: row.stamp, section, serverPosition: position, pending: false }
      : { key: null, id: undefined, values: null, stamp: undefined, section, serverPosition: position, pending: false });
  }
  return slots;
}

/**
 * The list `model` holds with `effects` (lists of PendingEffect, one per mutation, in mutation
 * order) laid over the rows it holds, as a DisplayedList. An effect does nothing when the
 * server's list shows it already (an insert of an identity held, an update or delete of one not
 * held, an update to the values the row has) or when its exact place is not among the rows held;
 * a later effect sees the earlier ones. `previous` (the last DisplayedList) keeps pending rows'
 * stamps while their values stay.
 *
 * Cost: O(w + k) for w rows in the window and k known, plus, per effect, O(log w) comparisons
 * and an O(w) search and splice of the window's array — never O(list size).
 */
export function resolvePending(model, effects, previous = null) {
  const count = model.count;
  const start = Math.min(Math.max(0, model.window[0]), count);
  const end = Math.max(start, Math.min(model.window[1], count));
  const lists = [...effects].filter((list) => list.length > 0);
  if (lists.length === 0 || model.version === null) return new DisplayedList(model, start, end, null, null);
  const slots = regionSlots(model, start, end);
  const held = new Set();
  for (const row of model.known.values()) held.add(row.key);
  const placer = new Placer(model, start, end);
  const columnIndex = new Map();
  model.columns.forEach((name, index) => { if (!columnIndex.has(name)) columnIndex.set(name, index); });
  for (const list of lists) for (const effect of list) applyEffect(effect, slots, held, model.columns, columnIndex, placer);
  if (slots.length === end - start && !slots.some((slot) => slot.pending)) return new DisplayedList(model, start, end, null, null);
  return new DisplayedList(model, start, end, slots, previous);
}

/**
 * The server's positions across one of its transitions (a `changes`): the model's `mapping`
 * between `oldSections` and `newSections`, as flat positions.
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

/**
 * One transition of the displayed list, from `from` to `to` (DisplayedLists), the server's list
 * having gone through `server` ({newPosition, oldPosition} over its positions, or null: the
 * server's list did not change, only its window or the effects did): `newPosition(old)` and
 * `oldPosition(new)` pair the rows that stay (a position of neither is deleted, or inserted).
 * A row an effect inserted pairs with the row of its identity on the other side — the server's
 * row its commit brought, or the pending row again — so that it moves or changes as the same
 * row, never deleted and inserted. Each lookup is O(log) (the server's mapping).
 */
export class DisplayedTransition {
  constructor(from, to, server = null) {
    this.from = from;
    this.to = to;
    this.server = server;
  }

  newPosition(position) {
    return pair(position, this.from, this.to, this.server ? (p) => this.server.newPosition(p) : (p) => p);
  }

  oldPosition(position) {
    return pair(position, this.to, this.from, this.server ? (p) => this.server.oldPosition(p) : (p) => p);
  }
}

/** The position in `other` of the row at `position` in `list`, through `map` for server rows. */
function pair(position, list, other, map) {
  if (!(Number.isInteger(position) && position >= 0 && position < list.count)) return null;
  const key = list.regionKey(position);
  // A row an effect inserted, on either side, pairs by its identity.
  if (key !== null && (list.inserted.has(key) || other.inserted.has(key))) return other.regionPositionOf(key);
  const server = list.toServer(position);
  if (server === null) return null;
  const target = map(server);
  if (target === null || target < 0) return null;
  const shown = other.fromServer(target);
  if (shown === null || shown >= other.count) return null;
  const otherKey = other.regionKeyOfServer(target);
  if (otherKey !== null && (list.inserted.has(otherKey) || other.inserted.has(otherKey))) return null;   // paired by identity
  return shown;
}

// ---------------------------------------------------------------------------------------------
// The live query over a WebSocket

/** `url` with the bearer token as its `access_token` query parameter (none: as it is). */
function withToken(url, token) {
  return token ? url + (url.includes('?') ? '&' : '?') + 'access_token=' + encodeURIComponent(token) : url;
}

/** The wait before connecting again after `attempt` failures: doubling from `base` to `cap`, plus up to a quarter at random. */
function reconnectDelay([base, cap], attempt) {
  const delay = Math.min(cap, base * 2 ** Math.min(attempt - 1, 10));
  return delay + Math.random() * delay / 4;
}

/**
 * Watches a connection a page cannot ping (a browser sends no WebSocket pings): after `quiet` ms
 * without a frame it calls `probe()`, which sends a message the server answers at once and
 * returns true, or returns false when none may go now; after `answer` ms more without a frame it
 * stops and calls `drop(silentFor)`. `heard()` tells it a frame came. `liveness` null (`[quiet,
 * answer]` otherwise) watches nothing.
 */
class ConnectionWatch {
  constructor(liveness, { probe, drop }) {
    this.liveness = liveness;
    this.probe = probe;
    this.drop = drop;
    this.timer = null;
    this.lastFrameAt = 0;
    this.probedAt = null;   // when the last probe went out, since the last frame
  }

  /** Watches from now, as if a frame had just come. */
  start() {
    this.stop();
    if (!this.liveness) return;
    const [quiet, answer] = this.liveness;
    this.heard();
    this.timer = setInterval(() => this.#check(), Math.max(10, Math.min(quiet, answer) / 4));
    this.timer.unref?.();   // under node: a forgotten client does not keep the process alive
  }

  stop() {
    clearInterval(this.timer);
    this.timer = null;
  }

  heard() {
    this.lastFrameAt = Date.now();
    this.probedAt = null;
  }

  #check() {
    const [quiet, answer] = this.liveness;
    const now = Date.now();
    if (now - this.lastFrameAt >= quiet + answer && (this.probedAt === null || now - this.probedAt >= answer)) {
      this.stop();
      this.drop(now - this.lastFrameAt);
    } else if (now - this.lastFrameAt >= quiet && this.probedAt === null && this.probe()) {
      this.probedAt = now;
    }
  }
}

/**
 * A published query followed live: `start()` connects and subscribes; every message becomes an
 * event for `onEvent` — {type: 'reset'|'changes'|'rows'|'pending'|'failure'|'state', …} — after
 * the model applied it. `retry()` and reconnection with backoff resume from the version held.
 *
 * Two lists:
 * - `model` (a ListModel): the server's list at its version, as its messages made it.
 * - `displayed` (a DisplayedList): what to show — `model` with the pending effects of the
 *   client's own mutations laid over the rows held (`addPending(key, effects)`, removed by
 *   `removePending(key)`; a Mutator given `effects` does both). It reads as a ListModel (`count`,
 *   `sections`, `row(position)`, `positionOf(key)`, `version`, `columns`), and a row shown or
 *   changed by an effect has `pending: true`. It is recomputed after every message and every
 *   change of the effects; while none is pending it is the server's list. Views read `displayed`,
 *   not `model`.
 *
 * Events `changes`, `rows` and `pending` (effects added or removed) carry `transition`, a
 * DisplayedTransition from the displayed list before to the one now (`newPosition(old)`,
 * `oldPosition(new)`); a `reset` is a new first state. `showRows(start, end)` takes displayed
 * positions and keeps the server's window around them. `sync()` resolves once the list holds
 * every commit made before it was called (the protocol's `sync`).
 *
 * A quiet connection is checked: after `liveness[0]` ms without a frame (default 20 s) the query
 * sends a `sync` the server answers at once, and after `liveness[1]` ms more without a frame
 * (default 10 s) it drops the connection and reconnects, without waiting for the socket's close,
 * which a hung server or a network gone away may never complete. A browser cannot send
 * WebSocket pings itself: this is how the page notices. `liveness: null` turns it off.
 *
 * Offline: `snapshot()` is the server's list as plain JSON (the `reset` it would send), and
 * `restore(snapshot)` shows one before `start()` — `staleSince` (ms since 1970) says since when
 * it is stale, until the server's first message — and the query then resumes from its version.
 * An OfflineStore keeps them in IndexedDB.
 */
export class LiveQuery {
  constructor(url, query, { args = {}, window = [0, 100], prefetch = 40, WebSocket: Socket = globalThis.WebSocket, token = null, backoff = [100, 5000],
    liveness = [20_000, 10_000] } = {}) {
    this.url = url;
    this.query = query;
    this.args = args;
    this.prefetch = prefetch;
    this.model = new ListModel();
    this.state = 'idle';        // idle, connecting, live, reconnecting, refused, stopped
    this.failure = null;        // {message, retry()} while the list cannot follow
    this.onEvent = () => {};
    this.resetsReceived = 0;
    this.messagesApplied = 0;
    this.framesReceived = 0;
    this.windowRequests = 0;
    this.Socket = Socket;
    this.token = token;
    this.backoff = backoff;
    this.watch = new ConnectionWatch(liveness, {
      // Answered at once with `synced` (an id no sync() waits for: ignored when it comes).
      probe: () => {
        if (!this.socket || this.state !== 'live' || this.awaitingSubscription) return false;
        this.lastSync = this.lastSync >= 0x7fffffff ? 1 : this.lastSync + 1;
        this.socket.send(JSON.stringify({ type: 'sync', sub: this.sub, id: this.lastSync }));
        return true;
      },
      drop: (silentFor) => this.#drop(`no frame from the server for ${silentFor} ms`),
    });
    this.wanted = window;
    this.sub = 0;
    this.attempt = 0;
    this.socket = null;
    this.timer = null;
    this.awaitingSubscription = false;
    this.acceptedArgs = null;
    this.pendingEffects = new Map();   // key → [PendingEffect], in the order added
    this.displayed = resolvePending(this.model, []);
    this.syncs = new Map();            // id → {resolve, reject, sentOn: the sub it was sent for}
    this.lastSync = 0;
    this.staleSince = null;            // ms since 1970: the list shown is a snapshot held then (restore)
    this.observers = new Set();
    this.listArgs = null;              // the arguments of the list `model` holds (null: `args`)
    this.subscribedArgs = null;        // the arguments of the last subscribe
  }

  /**
   * Calls `listener` with every event, after `onEvent` (which a view takes for itself): how an
   * OfflineStore hears of changes. Returns a function that stops it.
   */
  observe(listener) {
    this.observers.add(listener);
    return () => { this.observers.delete(listener); };
  }

  /**
   * The list held, to show again before the server is reached (`restore`), as plain JSON:
   * `{query, args, list, savedAt}` — `args` the arguments of that list (the wire's JSON form),
   * `list` the `reset` the server would send for it at its version (sections and counts, the
   * window, the window's rows held with their values, the order), `savedAt` when it was held (ms
   * since 1970: now, or `staleSince` while the list is still a restored one). Built from `model`,
   * the server's list: pending effects are left out. Null before the first state.
   * O(w + s) for w positions of the window and s sections.
   */
  snapshot() {
    const list = this.model.heldList();
    if (list === null) return null;
    return { query: this.query, args: wireArguments(this.listArgs ?? this.args), list, savedAt: this.staleSince ?? Date.now() };
  }

  /**
   * Shows `snapshot` (a `snapshot()`, or its JSON text) as the list's first state before
   * `start()`: `staleSince` is its `savedAt` until the first server message is applied, and a
   * `reset` event with `restored: true` lets a view draw it at once. Once started, the query
   * subscribes with `resume` from the snapshot's version and window, as after a lost connection:
   * the server answers with one `changes` (or a reset when it no longer has that version).
   *
   * Throws a RestoreError, and changes nothing, when the query has started or holds a list
   * (`started`), when the snapshot is of another query (`otherQuery`) or of other arguments —
   * compared value by value, exactly, as the protocol's values (`otherArguments`) — or when it is
   * not one (`damaged`: not JSON, a field missing, or a list that is not a reset the model takes).
   * O(w + s) for w rows held and s sections.
   */
  restore(snapshot) {
    if (this.state !== 'idle' || this.socket || this.model.version !== null) throw new RestoreError('started', 'the query has started: a snapshot is shown before start()');
    if (typeof snapshot === 'string') {
      try {
        snapshot = JSON.parse(snapshot);
      } catch {
        throw new RestoreError('damaged', 'the snapshot is not JSON');
      }
    }
    if (snapshot === null || typeof snapshot !== 'object' || typeof snapshot.query !== 'string' || snapshot.args === null
      || typeof snapshot.args !== 'object' || Array.isArray(snapshot.args) || snapshot.list === null || typeof snapshot.list !== 'object') {
      throw new RestoreError('damaged', 'the snapshot lacks its query, arguments or list');
    }
    const savedAt = snapshot.savedAt instanceof Date ? snapshot.savedAt.getTime() : snapshot.savedAt;
    if (typeof savedAt !== 'number' || !Number.isFinite(savedAt)) throw new RestoreError('damaged', 'the snapshot lacks savedAt');
    if (snapshot.query !== this.query) throw new RestoreError('otherQuery', `the snapshot is of the query "${snapshot.query}"`);
    if (!sameArguments(snapshot.args, this.args)) throw new RestoreError('otherArguments', 'the snapshot is of the query with other arguments');
    if (snapshot.list.type !== 'reset') throw new RestoreError('damaged', 'the snapshot\'s list is not a reset');
    // The same strict reading as the server's reset; a list it refuses is not shown.
    const model = new ListModel();
    let output;
    try {
      output = model.receive(snapshot.list);
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      throw new RestoreError('damaged', `the snapshot's list: ${error.message}`);
    }
    this.model = model;
    this.listArgs = this.args;
    if (model.window[1] > model.window[0]) this.wanted = [...model.window];
    this.staleSince = savedAt;
    this.#display(null);
    this.#emit({ type: 'reset', reason: output.reason, restored: true });
  }

  /**
   * Shows `effects` (`{insert}`, `{update}`, `{delete}`: see PendingEffect) at once over the list,
   * marked pending, after those added before, until `removePending(key)`. Throws a TypeError for
   * an effect that is not one (and shows none of them).
   */
  addPending(key, effects) {
    const checked = effects.map((effect) => new PendingEffect(effect));
    this.pendingEffects.set(key, checked);
    this.#redisplay();
  }

  /** Takes the effects `key` back; false when there were none. */
  removePending(key) {
    if (!this.pendingEffects.delete(key)) return false;
    this.#redisplay();
    return true;
  }

  get pendingCount() { return this.pendingEffects.size; }

  /**
   * Resolves (with the version held) once every commit made before the call is in the list: the
   * protocol's `sync`, sent again after a reconnection until answered. Rejects when the live
   * query stops or is refused.
   */
  sync() {
    return new Promise((resolve, reject) => {
      if (this.state === 'stopped' || this.state === 'refused') {
        reject(new Error(`the live query is ${this.state}`));
        return;
      }
      this.lastSync = this.lastSync >= 0x7fffffff ? 1 : this.lastSync + 1;
      this.syncs.set(this.lastSync, { resolve, reject, sentOn: null });
      this.#sendSyncs();
    });
  }

  #sendSyncs() {
    if (!this.socket || this.state !== 'live' || this.awaitingSubscription) return;
    for (const [id, entry] of this.syncs) {
      if (entry.sentOn === this.sub) continue;
      entry.sentOn = this.sub;
      this.socket.send(JSON.stringify({ type: 'sync', sub: this.sub, id }));
    }
  }

  #rejectSyncs(reason) {
    const syncs = [...this.syncs.values()];
    this.syncs.clear();
    for (const entry of syncs) entry.reject(new Error(reason));
  }

  /** Lays the effects over the server's list again; the transition from what was displayed. */
  #display(server) {
    const before = this.displayed;
    this.displayed = resolvePending(this.model, this.pendingEffects.values(), before);
    return new DisplayedTransition(before, this.displayed, server);
  }

  #redisplay() {
    this.#emit({ type: 'pending', transition: this.#display(null) });
  }

  start() {
    if (this.socket || this.state === 'live') return;
    this.state = this.attempt === 0 ? 'connecting' : 'reconnecting';
    this.#emit({ type: 'state', state: this.state });
    const url = withToken(this.url, this.token);
    let socket;
    try {
      socket = new this.Socket(url);
    } catch (error) {
      this.#lost(String(error));
      return;
    }
    this.socket = socket;
    this.watch.start();
    socket.onopen = () => {
      if (this.socket !== socket) return;
      this.watch.heard();
      this.#subscribe();
    };
    socket.onmessage = (event) => {
      if (this.socket !== socket) return;
      this.watch.heard();
      this.#receive(event.data);
    };
    socket.onclose = (event) => {
      if (this.socket !== socket) return;
      this.watch.stop();
      this.socket = null;
      this.#lost(`closed (${event.code}${event.reason ? ': ' + event.reason : ''})`);
    };
    socket.onerror = () => {};
  }

  stop() {
    clearTimeout(this.timer);
    this.timer = null;
    this.watch.stop();
    const socket = this.socket;
    this.socket = null;
    if (socket) socket.close(1000);
    this.state = 'stopped';
    this.#rejectSyncs('the live query stopped');
    this.#emit({ type: 'state', state: this.state });
  }

  /**
   * Gives the connection up and reconnects (with backoff) at once: its close handshake, which
   * may never complete, is not waited for, and whatever it still delivers is ignored.
   */
  #drop(reason, code = 1000, closeReason = undefined) {
    const socket = this.socket;
    if (!socket) return;
    this.watch.stop();
    this.socket = null;
    try { socket.close(code, closeReason); } catch { /* closing already */ }
    this.#lost(reason);
  }

  /** Connects again now (the failed row's retry). */
  retry() {
    clearTimeout(this.timer);
    this.timer = null;
    if (this.socket) return;
    this.start();
  }

  /**
   * New arguments (a new filter or sort), one call: the server moves the subscription and sends
   * one changeset from the list shown to the new one (animated like any commit), or a reset when
   * they differ by more than a reset costs.
   */
  setArguments(args) {
    if (JSON.stringify(args) === JSON.stringify(this.args)) return;
    this.acceptedArgs = this.acceptedArgs ?? this.args;
    this.args = args;
    if (this.socket && this.state === 'live') this.socket.send(JSON.stringify({ type: 'arguments', sub: this.sub, arguments: args }));
  }

  /** Makes sure the displayed rows `start..<end` (and `prefetch` around them) are sent. */
  showRows(start, end) {
    // Displayed positions to the server's: pending rows shift positions within the window only.
    const first = this.displayed.serverPosition(start);
    end = end > start ? Math.max(first, this.displayed.serverPosition(end - 1) + 1) : first;
    start = first;
    const from = Math.max(0, start - this.prefetch);
    const wanted = [from, Math.max(from, end + this.prefetch)];
    const current = this.model.requestedWindow ?? this.model.window;
    const needed = [Math.min(wanted[0], this.model.count), Math.min(wanted[1], this.model.count)];
    if (needed[1] <= needed[0] || (current[0] <= needed[0] && needed[1] <= current[1])) return;
    this.wanted = wanted;
    if (this.state !== 'live' || !this.socket) return;
    this.#requestWindow(wanted);
  }

  #requestWindow(wanted) {
    this.model.didRequest(wanted);
    this.windowRequests += 1;
    this.socket.send(JSON.stringify({ type: 'window', sub: this.sub, window: [wanted[0], wanted[1] - wanted[0]] }));
  }

  #subscribe() {
    this.sub += 1;
    const message = { type: 'subscribe', sub: this.sub, query: this.query, arguments: this.args, window: [this.wanted[0], this.wanted[1] - this.wanted[0]] };
    const resume = this.model.resume;
    if (resume) message.resume = resume;
    this.model.didSubscribe(this.wanted);
    this.awaitingSubscription = true;
    this.acceptedArgs = null;
    this.subscribedArgs = this.args;
    this.socket.send(JSON.stringify(message));
  }

  #receive(text) {
    this.framesReceived += 1;
    let message;
    try {
      message = JSON.parse(text);
    } catch {
      this.#drop('a frame that is not JSON', 1002, 'not JSON');
      return;
    }
    if (message === null || typeof message !== 'object') return;
    if (message.sub !== undefined && message.sub !== this.sub) return;   // a subscription given up
    if (message.type === 'mutated' || (message.type === 'error' && message.mutation !== undefined)) return;   // a Mutator's
    if (message.type === 'synced') {
      const entry = this.syncs.get(message.id);
      if (entry) {
        this.syncs.delete(message.id);
        entry.resolve(message.version);
      }
      return;
    }
    let output;
    try {
      output = this.model.receive(message);
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      // Start the subscription over: a gap resumes from the version held, a contradiction resets.
      if (error.kind !== 'versionGap') this.model = new ListModel();
      this.socket.send(JSON.stringify({ type: 'unsubscribe', sub: this.sub }));
      this.#subscribe();
      return;
    }
    this.messagesApplied += 1;
    if (output.type === 'error' && output.error.code === 'behind') {
      // This server has not reached the version the list holds (another showed it): connect
      // again, with backoff — behind a load balancer, perhaps to another one.
      this.#drop(`behind: ${output.error.message}`);
      return;
    }
    if (output.type === 'error') {
      // Before the subscription's first answer an error refuses it; after, a refused request (new
      // arguments that do not fit, a bad window) leaves it going, with its old arguments.
      const refused = (this.awaitingSubscription && output.error.code !== 'queryFailed') || output.error.code === 'queryClosed';
      if (output.error.code === 'badArguments' && this.acceptedArgs) { this.args = this.acceptedArgs; this.acceptedArgs = null; }
      this.failure = { message: `${output.error.code}: ${output.error.message}`, retry: () => this.retry() };
      if (refused) {
        this.state = 'refused';
        this.watch.stop();
        this.socket?.close(1000);
        this.socket = null;
        this.#rejectSyncs(`the live query was refused: ${output.error.code}`);
      }
      // A sync whose look failed is answered by this error: ask again once the list goes on.
      if (output.error.code === 'queryFailed') for (const entry of this.syncs.values()) entry.sentOn = null;
      this.#emit({ type: 'failure', failure: this.failure, refused });
      return;
    }
    if (this.state !== 'live') {
      this.state = 'live';
      this.attempt = 0;
      this.#emit({ type: 'state', state: 'live' });
    }
    // The list held is of the arguments subscribed with (the answer to a subscribe), or of the
    // last ones sent (a reset, or changes to another live query's version, answer `arguments`).
    if (output.type === 'reset' || output.type === 'changes') {
      if (this.awaitingSubscription) this.listArgs = this.subscribedArgs;
      else if (this.acceptedArgs && (output.type === 'reset' || output.changes.from.split(':')[0] !== output.changes.to.split(':')[0])) this.listArgs = this.args;
    }
    // The server answered: the list is live again, no longer the snapshot restored.
    if (this.staleSince !== null) {
      this.staleSince = null;
      this.#emit({ type: 'stale', staleSince: null });
    }
    if (this.failure && output.type !== 'none') {
      this.failure = null;
      this.#emit({ type: 'recovered' });
    }
    if (output.type === 'reset') {
      this.resetsReceived += 1;
      // A reset after dropped frames may have dropped a `synced` with them: ask again.
      for (const entry of this.syncs.values()) entry.sentOn = null;
    }
    if (output.type === 'reset' || output.type === 'changes' || output.type === 'rows') {
      const transition = this.#display(output.type === 'changes' ? serverPositionMapping(output.oldSections, this.model.sections, output.mapping) : null);
      if (output.type !== 'reset') output = { ...output, transition };
    }
    if (output.type === 'reset' || output.type === 'changes') this.awaitingSubscription = false;
    // A reset, or changes from one live query's version to another's, answer new arguments.
    if (output.type === 'reset' || (output.type === 'changes' && output.changes.from.split(':')[0] !== output.changes.to.split(':')[0])) this.acceptedArgs = null;
    if (output.type !== 'none') this.#emit(output);
    this.#sendSyncs();
    // A window asked for while another was in flight goes out once that one is answered.
    const requested = this.model.requestedWindow;
    if (requested === null && (this.wanted[0] !== this.model.window[0] || this.wanted[1] !== this.model.window[1]) && this.socket) {
      this.#requestWindow(this.wanted);
    }
  }

  #lost(reason) {
    if (this.state === 'stopped' || this.state === 'refused') return;
    this.attempt += 1;
    this.state = 'reconnecting';
    this.failure = { message: `connection lost: ${reason}`, retry: () => this.retry() };
    this.#emit({ type: 'failure', failure: this.failure, refused: false });
    this.timer = setTimeout(() => { this.timer = null; this.start(); }, reconnectDelay(this.backoff, this.attempt));
  }

  #emit(event) {
    this.onEvent(event);
    for (const listener of this.observers) {
      try {
        listener(event);
      } catch (error) {
        queueMicrotask(() => { throw error; });   // reported, without stopping the list
      }
    }
  }
}

/** Why `LiveQuery.restore` did not show a snapshot: `code` is `started`, `otherQuery`, `otherArguments` or `damaged`. */
export class RestoreError extends Error {
  constructor(code, message) {
    super(`${code}: ${message}`);
    this.name = 'RestoreError';
    this.code = code;
  }
}

/** Arguments in the wire's JSON form (what a subscribe sends). */
function wireArguments(args) {
  return JSON.parse(JSON.stringify(args ?? {}));
}

/** An argument as a value the model holds (exact), or undefined when it is not a protocol value. */
function argumentValue(json) {
  try {
    return pendingValue(json);
  } catch {
    return undefined;
  }
}

/**
 * Whether two sets of arguments are the same, by the protocol's exact value equality: the same
 * names, each with the same value of the same class (`5` and `{"f":5}` differ; text code unit for
 * code unit, never normalized). Anything that is not a protocol value compares as JSON.
 */
export function sameArguments(a, b) {
  let x, y;
  try {
    x = wireArguments(a);
    y = wireArguments(b);
  } catch {
    return false;
  }
  const names = Object.keys(x);
  if (names.length !== Object.keys(y).length) return false;
  for (const name of names) {
    if (!Object.hasOwn(y, name)) return false;
    const left = argumentValue(x[name]), right = argumentValue(y[name]);
    if (left === undefined || right === undefined) {
      if (JSON.stringify(x[name]) !== JSON.stringify(y[name])) return false;
    } else if (!sameValue(left, right)) {
      return false;
    }
  }
  return true;
}

/**
 * A client's mutations not yet answered, in number order, and what each answer does to them: the
 * Mutator's decisions, apart from its socket. A mutation stays until the server answers it, whoever
 * waits for it (a caller, or no one: one restored from a previous page, or whose caller gave up),
 * so that numbers are never skipped. `receive(message)` returns {action: 'finish', entry, mutated |
 * error}, {action: 'resendAll'} or {action: 'ignore'}.
 */
export class PendingMutations {
  constructor(client, nextId = 1, restored = []) {
    if (typeof client !== 'string' || client.length === 0) throw new TypeError('a client name of 1 to 128 bytes');
    this.client = client;
    this.nextId = nextId;
    this.entries = [];   // {mutation, resolve?, reject?}
    for (const mutation of [...restored].sort((a, b) => a.id - b.id)) {
      if (mutation.client !== client) continue;
      this.entries.push({ mutation });
      this.nextId = Math.max(this.nextId, mutation.id + 1);
    }
  }

  /** Numbers a new mutation and keeps it until it is answered. */
  add(name, args, waiter) {
    const mutation = { type: 'mutate', client: this.client, id: this.nextId, name, arguments: args };
    this.nextId += 1;
    this.entries.push({ mutation, ...waiter });
    return mutation;
  }

  /** What a new connection sends: every mutation waiting, in number order. */
  get toResend() { return this.entries.map((entry) => entry.mutation); }

  /** Lets go of every waiter (the mutator stopped); the mutations stay, to be sent again. */
  releaseWaiters() {
    const waiters = this.entries.filter((entry) => entry.reject).map(({ resolve, reject }) => ({ resolve, reject }));
    this.entries = this.entries.map(({ mutation }) => ({ mutation }));
    return waiters;
  }

  receive(message) {
    const named = message.type === 'mutated' ? message : message.type === 'error' ? message.mutation : null;
    if (!named || named.client !== this.client) return { action: 'ignore' };
    const index = this.entries.findIndex((entry) => entry.mutation.id === named.id);
    if (index < 0) return { action: 'ignore' };
    if (message.type === 'mutated') return { action: 'finish', entry: this.entries.splice(index, 1)[0], mutated: message };
    // Busy: it used no number, and the ones sent behind it were refused as out of order.
    if (message.code === 'mutationUnavailable') return { action: 'resendAll' };
    if (message.code === 'mutationOutOfOrder' && index > 0) return { action: 'ignore' };
    return { action: 'finish', entry: this.entries.splice(index, 1)[0], error: { code: String(message.code), message: String(message.message ?? '') } };
  }
}

/** A mutation the server refused: `code` is the protocol's error code (`conflict`, `mutationFailed`…), or `stopped` and `tooManyPending` (the client's). */
export class MutationError extends Error {
  constructor(code, message) {
    super(`${code}: ${message}`);
    this.code = code;
  }
}

/** Effects as `mutate` takes them (`{list, insert|update|delete}`), checked, by list; a TypeError for one that is not. */
function effectsByList(effects) {
  const byList = new Map();
  for (const effect of effects) {
    const list = effect?.list;
    if (!list || typeof list.addPending !== 'function') throw new TypeError('an effect names its list: {list: liveQuery, …}');
    if (!byList.has(list)) byList.set(list, []);
    byList.get(list).push(new PendingEffect(effect));
  }
  return byList;
}

/** A PendingEffect as `mutate` takes it, without its list: `{insert: {id, values, placement}}`, `{update: {id, values}}` or `{delete: {id}}`. */
function effectForm(effect) {
  const body = { id: effect.id };
  if (effect.values) body.values = Object.fromEntries(effect.values);
  if (effect.kind === 'insert') body.placement = effect.placement.edge === 'sorted' ? 'sorted' : { [effect.placement.edge]: effect.placement.section };
  return { [effect.kind]: body };
}

/**
 * Sends a client's mutations to a `livelist serve` server, each applied once: numbered under the
 * client's name, kept until answered, and sent again in order after a lost connection (to this
 * server or another over the same PostgreSQL database, which answers a mutation it applied
 * already with its first outcome). Keep `client`, `nextId` and `pendingMutations` (give them back
 * as the options `nextId` and `pending`) to keep the promise across page loads; give each tab a
 * client name of its own. `mutate` resolves with the server's `mutated` and rejects with a
 * MutationError.
 *
 * `mutate(name, args, {effects})` also shows what the mutation is expected to do, at once, in the
 * live queries it names — `[{list: live, insert: {id, values, placement}}, {list: live, update:
 * {id, values}}, {list: live, delete: {id}}]`, in that order (see PendingEffect). The mutator
 * keeps them by the mutation's number, not in the call: a mutation restored from a previous page
 * load (the option `pending`) is given its effects with `show(effects, id)`, and `effects(id)`
 * reads them back. Whenever a mutation is answered — a caller waiting for it or not — its rows
 * stay marked pending until each of its lists holds the commit (its `sync()` answers after
 * `mutated`), then the server's rows stand in their place; a refusal takes them back at once.
 * After `stop()` they stay shown, as their mutations stay pending.
 */
export class Mutator {
  static maximumPending = 1000;

  constructor(url, client, { nextId = 1, pending = [], WebSocket: Socket = globalThis.WebSocket, token = null, backoff = [100, 5000], resendDelay = 100,
    connectTimeout = 10_000, liveness = [20_000, 10_000] } = {}) {
    this.url = url;
    this.connectTimeout = connectTimeout;   // ms for the opening handshake: a server that never answers is given up, and tried again
    this.openTimer = null;
    this.lastProbe = 0;   // the last probe's sync id
    /**
     * An open connection is checked as a LiveQuery's is: after `liveness[0]` ms without a frame
     * the mutator sends a `sync` for a subscription number it never opens (the server answers at
     * once with `unknownSubscription`, ignored), and after `liveness[1]` ms more without a frame
     * it drops the connection, connects again and sends its pending mutations again. A page
     * cannot send WebSocket pings; without this, a mutation sent on a connection that died
     * without a word would wait for the browser to notice (minutes). `null` turns it off.
     */
    this.watch = new ConnectionWatch(liveness, {
      // No subscription is ever opened on a mutator's connection: any number is one not open.
      probe: () => {
        if (!this.open || !this.socket) return false;
        this.lastProbe = this.lastProbe >= 0x7fffffff ? 1 : this.lastProbe + 1;
        this.socket.send(JSON.stringify({ type: 'sync', sub: 0, id: this.lastProbe }));
        return true;
      },
      drop: () => this.#drop(),
    });
    this.pending = new PendingMutations(client, nextId, pending);
    this.Socket = Socket;
    this.token = token;
    this.backoff = backoff;
    this.resendDelay = resendDelay;
    this.socket = null;
    this.open = false;
    this.attempt = 0;
    this.busyAnswers = 0;
    this.timer = null;
    this.resendTimer = null;
    this.stopped = false;
    this.shownEffects = new Map();   // mutation number → [{list, effects: [PendingEffect]}], one entry a list
    /**
     * Called whenever `nextId` or `pendingMutations` change: synchronously after a mutation is
     * numbered (and its effects shown) and before it is sent, and after each answer. Keep them
     * there, synchronously (an OfflineStore's `mutator` does): a page closed after the send but
     * before they are kept would number its next mutation as one the server applied already, and
     * be answered with that one's outcome.
     */
    this.onPendingChange = null;
  }

  /** Tells `onPendingChange`; a hook that throws is reported and stops nothing. */
  #pendingChanged() {
    try {
      this.onPendingChange?.();
    } catch (error) {
      queueMicrotask(() => { throw error; });
    }
  }

  get client() { return this.pending.client; }
  get nextId() { return this.pending.nextId; }
  get pendingCount() { return this.pending.entries.length; }
  /** The mutations not answered yet, in number order: what to keep for the next page load. */
  get pendingMutations() { return this.pending.toResend; }

  /** Connects, and sends the mutations pending (restored ones included). */
  start() {
    this.stopped = false;
    if (this.open) return;
    this.#connect();
  }

  /**
   * Runs published mutation `name` with `args` once; resolves with its `mutated`. `effects` are
   * shown at once, marked pending, until the mutation is answered and its lists hold the commit
   * (see the class). Rejects with a TypeError, sending nothing, when an effect is not one. After
   * `stop()`, a call starts the mutator again.
   */
  mutate(name, args = {}, { effects = [] } = {}) {
    return new Promise((resolve, reject) => {
      if (this.pending.entries.length >= Mutator.maximumPending) {
        reject(new MutationError('tooManyPending', `${Mutator.maximumPending} mutations wait for the server's answer already`));
        return;
      }
      // Checked before anything is numbered or sent (a TypeError rejects the call).
      const byList = effectsByList(effects);
      const mutation = this.pending.add(name, args, { resolve, reject });
      this.#show(byList, mutation.id);
      this.#pendingChanged();
      if (this.open) this.socket.send(JSON.stringify(mutation)); else this.start();
    });
  }

  /**
   * Shows `effects` (`[{list, insert|update|delete}]`, as `mutate` takes them) for pending
   * mutation `id` — one restored from a previous page load — until it is answered, as `mutate`
   * shows its own (after any shown for it already). Nothing happens when no mutation `id` is
   * pending. Throws a TypeError, showing none of them, for an effect that is not one.
   */
  show(effects, id) {
    const byList = effectsByList(effects);
    if (!this.pending.entries.some((entry) => entry.mutation.id === id)) return;
    this.#show(byList, id);
  }

  /**
   * The effects shown for pending mutation `id` (none: `[]`), as `mutate` takes them: `{list,
   * insert: {id, values, placement}}`, `{list, update: {id, values}}` or `{list, delete: {id}}`,
   * values as the model holds them (see pendingValue). Grouped by list, in the order shown.
   */
  effects(id) {
    return (this.shownEffects.get(id) ?? []).flatMap(({ list, effects }) => effects.map((effect) => ({ list, ...effectForm(effect) })));
  }

  /** The key a list holds mutation `id`'s effects under. */
  #key(id) { return `${this.client}#${id}`; }

  #show(byList, id) {
    if (byList.size === 0) return;
    const shown = this.shownEffects.get(id) ?? [];
    for (const [list, effects] of byList) {
      let entry = shown.find((candidate) => candidate.list === list);
      if (!entry) {
        entry = { list, effects: [] };
        shown.push(entry);
      }
      entry.effects.push(...effects);
      list.addPending(this.#key(id), entry.effects);
    }
    this.shownEffects.set(id, shown);
  }

  /** Takes mutation `id`'s effects back from `list` (null: from every list). */
  #withdraw(id, list = null) {
    const shown = this.shownEffects.get(id);
    if (!shown) return;
    const left = [];
    for (const entry of shown) {
      if (list === null || entry.list === list) entry.list.removePending(this.#key(id)); else left.push(entry);
    }
    if (left.length === 0) this.shownEffects.delete(id); else this.shownEffects.set(id, left);
  }

  /**
   * Mutation `id` was answered: its effects go from each list once the list holds the commit (a
   * list whose sync fails, stopped or refused, lets them go then), at once when it was refused.
   */
  #settle(id, applied) {
    const shown = this.shownEffects.get(id);
    if (!shown) return;
    if (!applied) {
      this.#withdraw(id);
      return;
    }
    for (const { list } of shown) list.sync().catch(() => {}).then(() => this.#withdraw(id, list));
  }

  /**
   * Closes the connection. Every caller still waiting is rejected with a MutationError `stopped`;
   * the mutations stay pending (`pendingMutations`), sent again when the mutator starts, and
   * their effects stay shown.
   */
  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.resendTimer);
    this.#clearOpenTimer();
    this.watch.stop();
    this.timer = null;
    this.resendTimer = null;
    const socket = this.socket;
    this.socket = null;
    this.open = false;
    if (socket) socket.close(1000);
    for (const waiter of this.pending.releaseWaiters()) waiter.reject(new MutationError('stopped', 'the mutator stopped; the mutation stays pending'));
  }

  #connect() {
    if (this.socket || this.timer || this.stopped) return;
    const url = withToken(this.url, this.token);
    let socket;
    try {
      socket = new this.Socket(url);
    } catch {
      this.#lost();
      return;
    }
    this.socket = socket;
    this.#clearOpenTimer();
    this.openTimer = setTimeout(() => {
      this.openTimer = null;
      if (this.socket === socket && !this.open) this.#drop();
    }, this.connectTimeout);
    this.openTimer.unref?.();   // under node: a forgotten mutator does not keep the process alive
    socket.onopen = () => {
      if (this.socket !== socket) return;
      this.#clearOpenTimer();
      this.open = true;
      this.attempt = 0;
      this.watch.start();
      for (const mutation of this.pending.toResend) socket.send(JSON.stringify(mutation));
    };
    socket.onmessage = (event) => {
      if (this.socket !== socket) return;
      this.watch.heard();
      let message;
      try {
        message = JSON.parse(event.data);
      } catch {
        this.#drop(1002, 'not JSON');
        return;
      }
      if (message !== null && typeof message === 'object') this.#receive(message);
    };
    socket.onclose = () => {
      if (this.socket !== socket) return;
      this.#clearOpenTimer();
      this.watch.stop();
      this.socket = null;
      this.open = false;
      this.#lost();
    };
    socket.onerror = () => {};
  }

  #clearOpenTimer() {
    clearTimeout(this.openTimer);
    this.openTimer = null;
  }

  /** Gives the connection up and connects again, without waiting for a close that may never complete. */
  #drop(code = 1000, reason = undefined) {
    const socket = this.socket;
    if (!socket) return;
    this.#clearOpenTimer();
    this.watch.stop();
    this.socket = null;
    this.open = false;
    try { socket.close(code, reason); } catch { /* closing already */ }
    this.#lost();
  }

  #receive(message) {
    const decision = this.pending.receive(message);
    if (decision.action === 'finish') {
      this.#pendingChanged();
      // Its effects go whoever waits for it: a caller, or no one (restored, or its caller stopped waiting).
      const id = decision.entry.mutation.id;
      if (decision.error) {
        this.#settle(id, false);
        decision.entry.reject?.(new MutationError(decision.error.code, decision.error.message));
      } else {
        this.busyAnswers = 0;
        this.#settle(id, true);
        decision.entry.resolve?.(decision.mutated);
      }
    } else if (decision.action === 'resendAll' && this.resendTimer === null) {
      this.busyAnswers += 1;
      const delay = Math.min(5000, this.resendDelay * 2 ** Math.min(this.busyAnswers - 1, 6));
      this.resendTimer = setTimeout(() => {
        this.resendTimer = null;
        if (!this.open) return;
        for (const mutation of this.pending.toResend) this.socket.send(JSON.stringify(mutation));
      }, delay);
    }
  }

  #lost() {
    if (this.stopped || this.pending.entries.length === 0) return;   // reconnects with the next mutation
    this.attempt += 1;
    this.timer = setTimeout(() => { this.timer = null; this.#connect(); }, reconnectDelay(this.backoff, this.attempt));
  }
}

// ---------------------------------------------------------------------------------------------
// Offline: the last lists at load, mutations that wait

/** A client name that is no other's: a random UUID (also where `crypto.randomUUID` is not offered, plain HTTP to another host). */
function randomClientName() {
  if (typeof globalThis.crypto?.randomUUID === 'function') return `web-${globalThis.crypto.randomUUID()}`;
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(16));
  return `web-${[...bytes].map((byte) => byte.toString(16).padStart(2, '0')).join('')}`;
}

/**
 * JSON text of plain JSON data (null, booleans, numbers, strings, arrays, objects), as
 * JSON.stringify writes it but for −0, written `-0.0` (JSON.parse reads it back as −0): a real
 * −0 (`{"f":-0.0}`) is kept as such.
 */
function jsonText(value) {
  if (typeof value === 'number') return Object.is(value, -0) ? '-0.0' : JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(jsonText).join(',')}]`;
  if (value !== null && typeof value === 'object') return `{${Object.entries(value).map(([name, member]) => `${JSON.stringify(name)}:${jsonText(member)}`).join(',')}}`;
  return JSON.stringify(value);
}

/** A value as the store writes it: the wire's JSON form (an integer −0 is 0). */
function storedValue(value) {
  return value === 0 ? 0 : wireForm(value);
}

/** A value the store wrote, read as strictly as the wire's: a bare number is an integer within ±(2⁵³ − 1). */
function readStoredValue(json) {
  if (typeof json === 'number' && !Number.isSafeInteger(json)) throw new TypeError(`${json} is not a value`);
  return pendingValue(decodeValue(json));
}

/**
 * A pending change as the store keeps it, the JSON text of `{mutation, list, insert|update|delete}`:
 * `mutation` its number, `list` the key of the list kept, and the change as `mutate` takes it with
 * its values in the wire's JSON form (`{insert: {id, values, placement}}`, `{update: {id, values}}`,
 * `{delete: {id}}`; `placement` `'sorted'`, `{first: key}` or `{last: key}`).
 */
function storedChange(mutation, key, effect) {
  const body = { id: storedValue(effect.id) };
  if (effect.values) body.values = Object.fromEntries([...effect.values].map(([name, value]) => [name, storedValue(value)]));
  if (effect.kind === 'insert') {
    body.placement = effect.placement.edge === 'sorted' ? 'sorted' : { [effect.placement.edge]: storedValue(effect.placement.section) };
  }
  return jsonText({ mutation, list: key, [effect.kind]: body });
}

/** A change the store kept (parsed JSON) as `{mutation, key, effect}` (a PendingEffect), or null when it is not one. */
function readStoredChange(entry) {
  try {
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) return null;
    if (!Number.isSafeInteger(entry.mutation) || entry.mutation < 1 || typeof entry.list !== 'string') return null;
    const kinds = ['insert', 'update', 'delete'].filter((kind) => Object.hasOwn(entry, kind));
    if (kinds.length !== 1) return null;
    const kind = kinds[0], body = entry[kind];
    if (body === null || typeof body !== 'object' || Array.isArray(body) || !Object.hasOwn(body, 'id')) return null;
    const given = { id: readStoredValue(body.id) };
    if (kind !== 'delete') {
      if (body.values === null || typeof body.values !== 'object' || Array.isArray(body.values)) return null;
      given.values = Object.fromEntries(Object.entries(body.values).map(([name, value]) => [name, readStoredValue(value)]));
    }
    if (kind === 'insert') {
      const placement = body.placement;
      if (placement === 'sorted') {
        given.placement = 'sorted';
      } else {
        if (placement === null || typeof placement !== 'object' || Array.isArray(placement) || Object.keys(placement).length !== 1) return null;
        const edge = Object.keys(placement)[0];
        if (edge !== 'first' && edge !== 'last') return null;
        given.placement = { [edge]: readStoredValue(placement[edge]) };
      }
    }
    return { mutation: entry.mutation, key: entry.list, effect: new PendingEffect({ [kind]: given }) };
  } catch {
    return null;
  }
}

/** The outcome of an IndexedDB transaction: resolves when it commits, rejects when it fails or aborts. */
function committed(transaction, result = () => undefined) {
  return new Promise((resolve, reject) => {
    transaction.oncomplete = () => resolve(result());
    transaction.onerror = () => reject(transaction.error ?? new Error('an IndexedDB transaction failed'));
    transaction.onabort = () => reject(transaction.error ?? new Error('an IndexedDB transaction was aborted'));
  });
}

/**
 * Keeps a page's live lists and its mutator's state across page loads, so that a page loaded
 * without a network shows its last lists at once — stale, `live.staleSince` saying since when —
 * and, once the server is back, each list resumes from its version with one changeset, and the
 * mutations left pending are sent in order, each applied once.
 *
 * ```js
 * const store = new OfflineStore();
 * await store.open('livelist');
 * const outcome = await store.keep(live, 'inbox');   // {restored: savedAt} | {nothingSaved: true} | {notRestored: code}
 * const mutator = store.mutator(url);                // numbered where the last load stopped; its pending rows shown on the kept lists
 * new LiveListView(element, live, …);                // starts the query: it resumes from the snapshot
 * ```
 *
 * Where things are kept, and why:
 * - **Lists: IndexedDB** (`indexedDB`, or the one given to the constructor), database `name`,
 *   object store `lists`, one record per key: `{key, query, savedAt, snapshot}` — `snapshot` the
 *   JSON text of `live.snapshot()` (one string, cheap to clone; read as strictly as a server's
 *   reset). Bounded by the window: the counts, sections and the window's rows, never the whole
 *   list. A list is written `saveDelay` (500 ms) after it changes — later changes within it are
 *   written with it, as they stand then — one write at a time (changes during a write are written
 *   after it). IndexedDB is asynchronous: a page closed within that delay, or during the write,
 *   keeps the previous copy, which is still a list the server held (it resumes from its version).
 *   `saveNow()` writes at once (on `pagehide`, say). Shared by the origin's tabs: the last write
 *   of a key wins, which is a list the server held too.
 * - **A mutator's client name, next number and pending mutations: Web Storage** (`sessionStorage`,
 *   or the `storage` given), one item per URL written synchronously in `onPendingChange` —
 *   after a mutation is numbered and before it is sent, and after each answer. A Web Storage
 *   write is synchronous for the page: once `setItem` returns, every later page (this tab's next
 *   load, for `sessionStorage`) reads it, whatever becomes of this page. An IndexedDB write is
 *   not: it commits some time after the send went out, and a page closed or crashed in between
 *   would lose the number — the next load would number a new mutation as one the server applied,
 *   and be answered with that one's outcome. (The Swift store avoids it with a synchronous SQLite
 *   write; when either storage reaches the disk, against the whole browser crashing, is the
 *   browser's affair.) With `sessionStorage` each tab is one client, kept through reloads (two
 *   tabs must not share numbers); a closed tab's pending mutations are gone with it. Pass
 *   `localStorage` to keep them across closing, for a page open in one tab at a time. At most
 *   `Mutator.maximumPending` mutations (the Mutator refuses more); a write past the storage's
 *   quota is kept in `lastSaveError`, and the mutation is sent anyway.
 * - **The pending mutations' expected effects: in the same Web Storage item**, written with the
 *   mutation's number in the same `setItem`, on the lists kept here (by their keys), each change
 *   `{mutation, list, insert|update|delete}` with its values in the wire's JSON form — exactly:
 *   integers and reals apart (a real −0 too), integers beyond 2⁵³ as `{"i":…}`, blobs, text as
 *   it is — and gone with the mutation's answer. `mutator(url)` shows them again on the kept
 *   lists before anything is sent: keep the lists first (as above), so that the rows of the
 *   mutations left pending show, marked pending, in the first frame, and go when their mutations
 *   are answered and the lists hold the commits. A change that cannot be read back is skipped
 *   (`unreadableChanges`); its mutation is sent all the same.
 */
export class OfflineStore {
  static saveDelay = 500;

  constructor({ indexedDB = globalThis.indexedDB, storage = globalThis.sessionStorage, saveDelay = OfflineStore.saveDelay } = {}) {
    this.indexedDB = indexedDB;
    this.storage = storage;
    this.saveDelay = saveDelay;
    this.name = 'livelist';
    this.database = null;
    this.opening = null;
    this.kept = new Map();        // key → {live, stop}
    this.dirty = new Set();       // keys changed, not written yet
    this.timer = null;
    this.writing = null;          // the write under way (a promise), or null
    this.lastSaveError = null;    // the last write's error (null: it succeeded)
    this.writes = 0;              // list writes done (committed or failed), for tests and diagnostics
    this.unreadableChanges = 0;   // kept pending changes the last `mutator` call could not read back (not shown)
  }

  /** Opens (or creates) the IndexedDB database `name`; resolves with the store. */
  open(name = 'livelist') {
    if (this.opening) return this.opening;
    this.name = name;
    this.opening = new Promise((resolve, reject) => {
      if (!this.indexedDB) {
        reject(new Error('no IndexedDB here'));
        return;
      }
      const request = this.indexedDB.open(name, 1);
      request.onupgradeneeded = () => {
        const database = request.result;
        if (!database.objectStoreNames.contains('lists')) database.createObjectStore('lists', { keyPath: 'key' });
      };
      request.onsuccess = () => {
        const database = request.result;
        // Another page deletes or upgrades the database: let it (this page stops writing).
        database.onversionchange = () => {
          database.close();
          if (this.database === database) this.database = null;
        };
        this.database = database;
        resolve(this);
      };
      request.onerror = () => reject(request.error ?? new Error(`IndexedDB ${name} did not open`));
    });
    return this.opening;
  }

  /** Stops keeping lists and closes the database (what is saved stays). */
  close() {
    clearTimeout(this.timer);
    this.timer = null;
    for (const key of [...this.kept.keys()]) this.forget(key);
    this.database?.close();
    this.database = null;
  }

  /**
   * Shows the list saved under `key` in `live` (a LiveQuery not started yet: `live.restore`), and
   * from now on keeps `live`'s list there. Resolves with `{restored: savedAt}` (shown, stale
   * since then), `{nothingSaved: true}`, or `{notRestored: code}` — a RestoreError's code: the
   * query had started, the list saved is of another query or other arguments (it is replaced by
   * this one's at the next write), or is damaged. Call `open` first; call it before `start()`.
   */
  async keep(live, key) {
    if (!this.opening) throw new Error('open the store first');
    await this.opening;
    this.forget(key);
    const stop = live.observe((event) => {
      if ((event.type === 'reset' && !event.restored) || event.type === 'changes' || event.type === 'rows') this.#changed(key);
    });
    this.kept.set(key, { live, stop });
    const record = await this.#read(key);
    if (!record) return { nothingSaved: true };
    try {
      live.restore(record.snapshot);
    } catch (error) {
      if (!(error instanceof RestoreError)) throw error;
      return { notRestored: error.code };
    }
    return { restored: live.staleSince };
  }

  /** Stops keeping the list saved under `key` (what is saved stays). */
  forget(key) {
    const entry = this.kept.get(key);
    if (!entry) return;
    entry.stop();
    this.kept.delete(key);
    this.dirty.delete(key);
  }

  /**
   * Writes every kept list now, after the write under way if any; resolves once it is committed
   * (rejects with its error).
   */
  async saveNow() {
    clearTimeout(this.timer);
    this.timer = null;
    while (this.writing) await this.writing;
    for (const key of this.kept.keys()) this.dirty.add(key);
    await this.#writeDirty();
    if (this.lastSaveError) throw this.lastSaveError;
  }

  /** The snapshot saved under `key`, as saved (for tests and diagnostics), or null. */
  async saved(key) {
    const record = await this.#read(key);
    return record ? JSON.parse(record.snapshot) : null;
  }

  /**
   * A Mutator for the server at `url` (its other options as Mutator's) under the client name kept
   * for that URL in `storage` (made and kept on the first call), numbering from where the last
   * load stopped, with the mutations it left pending — sent, in order, when it starts. Its name,
   * next number and pending mutations are written to `storage` synchronously whenever they change
   * (`onPendingChange`): before each mutation is sent, and after each answer. A kept state that
   * cannot be read is not used: the mutator takes a new name (never an old name's numbers again).
   *
   * Each new mutation's effects on the lists kept here (`keep`) are written in the same write as
   * its number, by the lists' keys, until it is answered; effects on other lists are not kept.
   * The effects of the mutations left pending are shown again at once (`mutator.show`) on the
   * lists kept under their keys: keep the lists first, then make the mutator. An effect that
   * cannot be read back is not shown, and counted in `unreadableChanges`; its mutation is sent
   * all the same.
   */
  mutator(url, options = {}) {
    if (!this.storage) throw new Error('no storage for the mutator (pass sessionStorage or localStorage)');
    const item = `${this.name}.mutator ${url}`;
    let kept = null;
    try {
      kept = JSON.parse(this.storage.getItem(item));
    } catch {
      kept = null;
    }
    const readable = kept !== null && typeof kept === 'object' && typeof kept.client === 'string' && kept.client.length > 0
      && Number.isSafeInteger(kept.nextId) && kept.nextId >= 1 && Array.isArray(kept.pending)
      && kept.pending.every((mutation) => mutation !== null && typeof mutation === 'object' && mutation.type === 'mutate'
        && mutation.client === kept.client && Number.isSafeInteger(mutation.id) && mutation.id >= 1 && mutation.id < kept.nextId
        && typeof mutation.name === 'string');
    const client = readable ? kept.client : randomClientName();
    const mutator = new Mutator(url, client, { ...options, nextId: readable ? kept.nextId : 1, pending: readable ? kept.pending.slice(-Mutator.maximumPending) : [] });
    // The kept changes of each pending mutation, as written (JSON texts): written again with every
    // write until the mutation is answered. Those of the restored ones as read (on lists kept here
    // or not), those of a new one from its effects on the lists kept here when it is first written.
    const changes = new Map(mutator.pendingMutations.map((mutation) => [mutation.id, []]));
    const restored = new Map();   // mutation number → effects to show again
    let unreadable = 0;
    if (readable && kept.effects !== undefined) {
      if (!Array.isArray(kept.effects)) unreadable += 1;
      for (const entry of Array.isArray(kept.effects) ? kept.effects : []) {
        const change = readStoredChange(entry);
        if (change === null) {
          unreadable += 1;
          continue;
        }
        if (!changes.has(change.mutation)) continue;   // its mutation is no longer pending
        changes.get(change.mutation).push(storedChange(change.mutation, change.key, change.effect));
        const list = this.kept.get(change.key)?.live;
        if (!list) continue;
        if (!restored.has(change.mutation)) restored.set(change.mutation, []);
        restored.get(change.mutation).push({ list, ...effectForm(change.effect) });
      }
    }
    this.unreadableChanges = unreadable;
    for (const [id, effects] of [...restored].sort(([a], [b]) => a - b)) mutator.show(effects, id);
    const write = () => {
      const pending = mutator.pendingMutations;
      const now = new Set(pending.map((mutation) => mutation.id));
      for (const id of changes.keys()) if (!now.has(id)) changes.delete(id);
      let keys = null;   // the key of each list kept here
      for (const { id } of pending) {
        if (changes.has(id)) continue;
        if (keys === null) {
          keys = new Map();
          for (const [key, entry] of this.kept) if (!keys.has(entry.live)) keys.set(entry.live, key);
        }
        changes.set(id, mutator.effects(id).filter(({ list }) => keys.has(list))
          .map(({ list, ...effect }) => storedChange(id, keys.get(list), new PendingEffect(effect))));
      }
      const texts = pending.flatMap(({ id }) => changes.get(id));
      try {
        this.storage.setItem(item, `{"client":${JSON.stringify(client)},"nextId":${mutator.nextId},"pending":${JSON.stringify(pending)},"effects":[${texts.join(',')}]}`);
        this.lastSaveError = null;
      } catch (error) {
        this.lastSaveError = error;
      }
    };
    mutator.onPendingChange = write;
    write();   // the name, before anything is numbered under it
    return mutator;
  }

  #changed(key) {
    this.dirty.add(key);
    if (this.timer !== null || this.writing) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.#writeDirty();
    }, this.saveDelay);
  }

  /** Writes the lists changed, in one transaction; lists changed meanwhile are written after it. */
  #writeDirty() {
    if (this.writing || this.dirty.size === 0) return this.writing ?? Promise.resolve();
    const records = [];
    for (const key of this.dirty) {
      const snapshot = this.kept.get(key)?.live.snapshot();
      if (snapshot) records.push({ key, query: snapshot.query, savedAt: snapshot.savedAt, snapshot: JSON.stringify(snapshot) });
    }
    this.dirty.clear();
    const write = (async () => {
      try {
        if (records.length > 0) await this.#write(records);
        this.lastSaveError = null;
      } catch (error) {
        this.lastSaveError = error;
      }
    })();
    this.writing = write.then(() => {
      this.writing = null;
      if (records.length > 0) this.writes += 1;
      if (this.dirty.size > 0 && this.timer === null) {
        this.timer = setTimeout(() => {
          this.timer = null;
          this.#writeDirty();
        }, this.saveDelay);
      }
    });
    return this.writing;
  }

  async #read(key) {
    const database = this.database;
    if (!database) return null;
    const transaction = database.transaction('lists', 'readonly');
    const request = transaction.objectStore('lists').get(key);
    return committed(transaction, () => request.result ?? null);
  }

  async #write(records) {
    const database = this.database;
    if (!database) throw new Error('the store is closed');
    const transaction = database.transaction('lists', 'readwrite');
    const lists = transaction.objectStore('lists');
    for (const record of records) lists.put(record);
    return committed(transaction);
  }
}
