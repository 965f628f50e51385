// derived-effects.js — the pending effects of a mutation the app describes no effect for
// (docs/PROTOCOL.md, "Effects the server states"): what the statements a list's reset states for
// it (effects.js) will do to the rows the client holds, computed when it is sent.

import { ProtocolError, decodeValue, identityKey, pendingValue, sameValue } from './values.js';
import { compareValues } from './order.js';

/** @typedef {import('./values.js').Value} Value */
/** @typedef {import('./pending-overlay.js').EffectInput} EffectInput */
/** @typedef {import('./effects.js').ListEffects} ListEffects */
/** @typedef {import('./effects.js').Operand} Operand */
/** @typedef {import('./effects.js').Condition} Condition */
/** @typedef {import('./effects.js').Collation} Collation */
/** @typedef {import('./effects.js').Statement} Statement */

/** @param {unknown} json @returns {json is Record<string, any>} */
const isObject = (json) => json !== null && typeof json === 'object' && !Array.isArray(json);

/** A value the client does not know: a column the list does not show, a value the server cannot state. */
const unknown = Symbol('unknown');

/** @typedef {Value | typeof unknown} Known */

/**
 * Why a mutation shows nothing derived on a list, though the server states it there:
 * - `unknownOperand`: an argument not given (and no default), or not a value the protocol carries
 *   (the server refuses the mutation: `badArguments`);
 * - `unknownColumn`: a condition or a value shown needs a column the list does not show, a value the
 *   server cannot state, or an expression's value (a column of the list that is no table column);
 * - `rowNotHeld`: an update or a delete of a row no list holds, or of one that stands in this list
 *   outside the rows it holds;
 * - `unknownIdentity`: an inserted row's identity is not known (or NULL: the database's to give);
 * - `identityTaken`: an insert of an identity a list holds (the database refuses it);
 * - `unrepresentable`: two columns of the list share a name and would show different values.
 * @typedef {'unknownOperand' | 'unknownColumn' | 'rowNotHeld' | 'unknownIdentity' | 'identityTaken' | 'unrepresentable'} StopReason
 */

class Stop {
  /** @param {StopReason} reason */
  constructor(reason) { this.reason = reason; }
}

/**
 * What `deriveEffects` found: the effects to lay (none: nothing to show), or why it shows nothing
 * (`stopped`, null when it did not stop); `notStated`: the list's reset states no effects for the
 * mutation.
 * @typedef {{effects: EffectInput[], stopped: StopReason | null, notStated: boolean}} Derivation
 */

/**
 * A list as `deriveEffects` reads it: its `effects`, `columns`, the rows it holds (`known`,
 * `row(position)`). A ListModel is one.
 * @typedef {{effects: ListEffects | null, columns: readonly string[],
 *   known: ReadonlyMap<number, {key: string}>, row(position: number): {key: string, id: Value, values: Value[] | null} | null}} DerivableList
 */

/**
 * A row of the table as the statements leave it, by identity key: where it comes from (`held`:
 * this list holds it; `other`: another list does; `new`: a statement inserted it; `unknown`: a
 * statement may have deleted it), its values by table column (null: deleted), whether it is in
 * this list (`inList`; undefined for a row of another list no statement touched yet), and the
 * values of the list's expression columns while the table's values stay as held.
 * @typedef {{origin: 'held' | 'other' | 'new' | 'unknown', id: Value, values: Map<string, Known> | null,
 *   inList: boolean | undefined, expressions: Known[], heldValues: Value[] | null}} Entry
 */

/**
 * An argument as the server will read it from the wire (`JSON.stringify` of the mutation):
 * undefined when not given; `unknown` when it is not a protocol value.
 * @param {unknown} given
 * @returns {Known | undefined}
 */
function argumentValue(given) {
  if (given === undefined) return undefined;
  if (given === null || typeof given === 'string') return given;
  if (typeof given === 'number') return Number.isSafeInteger(given) ? (given === 0 ? 0 : given) : unknown;
  if (!isObject(given) || (Object.getPrototypeOf(given) !== Object.prototype && Object.getPrototypeOf(given) !== null)) return unknown;
  const keys = Object.keys(given);
  if (keys.length !== 1) return unknown;
  if (keys[0] === 'f' && typeof given.f === 'number' && !Number.isFinite(given.f)) return unknown;   // JSON writes null
  try {
    return pendingValue(decodeValue(given));
  } catch (error) {
    if (error instanceof ProtocolError) return unknown;   // the server refuses it: badArguments, to the caller
    throw error;
  }
}

/**
 * @param {Operand} operand
 * @param {Record<string, unknown>} args
 * @returns {Value}
 */
