// effects.js — what the server's mutations do to a list, when its reset states it (docs/PROTOCOL.md,
// "What mutations do to the list"): the list's table, identity and filter, and each mutation's
// statements on that table, read from the reset's `effects` (derived-effects.js computes a
// mutation's pending effects from them).

import { ProtocolError, decodeValue, pendingValue } from './values.js';

/** @typedef {import('./values.js').Value} Value */

/**
 * An operand: a value, or the mutation's argument `name` (with its parameter's default, if any).
 * @typedef {{kind: 'value', value: Value} | {kind: 'arg', name: string, hasDefault: boolean, fallback: Value}} Operand
 */

/** @typedef {'=' | '<>' | '<' | '<=' | '>' | '>='} Comparison */
/** @typedef {'binary' | 'nocase' | 'rtrim'} Collation */

/**
 * A condition on a table column: a comparison with an operand, or a test for NULL.
 * @typedef {{column: string, op: Comparison, operand: Operand, collation: Collation} | {column: string, op: 'isNull' | 'notNull'}} Condition
 */

/**
 * A statement of a mutation on the list's table. `values` and `set` are by table column; an
 * operand null is a value the server cannot state (an insert's column not in `values` is one too).
 * @typedef {{kind: 'insert', values: Map<string, Operand | null>}
 *   | {kind: 'update', key: Operand, where: Condition[], set: Map<string, Operand | null>}
 *   | {kind: 'delete', key: Operand, where: Condition[]}} Statement
 */

/**
 * A reset's `effects`, checked: the list's table, its identity column, the table column of each of
 * the list's columns (null: an expression), the conditions a row of the list meets, and the
 * statements of each mutation the server states, by name.
 * @typedef {{readonly table: string, readonly identity: string, readonly columns: ReadonlyArray<string | null>,
 *   readonly filter: readonly Condition[], readonly mutations: ReadonlyMap<string, readonly Statement[]>}} ListEffects
 */

/** A part of `effects` this client cannot read (thrown and caught within this module only). */
class Unreadable {}

const comparisons = new Set(['=', '<>', '<', '<=', '>', '>=']);
const collations = new Set(['binary', 'nocase', 'rtrim']);

/** @param {unknown} json @returns {json is Record<string, any>} */
const isObject = (json) => json !== null && typeof json === 'object' && !Array.isArray(json);

/**
 * A value of `effects` (the wire's form), as the model holds it.
 * @param {unknown} json
 * @returns {Value}
 */
function readValue(json) {
  try {
    return pendingValue(decodeValue(json));
  } catch (error) {
    if (error instanceof ProtocolError) throw new Unreadable();
    throw error;
  }
}

/**
 * @param {unknown} json
 * @param {boolean} argumentsAllowed false in `filter`, whose operands are bound values
 * @returns {Operand}
 */
function readOperand(json, argumentsAllowed) {
  if (!isObject(json)) throw new Unreadable();
  if (Object.hasOwn(json, 'value') === Object.hasOwn(json, 'arg')) throw new Unreadable();
  if (Object.hasOwn(json, 'value')) return { kind: 'value', value: readValue(json.value) };
  if (!argumentsAllowed || typeof json.arg !== 'string') throw new Unreadable();
  const hasDefault = Object.hasOwn(json, 'default');
  return { kind: 'arg', name: json.arg, hasDefault, fallback: hasDefault ? readValue(json.default) : null };
}

/**
 * @param {unknown} json
 * @param {boolean} argumentsAllowed
 * @returns {Condition[]}
 */
function readConditions(json, argumentsAllowed) {
  if (!Array.isArray(json)) throw new Unreadable();
  return json.map((condition) => {
    if (!isObject(condition) || typeof condition.column !== 'string') throw new Unreadable();
    const { column, op } = condition;
    if (op === 'isNull' || op === 'notNull') return { column, op };
    const collation = condition.collation ?? 'binary';
    if (!comparisons.has(op) || !collations.has(collation)) throw new Unreadable();
    return { column, op, operand: readOperand(condition.operand, argumentsAllowed), collation };
  });
}

/**
 * `values` or `set`: operands by table column, `null` a value the server cannot state.
 * @param {unknown} json
 * @returns {Map<string, Operand | null>}
 */
function readAssignments(json) {
  if (!isObject(json)) throw new Unreadable();
  return new Map(Object.entries(json).map(([column, operand]) => [column, operand === null ? null : readOperand(operand, true)]));
}

/**
 * @param {unknown} json
 * @returns {Statement}
 */
function readStatement(json) {
  if (!isObject(json)) throw new Unreadable();
  const kinds = ['insert', 'update', 'delete'].filter((kind) => Object.hasOwn(json, kind));
  if (kinds.length !== 1 || !isObject(json[kinds[0]])) throw new Unreadable();   // a kind a later version adds, too
  const body = json[kinds[0]];
  if (kinds[0] === 'insert') return { kind: 'insert', values: readAssignments(body.values) };
  const key = readOperand(body.key, true);
  const where = readConditions(body.where, true);
  if (kinds[0] === 'delete') return { kind: 'delete', key, where };
  return { kind: 'update', key, where, set: readAssignments(body.set) };
}

/**
 * The `effects` of a reset, checked, for a list of `columnCount` columns; null when there is none.
 *
 * A malformed `effects` is treated as the list's `order` is (parseOrder): not a protocol error —
 * the reset stands, as one without it — since it only adds pending rows the client may always
 * leave out. The table, identity, columns or filter unreadable: null, no mutation shows derived
 * effects on the list. One mutation's statements unreadable (a statement or an operator a later
 * version may add): that mutation is left out, as the server leaves out one it cannot state.
 * @param {unknown} json
 * @param {number} columnCount
 * @returns {ListEffects | null}
 */
export function parseEffects(json, columnCount) {
  if (!isObject(json) || typeof json.table !== 'string' || typeof json.identity !== 'string') return null;
  const columns = json.columns;
  if (!Array.isArray(columns) || columns.length !== columnCount || !columns.every((column) => column === null || typeof column === 'string')) return null;
  /** @type {Condition[]} */
  let filter;
  try {
    filter = readConditions(json.filter, false);
  } catch (error) {
    if (error instanceof Unreadable) return null;
    throw error;
  }
  /** @type {Map<string, readonly Statement[]>} */
  const mutations = new Map();
  if (!isObject(json.mutations)) return null;
  for (const [name, statements] of Object.entries(json.mutations)) {
    try {
      if (!Array.isArray(statements)) throw new Unreadable();
      mutations.set(name, Object.freeze(statements.map(readStatement)));
    } catch (error) {
      if (!(error instanceof Unreadable)) throw error;
    }
  }
  return Object.freeze({ table: json.table, identity: json.identity, columns: Object.freeze([...columns]), filter: Object.freeze(filter), mutations });
}
