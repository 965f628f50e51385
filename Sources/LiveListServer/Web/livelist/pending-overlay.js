// pending-overlay.js — pending rows (docs/PROTOCOL.md, "Showing a mutation before its answer"):
// what the client's own mutations are expected to do, laid at once over the rows the client holds
// until the server's list shows it, and each recomputation as one transition of the list shown.

import { pendingValue, sameValue, sameValues, wireForm } from './values.js';
import { compareRows } from './order.js';
import { Sections } from './positions.js';

/** @typedef {import('./values.js').Value} Value */
/** @typedef {import('./list-model.js').ListModel} ListModel */
/** @typedef {import('./list-model.js').ListRow} ListRow */
/** @typedef {import('./positions.js').PositionMapping} PositionMapping */

/**
 * Where an effect puts an inserted row: its sorted place, or the first or last of a section.
 * @typedef {{readonly edge: 'sorted'} | {readonly edge: 'first' | 'last', readonly section: Value}} Placement
 */

/**
 * A row of the window as the effects rearrange it: the server's (`serverPosition` its position)
 * or one an effect brought (`serverPosition` null); `key` null for a position whose row is unknown.
 * @typedef {{key: string | null, id: Value | undefined, values: Value[] | null, stamp?: number | string, section: number,
 *   serverPosition: number | null, pending: boolean}} Slot
 */

/**
 * An expected effect as `addPending` and `mutate` take it: `{insert: {id, values, placement}}`,
 * `{update: {id, values}}` or `{delete: {id}}` (values by column name, as the model holds them or
 * in the wire's JSON form).
 * @typedef {{insert?: {id: unknown, values?: Record<string, unknown>, placement?: 'sorted' | {first: unknown} | {last: unknown}},
 *   update?: {id: unknown, values?: Record<string, unknown>}, delete?: {id: unknown}}} EffectInput
 */

/**
 * A row the list shows: a ListModel's row, `pending` when an effect brought or changed it (rows
 * outside the region, which no effect touches, have no `pending`).
 * @typedef {Readonly<{key: string, id: Value | undefined, values: Value[] | null, stamp: number | string | undefined, pending?: boolean}>} DisplayedRow
 */

/**
 * One expected effect of a mutation on one list, checked: `{insert: {id, values, placement}}`,
 * `{update: {id, values}}` or `{delete: {id}}` — `values` by column name (columns not given read
 * as null; names the list does not have are ignored), `placement` `'sorted'` (the default),
 * `{first: sectionKey}` or `{last: sectionKey}`. Throws a TypeError for anything else.
 */