function resolve(operand, args) {
  if (operand.kind === 'value') return operand.value;
  const given = argumentValue(Object.hasOwn(args, operand.name) ? args[operand.name] : undefined);
  if (given === undefined) {
    if (!operand.hasDefault) throw new Stop('unknownOperand');
    return operand.fallback;
  }
  if (given === unknown) throw new Stop('unknownOperand');
  return given;
}

/**
 * A condition with its operand resolved.
 * @typedef {{column: string, op: string, operand?: Value, collation?: Collation}} ResolvedCondition
 */

/**
 * Whether `row` meets `condition`: true, false, or `unknown` (it needs a column not known).
 * @param {ResolvedCondition} condition
 * @param {Map<string, Known>} row
 * @returns {boolean | typeof unknown}
 */
function meets(condition, row) {
  const value = row.has(condition.column) ? /** @type {Known} */ (row.get(condition.column)) : unknown;
  if (value === unknown) return unknown;
  if (condition.op === 'isNull') return value === null;
  if (condition.op === 'notNull') return value !== null;
  const operand = /** @type {Value} */ (condition.operand);
  if (value === null || operand === null) return false;
  const order = compareValues({ descending: false, nullsFirst: true, collation: condition.collation ?? 'binary' }, value, operand);
  switch (condition.op) {
    case '=': return order === 0;
    case '<>': return order !== 0;
    case '<': return order < 0;
    case '<=': return order <= 0;
    case '>': return order > 0;
    default: return order >= 0;
  }
}

/**
 * Whether `row` meets every condition: false when one is not met, else `unknown` when one needs a
 * column not known, else true.
 * @param {readonly ResolvedCondition[]} conditions
 * @param {Map<string, Known>} row
 */
function meetsAll(conditions, row) {
  /** @type {boolean | typeof unknown} */
  let result = true;
  for (const condition of conditions) {
    const met = meets(condition, row);
    if (met === false) return false;
    if (met === unknown) result = unknown;
  }
  return result;
}

/**
 * Conditions with their operands resolved.
 * @param {readonly Condition[]} conditions
 * @param {Record<string, unknown>} args
 */
function resolved(conditions, args) {
  return conditions.map((condition) => ('operand' in condition ? { ...condition, operand: resolve(condition.operand, args) } : condition));
}

/**
 * The values a held row of a list gives, by table column: the identity; each column of the list
 * that is a table column (a value the row lacks is not known); and each column its filter compares
 * `=` with text under `binary`, or with bytes: every row of the list has that value. Any other
 * column is not known.
 * @param {ListEffects} effects
 * @param {readonly ResolvedCondition[]} filter the list's filter, resolved
 * @param {Value} id
 * @param {readonly Value[] | null} values
 * @returns {Map<string, Known>}
 */
function tableRow(effects, filter, id, values) {
  /** @type {Map<string, Known>} */
  const row = new Map([[effects.identity, pendingValue(id)]]);
  effects.columns.forEach((column, index) => {
    if (column === null || row.has(column)) return;
    row.set(column, values && index < values.length ? pendingValue(values[index]) : unknown);
  });
  for (const { column, op, operand, collation } of filter) {
    if (op !== '=' || (row.has(column) && row.get(column) !== unknown)) continue;
    if ((typeof operand === 'string' && collation === 'binary') || operand instanceof Uint8Array) row.set(column, operand);
  }
  return row;
}

/**
 * The rows `list` holds, by identity key.
 * @param {DerivableList} list
 */
function heldRows(list) {
  /** @type {Map<string, {id: Value, values: Value[] | null}>} */
  const rows = new Map();
  for (const position of list.known.keys()) {
    const row = list.row(position);
    if (row) rows.set(identityKey(row.id), { id: row.id, values: row.values });
  }
  return rows;
}

/**
 * The pending effects of mutation `name` with `args` on `list`, from the statements its reset's
 * `effects` states for it (docs/PROTOCOL.md, "Effects the server states") and the rows the client
 * holds: `list`'s, and those of `others` over the same table (an update may bring one of theirs
 * into `list`). The statements run in order over the rows they touch, each seeing what the earlier
 * ones did, and the effects are the difference from the rows held: a **delete** for a held row that
 * leaves the list, an **update** (the columns whose values change) for one that stays, an
 * **insert** (sorted) for a row that comes in. Anything not known stops it: no effect at all, and
 * `stopped` says why.
 *
 * Throws only for what is not a list (a TypeError from reading it); a mutation the server will
 * refuse simply derives nothing, or effects its refusal takes back.
 * O(w + s·c) for w rows held by the lists, s statements and c columns.
 * @param {DerivableList} list
 * @param {string} name
 * @param {Record<string, unknown>} args
 * @param {Iterable<DerivableList>} [others]
 * @returns {Derivation}
 */
