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
