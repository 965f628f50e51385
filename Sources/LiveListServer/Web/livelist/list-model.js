// list-model.js — a remote list as the server's messages make it, without I/O (docs/PROTOCOL.md):
// the sections and counts, the version, the window the server sends rows for, the identities and
// values of the window's rows, the list's order, and what mutations do to it (its `effects`); each
// message checked before it is applied.

import { ProtocolError, decodeValue, wireForm } from './values.js';
import { parseOrder } from './order.js';
import { parseEffects } from './effects.js';
import { PathMapping, Sections, pathKey } from './positions.js';

/** @typedef {import('./values.js').Value} Value */
/** @typedef {import('./values.js').WireValue} WireValue */
/** @typedef {import('./positions.js').Path} Path */

/**
 * A row a message brings: its position, identity (as the wire has it, and as a map key) and values.
 * @typedef {{position: number, id: WireValue, key: string, values: Value[] | null}} WireRow
 */

/**
 * The changes of a `changes` message, checked for shape (`parseChanges`).
 * @typedef {object} ListChanges
 * @property {string} from
 * @property {string} to
 * @property {number[]} sectionDeletes
 * @property {number[]} sectionInserts
 * @property {Value[]} sectionInsertKeys
 * @property {Array<[from: number, to: number]>} sectionMoves
 * @property {number[]} sectionReloads
 * @property {Path[]} deletes
 * @property {Array<[section: number, item: number, id: WireValue]>} inserts
 * @property {Array<[fromSection: number, fromItem: number, toSection: number, toItem: number, id: WireValue]>} moves
 * @property {Array<[section: number, item: number, id: WireValue]>} reloads
 * @property {WireRow[]} rows
 * @property {number | null} at
 * @property {{order: unknown, effects: unknown} | null} restated the new list's `order` and
 *   `effects` as they came (each undefined when not stated) when the changes answer `arguments`
 *   (`"restated":true`), else null
 */

/** @typedef {{key: string, id: Value, stamp: number}} KnownRow */

/**
 * A row of the list: its key (the identity's JSON), identity, values (null: not loaded) and stamp
 * (a new one whenever its values may have changed).
 * @typedef {{key: string, id: Value, values: Value[] | null, stamp: number | string}} ListRow
 */

/**
 * A list as the `reset` the server would send for it (`ListModel.heldList`).
 * @typedef {{sub: number, type: 'reset', version: string, reason: string, columns: string[], sections: Array<[WireValue, number]>,
 *   window: [start: number, count: number], rows: Array<[number, WireValue, WireValue[] | null]>,
 *   order?: Array<{column: number | null, descending: boolean, nullsFirst: boolean, collation: string}>, effects?: unknown}} HeldList
 */

/**
 * What applying a message did (`ListModel.receive`).
 * @typedef {{type: 'reset', reason: string}
 *   | {type: 'changes', changes: ListChanges, mapping: PathMapping, oldSections: Sections, loaded: string[]}
 *   | {type: 'rows', loaded: string[], replaced: number[]}
 *   | {type: 'error', error: {code: string, message: string}}
 *   | {type: 'none'}} ModelOutput
 */

/** @param {unknown} value @returns {value is number} */
const isIndex = (value) => Number.isInteger(value) && /** @type {number} */ (value) >= 0 && /** @type {number} */ (value) <= 0x7fffffff;

/**
 * @param {unknown} value
 * @param {string} field
 * @returns {string}
 */
function parseVersion(value, field) {
  if (typeof value !== 'string' || !/^[A-Za-z0-9_-]{1,64}:[0-9]+$/.test(value)) throw new ProtocolError(`${field}: not a version`, 'malformed');
  return value;
}

/**
 * Arrays of `width` indices (bare indices for `width` 0).
 * @param {unknown} list
 * @param {number} width
 * @param {string} field
 * @returns {any[]}
 */
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

/**
 * Arrays of `width` indices and a value (an identity or a section key).
 * @param {unknown} list
 * @param {number} width
 * @param {string} field
 * @returns {any[]}
 */
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

/**
 * @param {unknown} list
 * @returns {WireRow[]}
 */
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

/**
 * The changes of a `changes` message, checked for shape.
 * @param {any} message
 * @returns {ListChanges}
 */
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
    restated: parseRestated(message),
  };
}

/**
 * What the answer to `arguments` restates of the new list: its `order` and `effects` as they came
 * (each undefined when not stated), or null when the changes do not answer `arguments`.
 * @param {any} message
 * @returns {{order: unknown, effects: unknown} | null}
 */
function parseRestated(message) {
  if (message.restated === undefined || message.restated === false) return null;
  if (message.restated !== true) throw new ProtocolError('restated: expected a boolean', 'malformed');
  return { order: message.order, effects: message.effects };
}

