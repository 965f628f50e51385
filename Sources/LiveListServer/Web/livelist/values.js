// values.js — the protocol's values (docs/PROTOCOL.md, "Values"): read from the wire's JSON, held
// exactly (integers beyond ±(2⁵³ − 1) as BigInts, reals as Reals, blobs as Uint8Arrays), written
// back, compared, and a query's arguments compared by them; and the error a message the client
// cannot apply throws.

/**
 * A value as the model holds it: NULL, TEXT, an INTEGER (a number within ±(2⁵³ − 1), a BigInt
 * beyond), a REAL, a BLOB.
 * @typedef {null | string | number | bigint | Real | Uint8Array} Value
 */

/**
 * A value in the wire's JSON form: `null`, a string, an integer, `{"i": digits}`, `{"f": number |
 * "inf" | "-inf"}`, `{"b": base64}`.
 * @typedef {null | string | number | {i: string} | {f: number | string} | {b: string}} WireValue
 */

/**
 * The value `json` (the wire's JSON form) stands for; a ProtocolError for anything else.
 * @param {unknown} json
 * @returns {Value}
 */
export function decodeValue(json) {
  if (json === null || typeof json === 'string') return json;
  if (typeof json === 'number') {
    if (!Number.isInteger(json)) throw new ProtocolError(`a bare number with a fraction: ${json}`);
    return json;
  }
  if (typeof json === 'object' && !Array.isArray(json)) {
    const tagged = /** @type {Record<string, unknown>} */ (json);
    const keys = Object.keys(tagged);
    if (keys.length === 1) {
      if (keys[0] === 'i' && typeof tagged.i === 'string' && /^-?[0-9]+$/.test(tagged.i)) return BigInt(tagged.i);
      if (keys[0] === 'f') {
        if (typeof tagged.f === 'number') return new Real(tagged.f);
        if (tagged.f === 'inf') return new Real(Infinity);
        if (tagged.f === '-inf') return new Real(-Infinity);
      }
      if (keys[0] === 'b' && typeof tagged.b === 'string') return base64Decode(tagged.b);
    }
  }
  throw new ProtocolError(`not a value: ${JSON.stringify(json)}`);
}

/** A REAL (so that 1.0 stays a real, not the integer 1). */
export class Real {
  /** @param {number} value */
  constructor(value) { this.value = value; }
  toString() { return Number.isInteger(this.value) ? this.value.toFixed(1) : String(this.value); }
}

/**
 * The text a cell shows for a value.
 * @param {Value | undefined} value
 * @returns {string}
 */
export function displayText(value) {
  if (value === null || value === undefined) return '';
  if (value instanceof Uint8Array) return `⟨${value.length} bytes⟩`;
  return String(value);
}

/** @param {string} text */
function base64Decode(text) {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) throw new ProtocolError('bad base64');
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/**
 * A message the client cannot apply: its version does not follow (`kind` `versionGap`), it
 * contradicts the list (`inconsistent`), or it is not a message of the protocol (`malformed`).
 */
export class ProtocolError extends Error {
  /**
   * @param {string} message
   * @param {'inconsistent' | 'versionGap' | 'malformed'} [kind]
   */
  constructor(message, kind = 'inconsistent') {
    super(message);
    this.name = 'ProtocolError';
    this.kind = kind;
  }
}

const maximumSafe = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * A value of a pending row as the model holds it: null, a string, an integer (a number within
 * ±(2⁵³ − 1), a BigInt beyond), a Real, a Uint8Array — given as such or in the wire's JSON form
 * (`{"i":…}`, `{"f":…}`, `{"b":…}`). A number with a fraction is refused (a real is a `Real`).
 * @param {unknown} value
 * @returns {Value}
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

/**
 * A value in the wire's JSON form.
 * @param {Value} value
 * @returns {WireValue}
 */
export function wireForm(value) {
  if (typeof value === 'bigint') return { i: String(value) };
  if (value instanceof Real) return { f: value.value === Infinity ? 'inf' : value.value === -Infinity ? '-inf' : value.value };
  if (value instanceof Uint8Array) {
    let binary = '';
    for (const byte of value) binary += String.fromCharCode(byte);
    return { b: btoa(binary) };
  }
  return value;
}

/**
 * The key the model gives the row of identity `id` (a value as `pendingValue` reads it).
 * @param {unknown} id
 * @returns {string}
 */
export function identityKey(id) {
  return JSON.stringify(wireForm(pendingValue(id)));
}

/**
 * Whether two values (as the model holds them) are the same value, of the same class: exactly.
 * @param {Value} a
 * @param {Value} b
 */
export function sameValue(a, b) {
  if (a === b) return true;
  if (a instanceof Real && b instanceof Real) return a.value === b.value;
  if (a instanceof Uint8Array && b instanceof Uint8Array) return a.length === b.length && a.every((byte, i) => byte === b[i]);
  return false;
}

/**
 * Whether two rows' values are the same, value for value.
 * @param {readonly Value[]} a
 * @param {readonly Value[]} b
 */
export function sameValues(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!sameValue(a[i], b[i])) return false;
  return true;
}

/**
 * Arguments in the wire's JSON form (what a subscribe sends).
 * @param {unknown} args
 * @returns {Record<string, unknown>}
 */
export function wireArguments(args) {
  return JSON.parse(JSON.stringify(args ?? {}));
}

/**
 * An argument as a value the model holds (exact), or undefined when it is not a protocol value.
 * @param {unknown} json
 */
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
 * @param {unknown} a
 * @param {unknown} b
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
