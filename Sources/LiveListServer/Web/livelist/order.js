// order.js — the list's order: how the server orders a list, when its reset states it
// (docs/PROTOCOL.md, "The list's order"), so that a client places a pending row exactly where the
// server's list will have it.

import { Real, decodeValue } from './values.js';

/** @typedef {import('./values.js').Value} Value */

/**
 * One term of a list's order: the column it compares (an index into the list's `columns`, null
 * for the row's identity), its direction, where NULLs go, and the collation of text.
 * @typedef {{readonly column: number | null, readonly descending: boolean, readonly nullsFirst: boolean,
 *   readonly collation: 'binary' | 'nocase' | 'rtrim'}} OrderTerm
 */

/** @typedef {readonly OrderTerm[]} Order */

/**
 * A row as the order compares it: its identity and its values in the order of the list's columns.
 * @typedef {{id: unknown, values: readonly unknown[] | null}} OrderedRow
 */

const collations = new Set(['binary', 'nocase', 'rtrim']);

/**
 * The `order` of a reset, checked: terms {column (an index into `columns`, or null for the row's
 * identity), descending, nullsFirst, collation ('binary' when absent, 'nocase' or 'rtrim')}, the
 * last one the identity. Null when there is none, or when it is not one this client can read (not
 * an array, a column out of range, a collation it does not know, a flag missing): the list is then
 * one without a stated order, and the reset stands.
 * @param {unknown} json
 * @param {number} columnCount
 * @returns {Order | null}
 */
export function parseOrder(json, columnCount) {
  if (!Array.isArray(json) || json.length === 0) return null;
  /** @type {OrderTerm[]} */
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

/**
 * A value as the model holds it (a BigInt, a Real, a Uint8Array…) from itself or from its JSON.
 * @param {unknown} value
 * @returns {Value}
 */
function orderable(value) {
  if (typeof value === 'bigint' || value instanceof Real || value instanceof Uint8Array) return value;
  return decodeValue(value);
}

/**
 * The class a value sorts in: numbers, then text, then bytes.
 * @param {Exclude<Value, null>} value
 */
function orderClass(value) {
  if (typeof value === 'string') return 2;
  if (value instanceof Uint8Array) return 3;
  return 1;
}

/**
 * Integers (numbers, BigInts) and reals by value, exactly: JavaScript compares a BigInt with a
 * number by their mathematical values (9007199254740993n > 9007199254740992), infinities included.
 * @param {number | bigint | Real} a
 * @param {number | bigint | Real} b
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
 * @param {number} unit
 */
const codePointRank = (unit) => (unit >= 0xe000 ? unit - 0x800 : unit >= 0xd800 ? unit + 0x2000 : unit);

/**
 * Text by its UTF-8 bytes after the collation: `nocase` folds A–Z only and stops at the left
 * text's first NUL (then the shorter first), `rtrim` drops trailing U+0020; never normalized.
 * @param {string} a
 * @param {string} b
 * @param {OrderTerm['collation']} collation
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

/**
 * The bytes of the UTF-8 encoding of `text`'s first `end` UTF-16 units (a lone surrogate: 3, as U+FFFD).
 * @param {string} text
 * @param {number} end
 */
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

/**
 * Bytes by their bytes, a prefix before a longer value.
 * @param {Uint8Array} a
 * @param {Uint8Array} b
 */
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
 * @param {{descending: boolean, nullsFirst: boolean, collation?: OrderTerm['collation']}} term
 * @param {unknown} a
 * @param {unknown} b
 * @returns {number}
 */
export function compareValues(term, a, b) {
  const x = orderable(a), y = orderable(b);
  if (x === null || y === null) {
    if (x === y) return 0;
    return (x === null) === term.nullsFirst ? -1 : 1;
  }
  const classX = orderClass(x), classY = orderClass(y);
  let result;
  if (classX !== classY) result = classX < classY ? -1 : 1;
  else if (typeof x === 'string' && typeof y === 'string') result = compareText(x, y, term.collation ?? 'binary');
  else if (x instanceof Uint8Array && y instanceof Uint8Array) result = compareBytes(x, y);
  else result = compareNumbers(/** @type {number | bigint | Real} */ (x), /** @type {number | bigint | Real} */ (y));
  return term.descending && result !== 0 ? -result : result;
}

/**
 * Negative, zero or positive as row `a` stands before, with, or after `b` in a list of `order`
 * (the model's `order`): term after term, by the value of the term's column, or by the identity
 * (`id`) for a term whose column is null. A row is {id, values} (values in the order of
 * `columns`, as `ListModel.row` gives them); a row without values cannot be ordered (TypeError).
 * @param {Order} order
 * @param {OrderedRow} a
 * @param {OrderedRow} b
 * @returns {number}
 */
export function compareRows(order, a, b) {
  for (const term of order) {
    const result = compareValues(term, orderedValue(a, term.column), orderedValue(b, term.column));
    if (result !== 0) return result;
  }
  return 0;
}

/**
 * The value a term orders `row` by. A column its values do not reach (a server that sent fewer
 * values than columns) is NULL, as the Swift client reads it: a row of a hostile server must not
 * throw out of the list's display.
 * @param {OrderedRow} row
 * @param {number | null} column
 */
function orderedValue(row, column) {
  if (column === null) return row.id;
  if (!row.values) throw new TypeError('a row without values has no place in the order');
  return column < row.values.length ? row.values[column] : null;
}
