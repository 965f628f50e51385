// The list model and the live query of Web/livelist.js, under Node's test runner:
// node --test Tests/Web/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ListModel, LiveQuery, Mutator, MutationError, PathMapping, PendingMutations, ProtocolError, Real, decodeValue, parseChanges } from '../../Web/livelist.js';

// A seeded generator (xorshift64*), so that a failure can be replayed: LIVELIST_SEED=…
function generator(seed) {
  let state = BigInt.asUintN(64, BigInt(seed) || 1n);
  return (bound) => {
    state ^= state >> 12n; state ^= BigInt.asUintN(64, state << 25n); state ^= state >> 27n;
    const value = BigInt.asUintN(64, state * 2685821657736338717n);
    return Number(value % BigInt(bound));
  };
}
const seed = process.env.LIVELIST_SEED ? BigInt(process.env.LIVELIST_SEED) : BigInt(Math.floor(Math.random() * 2 ** 52));
console.log(`web model seed: ${seed}`);

/** The longest increasing subsequence's members (indices into `values`). */
function lis(values) {
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

/**
 * A random transition between two sectioned lists and its changes in UIKit's conventions, made
 * independently of the model: sections and rows that keep their relative order stay, the others
 * move; rows of deleted or inserted sections are deleted and inserted.
 */
function randomTransition(random, nextId) {
  const sectionCount = 1 + random(5);
  const old = [];
  for (let s = 0; s < sectionCount; s++) {
    const rows = [];
    for (let i = random(7); i > 0; i--) rows.push({ id: nextId(), content: 0 });
    old.push({ key: s * 10, rows });
  }
  // The new list: some sections dropped, some added, reordered; rows deleted, inserted, moved, changed.
  let sections = old.filter(() => random(6) !== 0).map((s) => ({ key: s.key, rows: s.rows.filter(() => random(5) !== 0).map((r) => ({ ...r })) }));
  for (let i = random(3); i > 0; i--) sections.splice(random(sections.length + 1), 0, { key: 1000 + nextId(), rows: [] });
  if (random(3) === 0 && sections.length > 1) { const [moved] = sections.splice(random(sections.length), 1); sections.splice(random(sections.length + 1), 0, moved); }
  if (sections.length === 0) sections.push({ key: 5000 + nextId(), rows: [] });
  const all = sections.flatMap((s) => s.rows);
  for (let i = random(4); i > 0 && all.length > 0; i--) {   // rows that move anywhere
    const row = all[random(all.length)];
    for (const s of sections) { const at = s.rows.indexOf(row); if (at >= 0) s.rows.splice(at, 1); }
    const target = sections[random(sections.length)];
    target.rows.splice(random(target.rows.length + 1), 0, row);
  }
  for (let i = random(5); i > 0; i--) { const target = sections[random(sections.length)]; target.rows.splice(random(target.rows.length + 1), 0, { id: nextId(), content: 0 }); }
  for (const row of sections.flatMap((s) => s.rows)) if (random(6) === 0) row.content += 1;

  const changes = { sectionDeletes: [], sectionInserts: [], sectionMoves: [], sectionReloads: [], deletes: [], inserts: [], moves: [], reloads: [] };
  const oldIndex = new Map(old.map((s, i) => [s.key, i]));
  const newIndex = new Map(sections.map((s, i) => [s.key, i]));
  old.forEach((s, i) => { if (!newIndex.has(s.key)) changes.sectionDeletes.push(i); });
  sections.forEach((s, i) => { if (!oldIndex.has(s.key)) changes.sectionInserts.push([i, s.key]); });
  const surviving = sections.filter((s) => oldIndex.has(s.key));
  const kept = lis(surviving.map((s) => oldIndex.get(s.key)));
  surviving.forEach((s, j) => { if (!kept.has(j)) changes.sectionMoves.push([oldIndex.get(s.key), newIndex.get(s.key)]); });
  const oldPath = new Map(), newPath = new Map(), oldContent = new Map();
  old.forEach((s, si) => s.rows.forEach((r, ri) => { oldPath.set(r.id, [si, ri]); oldContent.set(r.id, r.content); }));
  sections.forEach((s, si) => s.rows.forEach((r, ri) => newPath.set(r.id, [si, ri])));
  const sectionGone = (si) => !newIndex.has(old[si].key);
  const sectionNew = (si) => !oldIndex.has(sections[si].key);
  const moved = new Set();
  // Per surviving section, rows that stay in it keep their order unless outside the LIS.
  for (const s of surviving) {
    const si = newIndex.get(s.key), osi = oldIndex.get(s.key);
    const staying = s.rows.filter((r) => oldPath.has(r.id) && oldPath.get(r.id)[0] === osi);
    const order = lis(staying.map((r) => oldPath.get(r.id)[1]));
    staying.forEach((r, j) => { if (!order.has(j)) moved.add(r.id); });
    for (const r of s.rows) if (oldPath.has(r.id) && oldPath.get(r.id)[0] !== osi && !sectionGone(oldPath.get(r.id)[0])) moved.add(r.id);
    void si;
  }
  for (const [id, [si, ri]] of oldPath) {
    const target = newPath.get(id);
    if (!target || sectionGone(si) || sectionNew(target[0])) { changes.deletes.push([si, ri]); continue; }
    if (moved.has(id)) changes.moves.push([si, ri, target[0], target[1], id]);
    const content = sections[target[0]].rows[target[1]].content;
    if (content !== oldContent.get(id)) changes.reloads.push([si, ri, id]);
  }
  for (const [id, [si, ri]] of newPath) {
    const source = oldPath.get(id);
    if (!source || sectionGone(source[0]) || sectionNew(si)) changes.inserts.push([si, ri, id]);
  }
  return { old, now: sections, changes };
}

const flat = (sections) => sections.flatMap((s) => s.rows);
const valuesOf = (row) => [row.id, `row ${row.id} v${row.content} e\u0301\u0000😀`];

function resetMessage(list, version, window) {
  const rows = flat(list).map((r, p) => [p, r.id, valuesOf(r)]).filter(([p]) => p >= window[0] && p < window[1]);
  return { sub: 1, type: 'reset', version, reason: 'subscribed', columns: ['id', 'text'], sections: list.map((s) => [s.key, s.rows.length]),
    window: [window[0], window[1] - window[0]], rows };
}

test('PathMapping maps every surviving row to its new path, and back (random transitions)', () => {
  const random = generator(seed);
  let id = 0;
  for (let round = 0; round < 500; round++) {
    const { old, now, changes } = randomTransition(random, () => ++id);
    const mapping = new PathMapping(parseChanges({ from: 'e:1', to: 'e:2', ...changes }));
    const newPath = new Map();
    now.forEach((s, si) => s.rows.forEach((r, ri) => newPath.set(r.id, [si, ri])));
    const deleted = new Set(changes.deletes.map(([s, i]) => `${s}:${i}`));
    old.forEach((s, si) => s.rows.forEach((r, ri) => {
      const mapped = mapping.newPath(si, ri);
      if (deleted.has(`${si}:${ri}`)) { assert.equal(mapped, null, `seed ${seed} round ${round}`); return; }
      assert.deepEqual(mapped, newPath.get(r.id), `seed ${seed} round ${round}: ${r.id}`);
      assert.deepEqual(mapping.oldPath(...mapped), [si, ri]);
    }));
  }
});

test('The model follows random transitions exactly within its window: identities, values, counts (seeded)', () => {
  const random = generator(seed + 1n);
  let id = 0;
  for (let round = 0; round < 400; round++) {
    const { old, now, changes } = randomTransition(random, () => ++id);
    const oldRows = flat(old), newRows = flat(now);
    const window = (() => { const start = random(Math.max(1, oldRows.length)); return [start, start + 1 + random(8)]; })();
    const model = new ListModel();
    model.receive(resetMessage(old, 'e:1', window));
    // The rows the server sends: inserted, moved, reloaded, and those that came into the window.
    const oldPositions = new Map(oldRows.map((r, p) => [r.id, p]));
    const touched = new Set([...changes.inserts, ...changes.moves].map((c) => c[c.length - 1]).concat(changes.reloads.map((c) => c[2])));
    const rows = [];
    newRows.forEach((r, p) => {
      if (p < window[0] || p >= window[1]) return;
      const before = oldPositions.get(r.id);
      if (touched.has(r.id) || before === undefined || before < window[0] || before >= window[1]) rows.push([p, r.id, valuesOf(r)]);
    });
    const message = { sub: 1, type: 'changes', from: 'e:1', to: 'e:2', ...changes, rows };
    const output = model.receive(JSON.parse(JSON.stringify(message)));
    assert.equal(output.type, 'changes');
    assert.equal(model.version, 'e:2');
    assert.deepEqual(model.sections.counts, now.map((s) => s.rows.length), `seed ${seed} round ${round}`);
    assert.deepEqual(model.sections.keys, now.map((s) => s.key));
    for (let p = window[0]; p < Math.min(window[1], newRows.length); p++) {
      const row = model.row(p);
      assert.ok(row, `seed ${seed} round ${round}: no row at ${p}`);
      assert.equal(row.id, newRows[p].id, `seed ${seed} round ${round}: position ${p}`);
      assert.deepEqual(row.values, valuesOf(newRows[p]), `seed ${seed} round ${round}: values at ${p}`);
    }
  }
});

test('A message that does not follow the version, or contradicts the list, throws and changes nothing', () => {
  const model = new ListModel();
  model.receive(resetMessage([{ key: 1, rows: [{ id: 1, content: 0 }, { id: 2, content: 0 }] }], 'e:1', [0, 10]));
  const before = JSON.stringify([model.version, model.sections.counts, [...model.known]]);
  assert.throws(() => model.receive({ sub: 1, type: 'changes', from: 'e:7', to: 'e:8' }), (e) => e instanceof ProtocolError && e.kind === 'versionGap');
  assert.throws(() => model.receive({ sub: 1, type: 'changes', from: 'e:1', to: 'e:2', deletes: [[0, 5]] }), ProtocolError);
  assert.throws(() => model.receive({ sub: 1, type: 'changes', from: 'e:1', to: 'e:2', inserts: [[0, 0, 3]], rows: [[9, 3, [3]]] }), ProtocolError);
  assert.throws(() => model.receive({ sub: 1, type: 'changes', from: 'e:1', to: 'e:2', deletes: 'x' }), ProtocolError);
  assert.equal(JSON.stringify([model.version, model.sections.counts, [...model.known]]), before);
});

test('Values keep their storage class and every bit', () => {
  assert.equal(decodeValue({ i: '9007199254740993' }), 9007199254740993n);
  assert.ok(decodeValue({ f: 1 }) instanceof Real);
  assert.equal(String(decodeValue({ f: 1 })), '1.0');
  assert.equal(decodeValue({ f: '-inf' }).value, -Infinity);
  assert.deepEqual([...decodeValue({ b: 'AAEC' })], [0, 1, 2]);
  assert.equal(decodeValue('e\u0301'), 'e\u0301');
  assert.notEqual(decodeValue('e\u0301'), decodeValue('\u00e9'));
  assert.equal(decodeValue('a\u0000b').length, 3);
  assert.throws(() => decodeValue(1.5), ProtocolError);
  assert.throws(() => decodeValue({ x: 1 }), ProtocolError);
});

/** A WebSocket double: records what the client sends; the test plays the server. */
class FakeSocket {
  static sockets = [];
  constructor(url) { this.url = url; this.sent = []; this.closed = null; FakeSocket.sockets.push(this); queueMicrotask(() => this.onopen?.()); }
  send(text) { this.sent.push(JSON.parse(text)); }
  close(code = 1000) { this.closed = code; }
  serve(message) { this.onmessage?.({ data: JSON.stringify(message) }); }
  drop(code = 1006) { this.onclose?.({ code, reason: '' }); }
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

test('The live query subscribes with its window, asks for rows as it scrolls, resumes with its version after a drop, and retries at once when asked', async () => {
  FakeSocket.sockets = [];
  const events = [];
  const live = new LiveQuery('ws://host/live', 'inbox', { args: { sort: 'sender' }, window: [0, 20], prefetch: 5, WebSocket: FakeSocket, token: 't k', backoff: [10_000, 10_000] });
  live.onEvent = (event) => events.push(event.type);
  live.start();
  await tick();
  const first = FakeSocket.sockets[0];
  assert.equal(first.url, 'ws://host/live?access_token=t%20k');
  assert.deepEqual(first.sent[0], { type: 'subscribe', sub: 1, query: 'inbox', arguments: { sort: 'sender' }, window: [0, 20] });
  const list = [{ key: null, rows: Array.from({ length: 100 }, (_, i) => ({ id: i + 1, content: 0 })) }];
  first.serve(resetMessage(list, 'e:3', [0, 20]));
  assert.equal(live.state, 'live');
  assert.equal(live.model.row(0).id, 1);
  live.showRows(50, 60);
  assert.deepEqual(first.sent[1], { type: 'window', sub: 1, window: [45, 20] });
  live.showRows(52, 58);   // covered by the window asked for: nothing sent
  assert.equal(first.sent.length, 2);
  first.serve({ sub: 1, type: 'rows', version: 'e:3', window: [45, 20], rows: Array.from({ length: 20 }, (_, i) => [45 + i, 46 + i, [46 + i, 'x']]) });
  assert.equal(live.model.row(50).id, 51);
  first.drop();
  assert.equal(live.state, 'reconnecting');
  assert.ok(events.includes('failure'));
  live.retry();
  await tick();
  const second = FakeSocket.sockets[1];
  assert.deepEqual(second.sent[0], { type: 'subscribe', sub: 2, query: 'inbox', arguments: { sort: 'sender' }, window: [45, 20], resume: { version: 'e:3', held: [45, 20] } });
  second.serve({ sub: 2, type: 'changes', from: 'e:3', to: 'e:4', deletes: [[0, 0]], rows: [[64, 66, [66, 'x']]] });
  assert.equal(live.model.version, 'e:4');
  assert.equal(live.model.row(49).id, 51);
  assert.ok(events.includes('recovered'));
  // A changeset that does not follow: the subscription starts over from the version held.
  second.serve({ sub: 2, type: 'changes', from: 'e:9', to: 'e:10' });
  assert.deepEqual(second.sent.at(-2), { type: 'unsubscribe', sub: 2 });
  assert.equal(second.sent.at(-1).resume.version, 'e:4');
  live.stop();
  assert.equal(second.closed, 1000);
});

test('New arguments are one message on the open subscription; refused ones keep the old arguments and the subscription', async () => {
  FakeSocket.sockets = [];
  const live = new LiveQuery('ws://host/live', 'inbox', { args: { sort: 'activity' }, WebSocket: FakeSocket });
  live.start();
  await tick();
  const socket = FakeSocket.sockets[0];
  socket.serve(resetMessage([{ key: 1, rows: [{ id: 1, content: 0 }, { id: 2, content: 0 }] }], 'a:1', [0, 100]));
  live.setArguments({ sort: 'sender' });
  assert.deepEqual(socket.sent.at(-1), { type: 'arguments', sub: 1, arguments: { sort: 'sender' } });
  // The answer: changes from the old live query's version to the new one's (here, a move).
  socket.serve({ sub: 1, type: 'changes', from: 'a:1', to: 'b:7', moves: [[0, 1, 0, 0, 2]], rows: [[0, 2, [2, 'x']]] });
  assert.equal(live.model.version, 'b:7');
  assert.equal(live.model.row(0).id, 2);
  assert.equal(live.resetsReceived, 1);
  live.setArguments({ sort: 42 });
  socket.serve({ sub: 1, type: 'error', code: 'badArguments', message: 'sort: expected text' });
  assert.deepEqual(live.args, { sort: 'sender' });
  assert.equal(live.state, 'live');
  assert.equal(socket.closed, null);
});

test('An unknown query is refused without retrying; queryFailed shows a failure and the list goes on', async () => {
  FakeSocket.sockets = [];
  const live = new LiveQuery('ws://host/live', 'nope', { WebSocket: FakeSocket });
  const failures = [];
  live.onEvent = (event) => { if (event.type === 'failure') failures.push(event); };
  live.start();
  await tick();
  const socket = FakeSocket.sockets[0];
  socket.serve({ sub: 1, type: 'error', code: 'queryFailed', message: 'busy' });
  assert.equal(failures.at(-1).refused, false);
  socket.serve({ sub: 1, type: 'error', code: 'unknownQuery', message: 'no published query "nope"' });
  assert.equal(failures.at(-1).refused, true);
  assert.equal(live.state, 'refused');
  assert.equal(socket.closed, 1000);
});

test('Pending mutations: numbered in order, busy sends all again, out of order behind it waits, other errors end one', () => {
  const pending = new PendingMutations('c', 7);
  const first = pending.add('a', {}, { name: 'first' });
  const second = pending.add('b', { x: 1 }, { name: 'second' });
  assert.deepEqual([first.id, second.id, pending.nextId], [7, 8, 9]);
  assert.deepEqual(first, { type: 'mutate', client: 'c', id: 7, name: 'a', arguments: {} });
  assert.equal(pending.receive({ type: 'error', mutation: { client: 'c', id: 7 }, code: 'mutationUnavailable', message: 'busy' }).action, 'resendAll');
  assert.equal(pending.receive({ type: 'error', mutation: { client: 'c', id: 8 }, code: 'mutationOutOfOrder', message: '7 is expected' }).action, 'ignore');
  assert.deepEqual(pending.toResend.map((m) => m.id), [7, 8]);
  assert.equal(pending.receive({ type: 'mutated', client: 'other', id: 7, versions: {}, duplicate: false }).action, 'ignore');
  const done = pending.receive({ type: 'mutated', client: 'c', id: 7, versions: { 1: 'e:4' }, duplicate: true });
  assert.equal(done.action, 'finish');
  assert.equal(done.entry.name, 'first');
  const refused = pending.receive({ type: 'error', mutation: { client: 'c', id: 8 }, code: 'conflict', message: 'gone' });
  assert.deepEqual([refused.action, refused.entry.name, refused.error.code], ['finish', 'second', 'conflict']);
  assert.equal(pending.entries.length, 0);
});

test('The mutator sends on open, resends what waits after a drop, resolves mutated and rejects refusals; live queries ignore its answers', async () => {
  FakeSocket.sockets = [];
  const mutator = new Mutator('ws://host/live', 'web-1', { WebSocket: FakeSocket, backoff: [1, 1], resendDelay: 1 });
  const archived = mutator.mutate('archive', { id: 42 });
  const sent = mutator.mutate('send', { subject: 'é' });
  await tick();
  const first = FakeSocket.sockets[0];
  assert.deepEqual(first.sent.map((m) => [m.id, m.name]), [[1, 'archive'], [2, 'send']]);
  first.serve({ type: 'mutated', client: 'web-1', id: 1, versions: { 1: 'e:5' }, duplicate: false });
  assert.deepEqual((await archived).versions, { 1: 'e:5' });
  // The connection drops before 2 is answered: it is sent again on the next one.
  first.drop();
  await new Promise((resolve) => setTimeout(resolve, 20));
  const second = FakeSocket.sockets[1];
  assert.deepEqual(second.sent.map((m) => m.id), [2]);
  second.serve({ type: 'error', mutation: { client: 'web-1', id: 2 }, code: 'mutationUnavailable', message: 'busy' });
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(second.sent.map((m) => m.id), [2, 2]);
  second.serve({ type: 'error', mutation: { client: 'web-1', id: 2 }, code: 'conflict', message: 'gone' });
  await assert.rejects(sent, (error) => error instanceof MutationError && error.code === 'conflict');
  assert.equal(mutator.pendingCount, 0);
  // A stop rejects the caller but keeps the mutation; the next page load sends it first.
  const waiting = mutator.mutate('archive', { id: 7 });
  mutator.stop();
  await assert.rejects(waiting, (error) => error instanceof MutationError && error.code === 'stopped');
  assert.deepEqual(mutator.pendingMutations.map((m) => m.id), [3]);
  const reloaded = new Mutator('ws://host/live', 'web-1', { WebSocket: FakeSocket, nextId: mutator.nextId, pending: mutator.pendingMutations });
  const next = reloaded.mutate('send', { subject: 'x' });
  await tick();
  const third = FakeSocket.sockets.at(-1);
  assert.deepEqual(third.sent.map((m) => m.id), [3, 4]);
  third.serve({ type: 'mutated', client: 'web-1', id: 3, versions: {}, duplicate: true });
  third.serve({ type: 'mutated', client: 'web-1', id: 4, versions: {}, duplicate: false });
  assert.equal((await next).id, 4);
  assert.equal(reloaded.pendingCount, 0);
  reloaded.stop();
  // A live query on a connection that also mutates passes the mutator's messages by.
  const live = new LiveQuery('ws://host/live', 'inbox', { WebSocket: FakeSocket });
  const events = [];
  live.onEvent = (event) => events.push(event.type);
  live.start();
  await tick();
  const socket = FakeSocket.sockets.at(-1);
  socket.serve({ type: 'mutated', client: 'c', id: 1, versions: {}, duplicate: false });
  socket.serve({ type: 'error', mutation: { client: 'c', id: 2 }, code: 'conflict', message: 'x' });
  assert.deepEqual(events.filter((type) => type === 'failure'), []);
  live.stop();
});
