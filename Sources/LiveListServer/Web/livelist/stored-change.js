// stored-change.js — a pending mutation's expected effect as an OfflineStore keeps it in Web
// Storage, with its values exactly (the wire's JSON form, a real −0 kept), and read back as
// strictly as the wire's values.

import { decodeValue, pendingValue, wireForm } from './values.js';
import { PendingEffect } from './pending-overlay.js';

/** @typedef {import('./values.js').Value} Value */

/**
 * JSON text of plain JSON data (null, booleans, numbers, strings, arrays, objects), as
 * JSON.stringify writes it but for −0, written `-0.0` (JSON.parse reads it back as −0): a real
 * −0 (`{"f":-0.0}`) is kept as such.
 * @param {unknown} value
 * @returns {string}
 */
function jsonText(value) {
  if (typeof value === 'number') return Object.is(value, -0) ? '-0.0' : JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(jsonText).join(',')}]`;
  if (value !== null && typeof value === 'object') return `{${Object.entries(value).map(([name, member]) => `${JSON.stringify(name)}:${jsonText(member)}`).join(',')}}`;
  return JSON.stringify(value);
}

/**
 * A value as the store writes it: the wire's JSON form (an integer −0 is 0).
 * @param {Value} value
 */
function storedValue(value) {
  return value === 0 ? 0 : wireForm(value);
}

/**
 * A value the store wrote, read as strictly as the wire's: a bare number is an integer within ±(2⁵³ − 1).
 * @param {unknown} json
 * @returns {Value}
 */
function readStoredValue(json) {
  if (typeof json === 'number' && !Number.isSafeInteger(json)) throw new TypeError(`${json} is not a value`);
  return pendingValue(decodeValue(json));
}

/**
 * A pending change as the store keeps it, the JSON text of `{mutation, list, insert|update|delete}`:
 * `mutation` its number, `list` the key of the list kept, and the change as `mutate` takes it with
 * its values in the wire's JSON form (`{insert: {id, values, placement}}`, `{update: {id, values}}`,
 * `{delete: {id}}`; `placement` `'sorted'`, `{first: key}` or `{last: key}`).
 * @param {number} mutation
 * @param {string} key
 * @param {PendingEffect} effect
 * @returns {string}
 */
export function storedChange(mutation, key, effect) {
  /** @type {Record<string, unknown>} */
  const body = { id: storedValue(effect.id) };
  if (effect.values) body.values = Object.fromEntries([...effect.values].map(([name, value]) => [name, storedValue(value)]));
  const placement = effect.placement;
  if (placement) body.placement = placement.edge === 'sorted' ? 'sorted' : { [placement.edge]: storedValue(placement.section) };
  return jsonText({ mutation, list: key, [effect.kind]: body });
}

/**
 * A change the store kept (parsed JSON) as `{mutation, key, effect}` (a PendingEffect), or null when it is not one.
 * @param {any} entry
 * @returns {{mutation: number, key: string, effect: PendingEffect} | null}
 */
export function readStoredChange(entry) {
  try {
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) return null;
    if (!Number.isSafeInteger(entry.mutation) || entry.mutation < 1 || typeof entry.list !== 'string') return null;
    const kinds = /** @type {const} */ (['insert', 'update', 'delete']).filter((kind) => Object.hasOwn(entry, kind));
    if (kinds.length !== 1) return null;
    const kind = kinds[0], body = entry[kind];
    if (body === null || typeof body !== 'object' || Array.isArray(body) || !Object.hasOwn(body, 'id')) return null;
    /** @type {any} */
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

