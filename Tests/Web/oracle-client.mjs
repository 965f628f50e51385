// One client of the mutation oracle (Tests/LiveListServerTests/MutationOracleTests.swift), in
// node with livelist.js: random mutations of the oracle's three kinds, each with its expected
// effect on the client's inbox list, pipelined, on one connection the list and the mutator share,
// cut at random. Prints one JSON line: the operations in call order, what each came to, and what
// the list showed meanwhile.
//
//   node --experimental-websocket Tests/Web/oracle-client.mjs URL CLIENT SEED COUNT INDEX
import { Connection, LiveQuery, Mutator, MutationError } from '../../Web/livelist.js';
import { splitmix } from './support.mjs';

const [url, client, seedText, countText, indexText] = process.argv.slice(2);
const { below } = splitmix(seedText);
const count = Number(countText), index = Number(indexText);

const alphabet = ['e\u0301', '\u00e9', 'a', 'b', 'Z', '\0', '😀', ' ', 'ß', 'i\u0307', 'Ω'];
const text = () => Array.from({ length: below(6) + 1 }, () => alphabet[below(alphabet.length)]).join('');

// The operations, as the Swift oracle's: step k, note (id, day, subject), archive day.
const operations = [];
const days = [];
for (let i = 0; i < count; i++) {
  const kind = below(4);
  if (kind < 2) operations.push({ step: below(1000) });
  else if (kind === 2) {
    const day = 1000 + below(8);
    days.push(day);
    operations.push({ note: [1_000_000 * (index + 1) + i, day, text()] });
  } else {
    operations.push({ archive: days.length === 0 || below(4) === 0 ? 2000 + below(5) : days[below(days.length)] });
  }
}

/**
 * A WebSocket whose connection can be lost: `drop()` closes it and tells its user at once, as a
 * lost network does (the close handshake of a dropped connection never completes), and nothing
 * from it reaches the user afterwards.
 */
const sockets = new Set();
class DroppingSocket {
  constructor(target) {
    this.real = new WebSocket(target);
    this.dropped = false;
    sockets.add(this);
    for (const name of ['onopen', 'onmessage', 'onerror']) {
      this.real[name] = (event) => { if (!this.dropped) this[name]?.(event); };
    }
    this.real.onclose = (event) => { sockets.delete(this); if (!this.dropped) this.onclose?.(event); };
  }

  get readyState() { return this.dropped ? 3 : this.real.readyState; }
  send(data) { if (!this.dropped) this.real.send(data); }
  close(code, reason) { this.real.close(code, reason); }

  drop() {
    if (this.dropped) return;
    this.dropped = true;
    sockets.delete(this);
    try { this.real.close(); } catch { /* closing already */ }
    this.onclose?.({ code: 1006, reason: 'dropped' });
  }
}

const connection = new Connection(url, { backoff: [20, 300], WebSocket: DroppingSocket });
const live = new LiveQuery(connection, 'inbox', { window: [0, 60], prefetch: 0 });
const mutator = new Mutator(connection, client, { resendDelay: 50 });
let shownTwice = 0, pendingSeen = 0;
live.observe(() => {
  const keys = new Set();
  for (let position = 0; position < live.displayed.count; position++) {
    const row = live.displayed.row(position);
    if (!row || row.key === null) continue;
    if (keys.has(row.key)) shownTwice += 1;
    keys.add(row.key);
    if (row.pending) pendingSeen += 1;
  }
});
live.start();
mutator.start();

function call(operation, i) {
  if ('step' in operation) return ['step', { client, k: operation.step }, []];
  if ('note' in operation) {
    const [id, day, subject] = operation.note;
    return ['note', { id, client, k: day, subject },
      [{ list: live, insert: { id, values: { id, day, sender: client, subject } } }]];
  }
  const deletes = operations.slice(0, i).filter((o) => 'note' in o && o.note[1] === operation.archive)
    .map((o) => ({ list: live, delete: { id: o.note[0] } }));
  return ['archive', { client, k: operation.archive }, deletes];
}

const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });
const outcomes = new Array(count);
const calls = [];
let cuts = 0;
for (let round = 0; round * 4 < count; round++) {
  for (let i = round * 4; i < Math.min(count, round * 4 + 4); i++) {
    const [name, args, effects] = call(operations[i], i);
    calls.push(mutator.mutate(name, args, { effects }).then(
      (mutated) => { outcomes[i] = { id: mutated.id, refused: false, duplicate: mutated.duplicate === true }; },
      (error) => {
        // Numbered in call order from 1 (a new client): the i-th call is number i + 1.
        if (error instanceof MutationError && error.code === 'conflict') outcomes[i] = { id: i + 1, refused: true, duplicate: false };
        else outcomes[i] = { error: String(error) };
      }));
  }
  await sleep(5 + below(40));
  if (below(2) === 0) {
    // A lost connection: the list resumes and the mutator sends its pending mutations again, on one new socket.
    for (const socket of [...sockets]) socket.drop();
    cuts += 1;
  }
}
const deadline = setTimeout(() => {
  const state = { connection: connection.state, socket: connection.socket?.readyState ?? null, attempt: connection.attempt,
    pending: mutator.pendingCount, live: live.state, answered: outcomes.filter(Boolean).length };
  console.log(JSON.stringify({ error: 'not answered within 60 s', state }));
  process.exit(1);
}, 60_000);
await Promise.all(calls);
await live.sync();
// A mutation's rows go with its `mutated` (it names the list's version), or once the list's `sync`
// is answered when the answer left the list out: give them until the list is quiet, within 5 s.
for (let waited = 0; live.pendingCount > 0 && waited < 5000; waited += 10) await sleep(10);
clearTimeout(deadline);
const rows = [];
for (let position = 0; position < live.displayed.count; position++) rows.push(live.displayed.row(position)?.id ?? null);
console.log(JSON.stringify({ operations, outcomes, cuts, shownTwice, pendingSeen, pendingCount: live.pendingCount, pendingKeys: [...live.pendingEffects.keys()], rows }));
mutator.stop();
live.stop();
process.exit(0);
