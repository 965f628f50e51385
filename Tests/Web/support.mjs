// What the node tests of Web/ share (not a test file: node --test runs *.test.mjs).

/** A WebSocket double: records what the client sends; the test plays the server. */
export class FakeSocket {
  static sockets = [];
  constructor(url) { this.url = url; this.sent = []; this.closed = null; FakeSocket.sockets.push(this); queueMicrotask(() => this.onopen?.()); }
  send(text) { this.sent.push(JSON.parse(text)); }
  close(code = 1000) { this.closed = code; }
  serve(message) { this.onmessage?.({ data: JSON.stringify(message) }); }
  drop(code = 1006) { this.onclose?.({ code, reason: '' }); }
}

/** The longest increasing subsequence's members (indices into `values`). */
export function lis(values) {
  const tails = [], previous = new Array(values.length).fill(-1), tailIndex = [];
  values.forEach((value, i) => {
    let low = 0, high = tails.length;
    while (low < high) { const m = (low + high) >> 1; if (tails[m] < value) low = m + 1; else high = m; }
    tails[low] = value; tailIndex[low] = i;
    previous[i] = low > 0 ? tailIndex[low - 1] : -1;
  });
  const members = new Set();
  let i = tailIndex[tails.length - 1] ?? -1;
  while (i >= 0) { members.add(i); i = previous[i]; }
  return members;
}

/** A seeded generator (xorshift64*): `random(bound)` is in 0..<bound. */
export function generator(seed) {
  let state = BigInt.asUintN(64, BigInt(seed) || 1n);
  return (bound) => {
    state ^= state >> 12n; state ^= BigInt.asUintN(64, state << 25n); state ^= state >> 27n;
    const value = BigInt.asUintN(64, state * 2685821657736338717n);
    return Number(value % BigInt(bound));
  };
}

/** The seed of a random test: LIVELIST_SEED when set (to replay a failure), else a random one. */
export function testSeed() {
  return process.env.LIVELIST_SEED ? BigInt(process.env.LIVELIST_SEED) : BigInt(Math.floor(Math.random() * 2 ** 52));
}

/**
 * The lists of a `changes` from sections `old` to `now` (`[{key, rows}]`, rows with an `id`) in
 * UIKit's conventions, as a server sends them: sections and rows that keep their relative order
 * stay, the others move; rows of deleted or inserted sections are deleted and inserted; a row
 * whose content changed is reloaded. `keyOf` names a value (a section's key, a row's id),
 * `wireOf` writes one as the wire does, `contentOf` gives a row's content. Returns the lists, and
 * the ids of rows deleted and inserted again (their section went, or came).
 */
export function sectionChanges(old, now, { keyOf = JSON.stringify, wireOf = (value) => value, contentOf }) {
  const changes = { sectionDeletes: [], sectionInserts: [], sectionMoves: [], deletes: [], inserts: [], moves: [], reloads: [] };
  const oldIndex = new Map(old.map((s, i) => [keyOf(s.key), i]));
  const newIndex = new Map(now.map((s, i) => [keyOf(s.key), i]));
  old.forEach((s, i) => { if (!newIndex.has(keyOf(s.key))) changes.sectionDeletes.push(i); });
  now.forEach((s, i) => { if (!oldIndex.has(keyOf(s.key))) changes.sectionInserts.push([i, wireOf(s.key)]); });
  const surviving = now.filter((s) => oldIndex.has(keyOf(s.key)));
  const kept = lis(surviving.map((s) => oldIndex.get(keyOf(s.key))));
  surviving.forEach((s, j) => { if (!kept.has(j)) changes.sectionMoves.push([oldIndex.get(keyOf(s.key)), newIndex.get(keyOf(s.key))]); });
  const oldPath = new Map(), newPath = new Map(), oldContent = new Map(), ids = new Map(), newRows = new Map();
  old.forEach((s, si) => s.rows.forEach((r, ri) => { oldPath.set(keyOf(r.id), [si, ri]); oldContent.set(keyOf(r.id), contentOf(r)); ids.set(keyOf(r.id), r.id); }));
  now.forEach((s, si) => s.rows.forEach((r, ri) => { newPath.set(keyOf(r.id), [si, ri]); newRows.set(keyOf(r.id), r); ids.set(keyOf(r.id), r.id); }));
  const sectionGone = (si) => !newIndex.has(keyOf(old[si].key));
  const sectionNew = (si) => !oldIndex.has(keyOf(now[si].key));
  const moved = new Set();
  for (const s of surviving) {
    const osi = oldIndex.get(keyOf(s.key));
    const staying = s.rows.filter((r) => oldPath.has(keyOf(r.id)) && oldPath.get(keyOf(r.id))[0] === osi);
    const order = lis(staying.map((r) => oldPath.get(keyOf(r.id))[1]));
    staying.forEach((r, j) => { if (!order.has(j)) moved.add(keyOf(r.id)); });
    for (const r of s.rows) {
      const from = oldPath.get(keyOf(r.id));
      if (from && from[0] !== osi && !sectionGone(from[0])) moved.add(keyOf(r.id));
    }
  }
  const reinserted = new Set();
  for (const [key, [si, ri]] of oldPath) {
    const target = newPath.get(key);
    if (!target || sectionGone(si) || sectionNew(target[0])) {
      changes.deletes.push([si, ri]);
      if (target) reinserted.add(ids.get(key));
      continue;
    }
    if (moved.has(key)) changes.moves.push([si, ri, target[0], target[1], wireOf(ids.get(key))]);
    if (contentOf(newRows.get(key)) !== oldContent.get(key)) changes.reloads.push([si, ri, wireOf(ids.get(key))]);
  }
  for (const [key, [si, ri]] of newPath) {
    const source = oldPath.get(key);
    if (!source || sectionGone(source[0]) || sectionNew(si)) changes.inserts.push([si, ri, wireOf(ids.get(key))]);
  }
  return { changes, reinserted };
}

/**
 * splitmix64 from `seed` (a decimal text or BigInt): the generator the Swift tests'
 * SeededRandomNumberGenerator is, so a node client driven by a Swift test draws as it would.
 * `below(n)` is in 0..<n.
 * @param {string | bigint} seed
 */
export function splitmix(seed) {
  let state = BigInt(seed) & 0xffffffffffffffffn;
  const next = () => {
    state = (state + 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn;
    let z = state;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & 0xffffffffffffffffn;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & 0xffffffffffffffffn;
    return z ^ (z >> 31n);
  };
  return { next, below: (/** @type {number} */ n) => Number(next() % BigInt(n)) };
}