/**
 * A remote list as the server's messages make it, without I/O: the sections and counts, the
 * version, the window the server sends rows for, the identities and values of the window's rows,
 * the list's order when the last reset stated it (`order`, for `compareRows`; else null), and what
 * the server's mutations do to it when the reset stated that (`effects`, for `deriveEffects`; else
 * null), both replaced by the `changes` that answers `arguments` (`"restated":true`).
 * `receive(message)` applies one message and says what changed; a message that cannot be applied
 * throws a ProtocolError and changes nothing.
 */
export class ListModel {
  constructor() {
    this.sections = new Sections([], []);
    /** @type {string | null} */
    this.version = null;
    /** @type {string[]} */
    this.columns = [];
    /** @type {import('./order.js').Order | null} the order the last reset (or restatement) stated (parseOrder), or null: not stated */
    this.order = null;
    /** @type {import('./effects.js').ListEffects | null} the effects the last reset (or restatement) stated (parseEffects), or null: not stated */
    this.effects = null;
    /** @type {unknown} the reset's `effects` as it came, while `effects` is not null (heldList writes it back) */
    this.statedEffects = undefined;
    /** @type {[start: number, end: number]} [start, end) */
    this.window = [0, 0];
    /** @type {[start: number, end: number] | null} [start, end) asked for, not answered yet */
    this.requestedWindow = null;
    /** @type {Map<number, KnownRow>} position → {key, id, stamp} */
    this.known = new Map();
    /** @type {Map<string, {stamp: number, values: Value[]}>} key → {stamp, values} */
    this.records = new Map();
    /** @type {string | null} */
    this.lastReset = null;
    /** @type {number | null} */
    this.lastObservedAt = null;
    this.nextStamp = 1;
  }

  get count() { return this.sections.count; }

  /**
   * The row at `position`: {key, id, values (null: not loaded)}, or null when its identity is unknown.
   * @param {number} position
   * @returns {ListRow | null}
   */
  row(position) {
    const known = this.known.get(position);
    if (!known) return null;
    const record = this.records.get(known.key);
    return { key: known.key, id: known.id, values: record && record.stamp === known.stamp ? record.values : null, stamp: known.stamp };
  }

  /**
   * What a resuming client holds: its version and the longest run of its window held with values.
   * @returns {{version: string, held: [start: number, count: number]} | null}
   */
  get resume() {
    if (this.version === null) return null;
    let best = [0, 0];
    /** @type {number | null} */
    let runStart = null;
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
   * values, or null when not loaded) — never rows outside the window — its order and its effects.
   * Null before the first state. O(w + s) for w positions of the window and s sections.
   * @returns {HeldList | null}
   */
  heldList() {
    if (this.version === null) return null;
    const [start, end] = this.window;
    /** @type {HeldList['rows']} */
    const rows = [];
    for (let position = start; position < Math.min(end, this.count); position++) {
      const row = this.row(position);
      if (row) rows.push([position, wireForm(row.id), row.values === null ? null : row.values.map(wireForm)]);
    }
    /** @type {HeldList} */
    const list = {
      sub: 0, type: 'reset', version: this.version, reason: this.lastReset ?? 'subscribed', columns: [...this.columns],
      sections: this.sections.keys.map((key, index) => [wireForm(key), this.sections.counts[index]]),
      window: [start, end - start], rows,
    };
    if (this.order) list.order = this.order.map(({ column, descending, nullsFirst, collation }) => ({ column, descending, nullsFirst, collation }));
    if (this.effects) list.effects = structuredClone(this.statedEffects);
    return list;
  }

  /** @param {[start: number, end: number]} window a window asked for */
  didRequest(window) { this.requestedWindow = window; }

  /** @param {[start: number, end: number]} window the window of a new subscription */
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
   * @param {any} message a message of the subscription (parsed JSON)
   * @returns {ModelOutput}
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

  /**
   * @param {any} message
   * @returns {ModelOutput}
   */
  #reset(message) {
    const version = parseVersion(message.version, 'version');
    if (!Array.isArray(message.sections) || !message.sections.every((/** @type {unknown} */ s) => Array.isArray(s) && s.length === 2 && isIndex(s[1]))) {
      throw new ProtocolError('sections: expected [[key, count]]', 'malformed');
    }
    if (!Array.isArray(message.columns) || !message.columns.every((/** @type {unknown} */ c) => typeof c === 'string')) throw new ProtocolError('columns', 'malformed');
    const window = message.window;
    if (!Array.isArray(window) || window.length !== 2 || !window.every(isIndex)) throw new ProtocolError('window', 'malformed');
    /** @type {Array<[unknown, number]>} */
    const keyed = message.sections;
    const sections = new Sections(keyed.map(([key]) => decodeValue(key)), keyed.map(([, count]) => count));
    const rows = parseRows(message.rows);
    this.sections = sections;
    this.version = version;
    this.columns = message.columns;
    this.order = parseOrder(message.order, message.columns.length);
    // Unreadable effects are no protocol error, as an unreadable order is not: the reset stands
    // without them (parseEffects), and the mutations show only the app's effects on the list.
    this.effects = parseEffects(message.effects, message.columns.length);
    this.statedEffects = this.effects ? structuredClone(message.effects) : undefined;
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