export function deriveEffects(list, name, args, others = []) {
  const effects = list.effects;
  const statements = effects?.mutations.get(name);
  if (!effects || !statements) return { effects: [], stopped: null, notStated: true };
  const sources = [...others].filter((other) => other !== list && other.effects?.table === effects.table && other.effects.identity === effects.identity);
  try {
    return { effects: derive(effects, list, statements, args ?? {}, sources), stopped: null, notStated: false };
  } catch (error) {
    if (error instanceof Stop) return { effects: [], stopped: error.reason, notStated: false };
    throw error;
  }
}

/**
 * @param {ListEffects} effects
 * @param {DerivableList} list
 * @param {readonly Statement[]} statements
 * @param {Record<string, unknown>} args
 * @param {DerivableList[]} sources
 * @returns {EffectInput[]}
 */
function derive(effects, list, statements, args, sources) {
  // 1. Every operand resolved first: one that resolves to nothing stops the mutation on this list.
  const runs = statements.map((statement) => {
    if (statement.kind === 'insert') return { kind: statement.kind, values: assignments(statement.values, args) };
    const key = resolve(statement.key, args), where = resolved(statement.where, args);
    return statement.kind === 'delete' ? { kind: statement.kind, key, where } : { kind: statement.kind, key, where, set: assignments(statement.set, args) };
  });
  const filter = resolved(effects.filter, {});   // bound values only
  /** @type {() => Known[]} */
  const noExpressions = () => effects.columns.flatMap((column) => (column === null ? [unknown] : []));
  const held = heldRows(list);
  const sourceRows = sources.map((source) => {
    const sourceEffects = /** @type {ListEffects} */ (source.effects);
    return { effects: sourceEffects, filter: resolved(sourceEffects.filter, {}), rows: heldRows(source) };
  });
  /** @type {Map<string, Entry>} */
  const entries = new Map();

  /**
   * The entry of identity `key`: as a statement left it, or as a list holds it; null when none.
   * @param {string} key
   * @returns {Entry | null}
   */
  const entry = (key) => {
    const kept = entries.get(key);
    if (kept) return kept;
    /** @type {Entry} */
    let found;
    const row = held.get(key);
    if (row) {
      /** @type {Known[]} */
      const expressions = effects.columns.flatMap((column, index) => (column === null ? [row.values && index < row.values.length ? row.values[index] : unknown] : []));
      found = { origin: 'held', id: row.id, values: tableRow(effects, filter, row.id, row.values), inList: true, expressions, heldValues: row.values };
    } else {
      const source = sourceRows.find((candidate) => candidate.rows.has(key));
      const other = source?.rows.get(key);
      if (!source || !other) return null;
      found = { origin: 'other', id: other.id, values: tableRow(source.effects, source.filter, other.id, other.values), inList: undefined,
        expressions: noExpressions(), heldValues: null };
    }
    entries.set(key, found);
    return found;
  };

  /**
   * Whether `row` meets the list's filter; `unknown` stops.
   * @param {Map<string, Known>} row
   */
  const inList = (row) => {
    const met = meetsAll(filter, row);
    if (met === unknown) throw new Stop('unknownColumn');
    return met;
  };

  /**
   * Whether a row of another list no statement touched yet is in this list: when it is, it stands
   * outside the rows the list holds (nothing about it is known), and stops.
   * @param {Entry} found
   */
  const notInList = (found) => {
    if (found.inList !== undefined) return;
    if (inList(/** @type {Map<string, Known>} */ (found.values))) throw new Stop('rowNotHeld');
    found.inList = false;
  };

  for (const run of runs) {
    if (run.kind === 'insert') {
      /** @type {Map<string, Known>} */
      const row = new Map(run.values);
      const id = row.has(effects.identity) ? /** @type {Known} */ (row.get(effects.identity)) : unknown;
      if (id === unknown || id === null) throw new Stop('unknownIdentity');
      const key = identityKey(id);
      const found = entry(key);
      if (found && found.values !== null) throw new Stop('identityTaken');
      if (found?.origin === 'unknown') throw new Stop('rowNotHeld');   // deleted, or not
      entries.set(key, { origin: found?.origin ?? 'new', id, values: row, inList: inList(row), expressions: noExpressions(), heldValues: found?.heldValues ?? null });
      continue;
    }
    if (run.key === null) continue;   // no row's identity is NULL = anything
    const key = identityKey(run.key);
    const found = entry(key);
    if (!found || found.origin === 'unknown') throw new Stop('rowNotHeld');
    if (found.values === null) continue;   // deleted by an earlier statement
    const old = found.values;
    const met = meetsAll(run.where, old);
    if (run.kind === 'delete') {
      // A row of another list, not in this one: nothing to show. Whether it is deleted (a later
      // statement may insert its identity) is not known when `where` needs a column not known.
      notInList(found);
      if (met === unknown) {
        if (found.origin !== 'other' || found.inList) throw new Stop('unknownColumn');
        Object.assign(found, { origin: 'unknown', values: null });
      } else if (met) {
        Object.assign(found, { values: null, inList: false });
      }
      continue;
    }
    if (met === unknown) throw new Stop('unknownColumn');
    if (!met) continue;
    notInList(found);
    const set = /** @type {Map<string, Known>} */ (run.set);
    const values = new Map(old);
    for (const [column, value] of set) values.set(column, value);
    const newId = values.has(effects.identity) ? /** @type {Known} */ (values.get(effects.identity)) : unknown;
    if (newId === unknown || newId === null) throw new Stop('unknownIdentity');
    const newKey = identityKey(newId);
    if (newKey !== key) {
      // A new identity: the row of the old one goes, one of the new one comes.
      const target = entry(newKey);
      if (target && target.values !== null) throw new Stop('identityTaken');
      if (target?.origin === 'unknown') throw new Stop('rowNotHeld');
      Object.assign(found, { values: null, inList: false });
      entries.set(newKey, { origin: target?.origin ?? 'new', id: newId, values, inList: inList(values), expressions: noExpressions(), heldValues: target?.heldValues ?? null });
      continue;
    }
    // A value that may change (or one not known) may change what an expression of the list shows.
    const changed = [...set].some(([column, value]) => {
      const before = old.has(column) ? old.get(column) : unknown;
      return value === unknown || before === unknown || !sameValue(/** @type {Value} */ (value), /** @type {Value} */ (before));
    });
    found.values = values;
    found.inList = inList(values);
    if (changed) found.expressions = noExpressions();
  }
  return differences(effects, list.columns, entries);
}