export class PendingEffect {
  /** @param {EffectInput | PendingEffect} given */
  constructor(given) {
    if (given instanceof PendingEffect) return given;
    const effect = /** @type {any} */ (given);
    if (effect === null || typeof effect !== 'object') throw new TypeError('an effect is {insert}, {update} or {delete}');
    const kinds = /** @type {const} */ (['insert', 'update', 'delete']).filter((kind) => effect[kind] !== undefined);
    if (kinds.length !== 1) throw new TypeError('an effect is one of {insert}, {update} or {delete}');
    const kind = kinds[0], body = effect[kind];
    if (body === null || typeof body !== 'object' || body.id === undefined) throw new TypeError(`${kind}: an id is needed`);
    /** @type {'insert' | 'update' | 'delete'} */
    this.kind = kind;
    /** @type {Value} */
    this.id = pendingValue(body.id);
    /** @type {string} the key of its row (the identity's JSON) */
    this.key = JSON.stringify(wireForm(this.id));
    if (kind !== 'delete') {
      const values = body.values ?? {};
      if (values === null || typeof values !== 'object' || Array.isArray(values)) throw new TypeError(`${kind}: values by column name`);
      /** @type {Map<string, Value> | undefined} by column name (inserts and updates) */
      this.values = new Map(Object.entries(values).map(([name, value]) => [name, pendingValue(value)]));
    }
    if (kind === 'insert') {
      const placement = body.placement ?? 'sorted';
      /** @type {Placement | undefined} (inserts) */
      this.placement = undefined;
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

/** @type {Placement} */
const sortedPlacement = Object.freeze({ edge: 'sorted' });

/**
 * One mutation's effects on one list, as `resolvePending` lays them: `exact` (the effects the
 * server states, derived) laid only when every one of them shows as stated, else none of them;
 * otherwise (the app's) each as far as it can show. A bare array of effects is a group not exact.
 * @typedef {{readonly effects: readonly PendingEffect[], readonly exact: boolean}} PendingGroup
 */

/**
 * Where a pending row stands among the rows held (the region: the server's positions
 * `start ..< end`, the window within the list), exactly or not at all (null).
 */
class Placer {
  /**
   * @param {ListModel} model
   * @param {number} start
   * @param {number} end
   */
  constructor(model, start, end) {
    this.sections = model.sections;
    this.order = model.order;
    this.start = start;
    this.end = end;
    // One section keyed null is a list without sections.
    this.sectioned = this.sections.length !== 1 || this.sections.keys[0] !== null;
  }

  /**
   * {index among `slots`, section} for the row `id` with `values` (an array in column order).
   * @param {Value | undefined} id
   * @param {Value[]} values
   * @param {Placement} placement
   * @param {Slot[]} slots
   * @returns {{index: number, section: number} | null}
   */
  place(id, values, placement, slots) {
    const sections = this.sections;
    if (placement.edge === 'sorted') {
      const order = this.order;
      if (!order || sections.length === 0) return null;
      // The server's rows held (no effect touched them) are in its order: binary search for the
      // gap among them (no two rows tie: the identity ends the order), then the place among the
      // pending rows already in that gap.
      const row = { id, values };
      /** @type {(other: Slot) => boolean | null} */
      const before = (other) => (other.key === null || other.values === null ? null : compareRows(order, row, other) < 0);
      /** @type {number[]} */
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
    const key = placement.section;
    const section = sections.keys.findIndex((candidate) => sameValue(candidate, key));
    if (section < 0) return null;
    const edge = placement.edge === 'first' ? sections.starts[section] : sections.starts[section + 1];
    if (edge < this.start || edge > this.end) return null;
    const index = slots.findIndex((slot) => (placement.edge === 'first' ? slot.section >= section : slot.section > section));
    return { index: index < 0 ? slots.length : index, section };
  }
}

/**
 * Lays `effect` over `slots` (the region's rows as the earlier effects left them). Returns whether
 * it shows as stated: false for an insert whose place is not known, an update that stays where it
 * is for want of its sorted place, and an update or a delete of a row the server's list holds
 * that is not among `slots` (outside the window, or taken out by an earlier effect) or held
 * without its values. An effect the server's list shows already shows as stated.
 * @param {PendingEffect} effect
 * @param {Slot[]} slots
 * @param {Set<string>} held the keys of the rows the server's list holds
 * @param {string[]} columns
 * @param {Map<string, number>} columnIndex
 * @param {Placer} placer
 * @returns {boolean}
 */
function applyEffect(effect, slots, held, columns, columnIndex, placer) {
  const effectValues = effect.values ?? new Map();
  switch (effect.kind) {
    case 'insert': {
      // The server's list shows it already, or an earlier effect did.
      if (held.has(effect.key) || slots.some((slot) => slot.key === effect.key)) return true;
      const values = columns.map((name) => effectValues.get(name) ?? null);
      const place = placer.place(effect.id, values, effect.placement ?? sortedPlacement, slots);
      if (!place) return false;
      slots.splice(place.index, 0, { key: effect.key, id: effect.id, values, section: place.section, serverPosition: null, pending: true });
      return true;
    }
    case 'update': {
      const index = slots.findIndex((slot) => slot.key === effect.key);
      if (index < 0) return !held.has(effect.key);
      if (slots[index].values === null) return false;
      // A row held with fewer values than columns (a broken server, a damaged offline copy) reads
      // the missing ones as NULL, as its order does: an update may name any column.
      const given = /** @type {Value[]} */ (slots[index].values);
      const old = [...given, ...Array(Math.max(0, columns.length - given.length)).fill(null)];
      const values = [...old];
      for (const [name, value] of effectValues) {
        const column = columnIndex.get(name);
        if (column !== undefined) values[column] = value;
      }
      if (sameValues(values, old)) return true;
      const [slot] = slots.splice(index, 1);
      const place = placer.place(slot.id, values, sortedPlacement, slots);
      if (place && (place.index !== index || place.section !== slot.section)) {
        slots.splice(place.index, 0, { ...slot, values, section: place.section, pending: true });
      } else {
        slots.splice(index, 0, { ...slot, values, pending: true });   // its place is not among the rows held: it stays
      }
      return place !== null;
    }
    default: {
      const index = slots.findIndex((slot) => slot.key === effect.key);
      if (index < 0) return !held.has(effect.key);
      slots.splice(index, 1);
      return true;
    }
  }
}

/**
 * The list `model` holds with `effects` (one group per mutation, in mutation order: a
 * PendingGroup, or an array of PendingEffect) laid over the rows it holds, as a DisplayedList. An
 * effect does nothing when the server's list shows it already (an insert of an identity held, an
 * update or delete of one not held, an update to the values the row has) or when its exact place
 * is not among the rows held; a later effect sees the earlier ones. An `exact` group shows whole
 * or not at all: when one of its effects would not show as stated (see applyEffect), none does.
 * `previous` (the last DisplayedList) keeps pending rows' stamps while their values stay.
 *
 * Cost: O(w + k) for w rows in the window and k known, plus, per effect, O(log w) comparisons
 * and an O(w) search and splice of the window's array, and per exact group an O(w) copy — never
 * O(list size).
 * @param {ListModel} model
 * @param {Iterable<readonly PendingEffect[] | PendingGroup>} effects
 * @param {DisplayedList | null} [previous]
 * @returns {DisplayedList}
 */
export function resolvePending(model, effects, previous = null) {
  const count = model.count;
  const start = Math.min(Math.max(0, model.window[0]), count);
  const end = Math.max(start, Math.min(model.window[1], count));
  /** @type {PendingGroup[]} */
  const groups = [...effects].map((group) => (Array.isArray(group) ? { effects: group, exact: false } : /** @type {PendingGroup} */ (group)))
    .filter((group) => group.effects.length > 0);
  if (groups.length === 0 || model.version === null) return new DisplayedList(model, start, end, null, null);
  let slots = regionSlots(model, start, end);
  /** @type {Set<string>} */
  const held = new Set();
  for (const row of model.known.values()) held.add(row.key);
  const placer = new Placer(model, start, end);
  /** @type {Map<string, number>} */
  const columnIndex = new Map();
  model.columns.forEach((name, index) => { if (!columnIndex.has(name)) columnIndex.set(name, index); });
  for (const group of groups) {
    if (!group.exact) {
      for (const effect of group.effects) applyEffect(effect, slots, held, model.columns, columnIndex, placer);
      continue;
    }
    // Laid on a copy, kept only when every effect showed as stated.
    const laid = [...slots];
    let asStated = true;
    for (const effect of group.effects) asStated = applyEffect(effect, laid, held, model.columns, columnIndex, placer) && asStated;
    if (asStated) slots = laid;
  }
  if (slots.length === end - start && !slots.some((slot) => slot.pending)) return new DisplayedList(model, start, end, null, null);
  return new DisplayedList(model, start, end, slots, previous);
}

let lastPendingStamp = 0;

/**
 * The list a client shows: the server's list (a ListModel) at its version with the pending
 * effects laid over the rows it holds. Read it as a ListModel: `count`, `sections`, `row(position)`
 * ({key, id, values, stamp, pending} or null), `positionOf(key)`, `version`, `columns`, `order`.
 * The effects touch only the region — the server's window within the list, positions
 * `regionStart ..< regionStart + regionCount` — so rows before it keep their positions and rows
 * after it shift by `count - model.count`; a section whose every row they took away is not in
 * `sections` (a list without sections keeps its one, keyed null).
 */
export class DisplayedList {
  /**
   * @param {ListModel} model
   * @param {number} start the region's first server position
   * @param {number} end the region's end
   * @param {Slot[] | null} given the region's rows with the effects laid (null: the server's list)
   * @param {DisplayedList | null} previous
   */
  constructor(model, start, end, given, previous) {
    this.version = model.version;
    this.columns = model.columns;
    this.order = model.order;
    this.lastObservedAt = model.lastObservedAt;
    this.regionStart = start;
    this.regionCount = end - start;
    const plain = given === null;
    const slots = given ?? regionSlots(model, start, end);
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
      // A section whose every row an effect took away is gone, as the server's list will have no
      // empty section (a list without sections, one keyed null, stays as it is).
      const keys = model.sections.keys;
      if ((keys.length !== 1 || keys[0] !== null) && counts.includes(0)) {
        const kept = counts.flatMap((rows, section) => (rows > 0 || model.sections.counts[section] === 0 ? [section] : []));
        this.sections = new Sections(kept.map((section) => keys[section]), kept.map((section) => counts[section]));
      } else {
        this.sections = new Sections(keys, counts);
      }
    }
    // The rows shown in the region; pending ones keep their stamp while their values do not change.
    const previousPending = previous?.pendingRecords ?? new Map();
    /** @type {Map<string, {values: Value[], stamp: number | string | undefined}>} */
    this.pendingRecords = new Map();
    /** @type {Array<DisplayedRow | null>} */
    this.rows = new Array(slots.length);
    /** @type {Array<number | null>} */
    this.serverPositions = new Array(slots.length);
    this.byServer = new Int32Array(this.regionCount).fill(-1);
    /** @type {Map<string, number>} */
    this.byKey = new Map();
    /** @type {Set<string>} */
    this.inserted = new Set();
    slots.forEach((slot, offset) => {
      this.serverPositions[offset] = slot.serverPosition;
      if (slot.serverPosition !== null) this.byServer[slot.serverPosition - start] = offset;
      if (slot.key === null) { this.rows[offset] = null; return; }
      let stamp = slot.stamp;
      if (slot.pending) {
        const values = /** @type {Value[]} */ (slot.values);   // an effect's row has its values
        const last = previousPending.get(slot.key);
        stamp = last && sameValues(last.values, values) ? last.stamp : `p${++lastPendingStamp}`;
        this.pendingRecords.set(slot.key, { values, stamp });
      }
      if (slot.serverPosition === null) this.inserted.add(slot.key);
      this.rows[offset] = Object.freeze({ key: slot.key, id: slot.id, values: slot.values, stamp, pending: slot.pending });
      this.byKey.set(slot.key, start + offset);
    });
    // Rows known outside the region (a window asked for), where they stand now.
    /** @type {Map<number, DisplayedRow | null>} */
    this.outside = new Map();
    for (const [position, known] of model.known) {
      if (position >= start && position < end) continue;
      const shown = position < start ? position : position + this.shift;
      this.outside.set(shown, model.row(position));
      if (!this.byKey.has(known.key)) this.byKey.set(known.key, shown);
    }
    Object.freeze(this);
  }

  /**
   * The row at `position`: {key, id, values (null: not loaded), stamp, pending}, or null when its identity is unknown.
   * @param {number} position
   * @returns {DisplayedRow | null}
   */
  row(position) {
    const offset = position - this.regionStart;
    if (offset >= 0 && offset < this.rows.length) return this.rows[offset];
    return this.outside.get(position) ?? null;
  }

  /**
   * The position of the row whose key is `key` among the rows known, or null.
   * @param {string} key
   * @returns {number | null}
   */
  positionOf(key) { return this.byKey.get(key) ?? null; }

  /** The end of the region in displayed positions: `regionStart` plus the rows shown there. */
  get regionEnd() { return this.regionStart + this.rows.length; }

  /** Whether rows the effects brought in or changed show (false: this is the server's list). */
  get hasPending() { return !this.plain; }

  /**
   * The server's position of displayed `position` (for a pending row, the nearest held one).
   * @param {number} position
   * @returns {number}
   */
  serverPosition(position) {
    const offset = position - this.regionStart;
    if (offset < 0) return position;
    if (offset >= this.rows.length) return position - this.shift;
    return this.serverPositions[offset] ?? this.regionStart + Math.min(offset, Math.max(0, this.regionCount - 1));
  }

  // For DisplayedTransition: positions of server rows, and the region's slots.

  /**
   * The displayed position of the server's row at `position`, or null when an effect took it out.
   * @param {number} position
   * @returns {number | null}
   */
  fromServer(position) {
    const offset = position - this.regionStart;
    if (offset < 0) return position;
    if (offset >= this.regionCount) return position + this.shift;
    const shown = this.byServer[offset];
    return shown < 0 ? null : this.regionStart + shown;
  }

  /**
   * The server's position of the row at displayed `position`; null for a row an effect inserted.
   * @param {number} position
   * @returns {number | null}
   */
  toServer(position) {
    const offset = position - this.regionStart;
    if (offset < 0) return position;
    if (offset >= this.rows.length) return position - this.shift;
    return this.serverPositions[offset];
  }

  /**
   * The key of the region's row at displayed `position`, or null (outside the region, unknown).
   * @param {number} position
   * @returns {string | null}
   */
  regionKey(position) {
    const offset = position - this.regionStart;
    return offset >= 0 && offset < this.rows.length ? this.rows[offset]?.key ?? null : null;
  }

  /**
   * The key of the region's row that holds the server's `position`, or null.
   * @param {number} position
   * @returns {string | null}
   */
  regionKeyOfServer(position) {
    const offset = position - this.regionStart;
    if (offset < 0 || offset >= this.regionCount || this.byServer[offset] < 0) return null;
    return this.rows[this.byServer[offset]]?.key ?? null;
  }

  /**
   * The displayed position of key `key` in the region, or null.
   * @param {string} key
   * @returns {number | null}
   */
  regionPositionOf(key) {
    const position = this.byKey.get(key);
    return position !== undefined && position >= this.regionStart && position < this.regionStart + this.rows.length ? position : null;
  }
}

/**
 * The region's rows as the server's list has them.
 * @param {ListModel} model
 * @param {number} start
 * @param {number} end
 * @returns {Slot[]}
 */
function regionSlots(model, start, end) {
  /** @type {Slot[]} */
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
 * One transition of the displayed list, from `from` to `to` (DisplayedLists), the server's list
 * having gone through `server` ({newPosition, oldPosition} over its positions, or null: the
 * server's list did not change, only its window or the effects did): `newPosition(old)` and
 * `oldPosition(new)` pair the rows that stay (a position of neither is deleted, or inserted).
 * A row an effect inserted pairs with the row of its identity on the other side — the server's
 * row its commit brought, or the pending row again — so that it moves or changes as the same
 * row, never deleted and inserted; so does a row an effect changed that both sides show in their
 * region (the server's changes delete and insert a row whose section goes or comes, where the
 * list shown may keep it in place). Each lookup is O(log) (the server's mapping).
 */
export class DisplayedTransition {
  /**
   * @param {DisplayedList} from
   * @param {DisplayedList} to
   * @param {PositionMapping | null} [server]
   */
  constructor(from, to, server = null) {
    this.from = from;
    this.to = to;
    this.server = server;
  }

  /**
   * The position after the transition of the row at `position` before it; null when it went.
   * @param {number} position
   * @returns {number | null}
   */
  newPosition(position) {
    const server = this.server;
    return pair(position, this.from, this.to, server ? (p) => server.newPosition(p) : (p) => p);
  }

  /**
   * The position before the transition of the row at `position` after it; null when it came.
   * @param {number} position
   * @returns {number | null}
   */
  oldPosition(position) {
    const server = this.server;
    return pair(position, this.to, this.from, server ? (p) => server.oldPosition(p) : (p) => p);
  }
}

/**
 * The position in `other` of the row at `position` in `list`, through `map` for server rows.
 * @param {number} position
 * @param {DisplayedList} list
 * @param {DisplayedList} other
 * @param {(position: number) => number | null} map
 * @returns {number | null}
 */
function pair(position, list, other, map) {
  if (!(Number.isInteger(position) && position >= 0 && position < list.count)) return null;
  const key = list.regionKey(position);
  if (key !== null && byIdentity(key, list, other)) return other.regionPositionOf(key);
  const server = list.toServer(position);
  if (server === null) return null;
  const target = map(server);
  if (target === null || target < 0) return null;
  const shown = other.fromServer(target);
  if (shown === null || shown >= other.count) return null;
  const otherKey = other.regionKeyOfServer(target);
  if (otherKey !== null && byIdentity(otherKey, list, other)) return null;   // paired by identity
  return shown;
}

/**
 * Whether the row `key` pairs by its identity between `a` and `b` (either way round): a row an
 * effect inserted on either side, or one an effect changed on either side that both regions show.
 * @param {string} key
 * @param {DisplayedList} a
 * @param {DisplayedList} b
 */
function byIdentity(key, a, b) {
  if (a.inserted.has(key) || b.inserted.has(key)) return true;
  return (a.pendingRecords.has(key) || b.pendingRecords.has(key)) && a.regionPositionOf(key) !== null && b.regionPositionOf(key) !== null;
}