  /**
   * The sections after `changes`, checked, and the mapping of paths across them.
   * @param {ListChanges} changes
   */
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
    /** @type {Array<Value | undefined>} */
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

  /**
   * @param {ListChanges} changes
   * @param {Sections} old
   * @param {Sections} now
   */
  #checkItems(changes, old, now) {
    /** @type {(path: readonly any[]) => boolean} */
    const inOld = ([s, i]) => s < old.length && i < old.counts[s];
    /** @type {(path: readonly any[]) => boolean} */
    const inNew = ([s, i]) => s < now.length && i < now.counts[s];
    const sources = [...changes.deletes, ...changes.moves.map((m) => [m[0], m[1]])];
    /** @type {(paths: ReadonlyArray<readonly number[]>) => boolean} */
    const unique = (paths) => new Set(paths.map(([s, i]) => pathKey(s, i))).size === paths.length;
    const deleted = new Set(changes.deletes.map(([s, i]) => pathKey(s, i)));
    if (!sources.every(inOld) || !unique(sources) || !changes.reloads.every(inOld) || changes.reloads.some(([s, i]) => deleted.has(pathKey(s, i)))) {
      throw new ProtocolError('an item delete, move or reload outside the list before');
    }
    const targets = [...changes.inserts.map((m) => [m[0], m[1]]), ...changes.moves.map((m) => [m[2], m[3]])];
    if (!targets.every(inNew) || !unique(targets)) throw new ProtocolError('an item insert or move outside the list after');
  }

  /**
   * @param {ListChanges} changes
   * @returns {ModelOutput}
   */
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
    /** @type {Map<number, KnownRow>} */
    const known = new Map();
    for (const [position, row] of this.known) {
      const path = old.path(position);
      if (!path || reloaded.has(pathKey(path[0], path[1]))) continue;
      const target = mapping.newPath(path[0], path[1]);
      if (!target) continue;
      const next = sections.position(target[0], target[1]);
      if (next !== null) known.set(next, row);
    }
    /** @type {(section: number, item: number, idJSON: WireValue, keep: KnownRow | null | undefined) => void} */
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
    /** @type {string[]} */
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
    // The answer to new arguments restates the list's order and effects (one absent: none), as
    // the new arguments may sort and filter otherwise; read as a reset's are.
    if (changes.restated) {
      this.order = parseOrder(changes.restated.order, this.columns.length);
      this.effects = parseEffects(changes.restated.effects, this.columns.length);
      this.statedEffects = this.effects ? structuredClone(changes.restated.effects) : undefined;
    }
    const oldSections = old;
    this.sections = sections;
    this.known = this.#pruned(known);
    return { type: 'changes', changes, mapping, oldSections, loaded };
  }

  /**
   * @param {any} message
   * @returns {ModelOutput}
   */
  #rows(message) {
    const version = parseVersion(message.version, 'version');
    if (version !== this.version) throw new ProtocolError(`rows at ${version}, the list is at ${this.version}`, 'versionGap');
    const window = message.window;
    if (!Array.isArray(window) || window.length !== 2 || !window.every(isIndex)) throw new ProtocolError('window', 'malformed');
    const rows = parseRows(message.rows);
    if (rows.some((row) => row.position >= this.count)) throw new ProtocolError('a row past the list');
    /** @type {[start: number, end: number]} */
    const range = [window[0], window[0] + window[1]];
    this.window = range;
    if (this.requestedWindow && this.requestedWindow[0] === range[0] && this.requestedWindow[1] === range[1]) this.requestedWindow = null;
    /** @type {string[]} */
    const loaded = [];
    /** @type {number[]} */
    const replaced = [];
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

  /**
   * Keeps the rows of the window (and of a window asked for) and their records.
   * @param {Map<number, KnownRow>} known
   */
  #pruned(known) {
    const count = this.count;
    /** @type {(range: readonly number[] | null, position: number) => boolean} */
    const inside = (range, position) => range !== null && position >= range[0] && position < Math.min(range[1], count);
    /** @type {Map<number, KnownRow>} */
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