/**
 * `values` or `set` with their operands resolved (`unknown` for a value the server cannot state).
 * @param {Map<string, Operand | null>} given
 * @param {Record<string, unknown>} args
 * @returns {Map<string, Known>}
 */
function assignments(given, args) {
  return new Map([...given].map(([column, operand]) => [column, operand === null ? unknown : resolve(operand, args)]));
}

/**
 * The effects that take the rows held to the entries: deletes, updates, inserts, in the order the
 * statements first touched their rows.
 * @param {ListEffects} effects
 * @param {readonly string[]} columns the list's column names
 * @param {Map<string, Entry>} entries
 * @returns {EffectInput[]}
 */
function differences(effects, columns, entries) {
  /** @type {EffectInput[]} */
  const result = [];
  /** @type {Map<string, number>} how many of the list's columns have each name */
  const names = new Map();
  for (const name of columns) names.set(name, (names.get(name) ?? 0) + 1);
  for (const found of entries.values()) {
    const was = found.origin === 'held';
    const now = found.values !== null && found.inList === true;
    if (was && !now) {
      result.push({ delete: { id: found.id } });
    } else if (now) {
      const shown = shownValues(effects, found);
      /** @type {Map<string, Value>} by column name */
      const values = new Map();
      for (let index = 0; index < columns.length; index++) {
        const value = shown[index];
        const old = was && found.heldValues && index < found.heldValues.length ? found.heldValues[index] : unknown;
        if (was && old !== unknown && value !== unknown && sameValue(value, pendingValue(old))) continue;
        if (value === unknown) throw new Stop('unknownColumn');
        const name = columns[index];
        // An update names a column once (the overlay sets the first of a name); an insert sets each of it.
        const taken = values.get(name);
        if (taken !== undefined ? !sameValue(taken, value) : was && /** @type {number} */ (names.get(name)) > 1) throw new Stop('unrepresentable');
        values.set(name, value);
      }
      // Object.fromEntries defines each name as its own property (`__proto__` too).
      if (!was) result.push({ insert: { id: found.id, values: Object.fromEntries(values), placement: 'sorted' } });
      else if (values.size > 0) result.push({ update: { id: found.id, values: Object.fromEntries(values) } });
    }
  }
  return result;
}

/**
 * The values an entry shows in the list's columns: a table column's value, or an expression's as
 * held while the row's values stay.
 * @param {ListEffects} effects
 * @param {Entry} found
 * @returns {Known[]}
 */
function shownValues(effects, found) {
  const values = /** @type {Map<string, Known>} */ (found.values);
  let expression = 0;
  return effects.columns.map((column) => {
    if (column === null) return found.expressions[expression++] ?? unknown;
    return values.has(column) ? /** @type {Known} */ (values.get(column)) : unknown;
  });
}
