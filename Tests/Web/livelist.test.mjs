// The list model and the live query of Web/livelist.js, under Node's test runner:
// node --test Tests/Web/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { inspect } from 'node:util';
import { ListModel, LiveQuery, Mutator, MutationError, PathMapping, PendingMutations, ProtocolError, Real, compareRows, compareValues, decodeValue, parseChanges } from '../../Web/livelist.js';
import { FakeSocket, generator, lis, testSeed } from './support.mjs';

const seed = testSeed();
console.log(`web model seed: ${seed}`);


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

// ---------------------------------------------------------------------------------------------
// The list's order (docs/PROTOCOL.md, "The list's order"): compareValues and compareRows against
// SQLite's own ORDER BY, through the sqlite3 shell.

// A shell with NULLS FIRST/LAST (3.30) and the ieee754 functions (its bits of a real).
const sqliteShell = ['/usr/bin/sqlite3', 'sqlite3'].find((path) => spawnSync(path, [':memory:'],
  { input: 'SELECT hex(ieee754_to_blob(1.5)) ORDER BY 1 NULLS FIRST;\n', encoding: 'utf8' }).stdout?.trim() === '3FF8000000000000') ?? null;

/** Runs `sql` in a fresh in-memory database; its output lines (list mode, `|` between columns). */
function sqlite(sql) {
  const result = spawnSync(sqliteShell, ['-bail', ':memory:'], { input: sql, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (result.status !== 0) throw new Error(`sqlite3 failed (${result.status}): ${result.stderr}`);
  return result.stdout.split('\n').filter((line) => line.length > 0);
}

const float64 = new DataView(new ArrayBuffer(8));
const realBits = (x) => { float64.setFloat64(0, x); return float64.getBigUint64(0).toString(16).toUpperCase().padStart(16, '0'); };
const fromBits = (bits) => { float64.setBigUint64(0, BigInt.asUintN(64, bits)); return float64.getFloat64(0); };
/** The double next to `x` towards +∞ (`direction` 1) or −∞ (−1). */
function nextReal(x, direction) {
  if (!Number.isFinite(x)) return x;
  if (x === 0) return direction * 5e-324;
  float64.setFloat64(0, x);
  const bits = float64.getBigUint64(0);
  return fromBits((x > 0) === (direction > 0) ? bits + 1n : bits - 1n);
}

/** A real as SQL text: the shortest repr that reads back as the same double, with '.' or 'e'. */
function realLiteral(x) {
  if (x === Infinity) return '9e999';
  if (x === -Infinity) return '-9e999';
  if (Object.is(x, -0)) return '-0.0';
  const text = String(x);
  return /[.e]/.test(text) ? text : `${text}.0`;
}

const textPieces = ['a', 'A', 'z', 'Z', 'e', 'E', '_', '[', '0', '~', "'", '\u00e9', 'e\u0301', '\u00c9', ' ', '  ', '\t', '\u00a0',
  '\u007f', '\u00df', '\u1e9e', '\ud83d\ude00', '\u{10ffff}', '\ufffd', '\ue000', '\uffee'];
const blobBytes = [0x00, 0x01, 0x20, 0x41, 0x61, 0x7f, 0x80, 0xff];
const int53 = 2n ** 53n - 1n;
const int64Min = -(2n ** 63n), int64Max = 2n ** 63n - 1n;

/** A value in three forms: `wire` (the protocol's JSON), `sql` (an expression that makes it), `kind` (SQLite's typeof). */
const integerValue = (n) => ({ kind: 'integer', n, wire: n >= -int53 && n <= int53 ? Number(n) : { i: String(n) }, sql: String(n) });
const realValue = (x) => ({ kind: 'real', x, wire: { f: x === Infinity ? 'inf' : x === -Infinity ? '-inf' : x }, sql: realLiteral(x) });
const textValue = (text) => ({ kind: 'text', text, wire: text, sql: `'${text.replaceAll("'", "''")}'` });
const blobValue = (bytes) => ({ kind: 'blob', bytes, wire: { b: Buffer.from(bytes).toString('base64') },
  sql: `X'${Buffer.from(bytes).toString('hex')}'` });
const nullValue = { kind: 'null', wire: null, sql: 'NULL' };

function randomInteger(random) {
  const sign = random(2) === 0 ? 1n : -1n;
  switch (random(5)) {
    case 0: return BigInt(random(11) - 5);
    case 1: return sign * (2n ** 53n + BigInt(random(5) - 2));
    case 2: return random(2) === 0 ? int64Max - BigInt(random(3)) : int64Min + BigInt(random(3));
    case 3: return BigInt.asIntN(64, (BigInt(random(2 ** 32)) << 32n) | BigInt(random(2 ** 32)));
    default: return sign * BigInt(random(1000));
  }
}

function randomReal(random) {
  switch (random(7)) {
    case 0: return [Infinity, -Infinity, -0, 0, 5e-324, -5e-324, 1.7976931348623157e308, 0.1, -0.1][random(9)];
    case 1: return Number(randomInteger(random));                          // an integer's neighbour, rounded
    case 2: { const x = Number(randomInteger(random)); return nextReal(x, random(2) === 0 ? 1 : -1); }   // just past one
    case 3: return (random(2001) - 1000) / 8;
    case 4: { const x = random(7) - 3; return nextReal(x, random(2) === 0 ? 1 : -1); }   // a fraction next to a small integer
    case 5: return (random(2) === 0 ? 1 : -1) * (random(2 ** 31) + random(2 ** 20) / 2 ** 20) * 2 ** (random(40) - 20);
    default: {
      const x = fromBits((BigInt(random(2 ** 32)) << 32n) | BigInt(random(2 ** 32)));
      return Number.isFinite(x) ? x : 1.5;
    }
  }
}

/** Another value equal or close to `value` under some collation or across classes, so that ties happen. */
function variantOf(random, value) {
  switch (value.kind) {
    case 'integer': {
      const x = Number(value.n);
      if (random(2) === 0 && BigInt(x) === value.n) return realValue(x);
      const next = value.n + BigInt(random(3) - 1);
      return integerValue(next >= int64Min && next <= int64Max ? next : value.n);
    }
    case 'real':
      return Number.isInteger(value.x) && value.x >= -(2 ** 63) && value.x < 2 ** 63 ? integerValue(BigInt(value.x)) : realValue(nextReal(value.x, 1));
    case 'text': {
      const choice = random(3);
      if (choice === 0) return textValue(value.text + ' '.repeat(1 + random(2)));
      if (choice === 1) return textValue(value.text.replace(/[a-z]/g, (c) => c.toUpperCase()).replace(/[A-Z]/g, (c) => (random(2) ? c.toLowerCase() : c)));
      return textValue(value.text.trimEnd());
    }
    case 'blob': return blobValue(random(2) === 0 ? value.bytes.slice(0, -1) : [...value.bytes, blobBytes[random(blobBytes.length)]]);
    default: return value;
  }
}

function randomOrderedValue(random, earlier) {
  if (earlier.length > 0 && random(4) === 0) {
    const value = earlier[random(earlier.length)];
    return random(3) === 0 ? value : variantOf(random, value);
  }
  switch (random(7)) {
    case 0: return nullValue;
    case 1: return integerValue(randomInteger(random));
    case 2: return realValue(randomReal(random));
    case 3: case 4: return textValue(Array.from({ length: random(5) }, () => textPieces[random(textPieces.length)]).join(''));
    case 5: return blobValue(Array.from({ length: random(5) }, () => blobBytes[random(blobBytes.length)]));
    default: return random(2) === 0 ? integerValue(BigInt(random(7) - 3)) : realValue(random(13) / 2 - 3);
  }
}

const orderings = ['BINARY', 'NOCASE', 'RTRIM'].flatMap((collation) => [false, true].flatMap((descending) => [true, false].map((nullsFirst) => ({
  collation, descending, nullsFirst,
  sql: `v COLLATE ${collation} ${descending ? 'DESC' : 'ASC'} NULLS ${nullsFirst ? 'FIRST' : 'LAST'}, id`,
  json: [{ column: 0, descending, nullsFirst, collation: collation.toLowerCase() }, { column: null, descending: false, nullsFirst: true }],
}))));

const sign = (x) => (x < 0 ? -1 : x > 0 ? 1 : 0);

test('compareRows orders random rows of every class exactly as SQLite does, for every collation, direction and NULLs placement (seeded)',
  { skip: sqliteShell === null && 'no sqlite3 shell with NULLS FIRST and ieee754_to_blob' }, () => {
    const random = generator(seed + 2n);
    const rounds = 32, rowsPerRound = 48;
    const tables = [];
    for (let round = 0; round < rounds; round++) {
      const values = [];
      for (let i = 0; i < rowsPerRound; i++) values.push(randomOrderedValue(random, values));
      // Identities in a random order, so that ties the comparator misses show up as wrong id orders.
      const ids = values.map((_, i) => i + 1);
      for (let i = ids.length - 1; i > 0; i--) { const j = random(i + 1); [ids[i], ids[j]] = [ids[j], ids[i]]; }
      tables.push(values.map((value, i) => ({ id: ids[i], value })));
    }
    // SQLite 3.40 reads a few decimal literals one unit in the last place off (in the 1e-300s, and
    // a few others): such reals go in by their bits instead, so that SQLite holds exactly our double.
    const reals = tables.flat().filter(({ value }) => value.kind === 'real');
    const parsed = sqlite(reals.map(({ value }) => `SELECT hex(ieee754_to_blob(${value.sql}));`).join('\n'));
    let byBits = 0;
    reals.forEach(({ value }, i) => {
      if (parsed[i] !== realBits(value.x)) { value.sql = `ieee754_from_blob(X'${realBits(value.x)}')`; byBits += 1; }
    });
    let script = '';
    tables.forEach((rows, round) => {
      script += `CREATE TABLE t${round}(id INTEGER PRIMARY KEY, v);\n`;
      script += `INSERT INTO t${round}(id, v) VALUES ${rows.map(({ id, value }) => `(${id}, ${value.sql})`).join(', ')};\n`;
      script += `SELECT '@', id, typeof(v), CASE typeof(v) WHEN 'real' THEN hex(ieee754_to_blob(v)) ELSE '' END FROM t${round};\n`;
      orderings.forEach((ordering, k) => { script += `SELECT '#${round}:${k}';\nSELECT id FROM t${round} ORDER BY ${ordering.sql};\n`; });
    });
    const lines = sqlite(script);
    const orders = new Map();
    let current = null, checked = 0;
    for (const line of lines) {
      if (line.startsWith('@|')) {
        const [, id, kind, bits] = line.split('|');
        const { value } = tables[checked / rowsPerRound | 0].find((row) => row.id === Number(id));
        assert.equal(kind, value.kind, `seed ${seed}: SQLite holds ${value.sql} as ${kind}`);
        if (kind === 'real') assert.equal(bits, realBits(value.x), `seed ${seed}: SQLite holds ${value.sql} as another double`);
        checked += 1;
      } else if (line.startsWith('#')) {
        current = [];
        orders.set(line.slice(1), current);
      } else {
        current.push(Number(line));
      }
    }
    assert.equal(checked, rounds * rowsPerRound);
    let comparisons = 0;
    tables.forEach((rows, round) => {
      const wireRows = rows.map(({ id, value }) => ({ id, values: [value.wire] }));
      orderings.forEach((ordering, k) => {
        const expected = orders.get(`${round}:${k}`);
        const context = `seed ${seed}, table ${round}, ORDER BY ${ordering.sql}`;
        assert.equal(expected.length, rows.length, context);
        // The model holds the list as the server would send it, in SQLite's order, with the order stated.
        const byId = new Map(wireRows.map((row) => [row.id, row]));
        const model = new ListModel();
        model.receive(JSON.parse(JSON.stringify({ sub: 1, type: 'reset', version: 'e:1', reason: 'subscribed', columns: ['v'], order: ordering.json,
          sections: [[null, rows.length]], window: [0, rows.length], rows: expected.map((id, p) => [p, id, byId.get(id).values]) })));
        assert.deepEqual(model.order, ordering.json.map((term) => ({ collation: 'binary', ...term })), context);
        const held = expected.map((_, p) => model.row(p));
        const sorted = [...held].sort((a, b) => compareRows(model.order, a, b)).map((row) => row.id);
        assert.deepEqual(sorted, expected, `${context}: rows sorted by compareRows`);
        // Every pair, both ways, as the model holds the values and as the wire carries them.
        for (let p = 0; p < held.length; p++) {
          assert.equal(compareRows(model.order, held[p], held[p]), 0, context);
          for (let q = p + 1; q < held.length; q++) {
            const describe = () => `${context}: ${JSON.stringify(byId.get(held[p].id).values)} (id ${held[p].id}) before ${JSON.stringify(byId.get(held[q].id).values)} (id ${held[q].id})`;
            if (!(compareRows(model.order, held[p], held[q]) < 0 && compareRows(model.order, held[q], held[p]) > 0)) assert.fail(describe());
            const term = model.order[0];
            const decoded = compareValues(term, held[p].values[0], held[q].values[0]);
            if (decoded !== compareValues(term, byId.get(held[p].id).values[0], byId.get(held[q].id).values[0])) assert.fail(`${describe()}: wire and decoded forms disagree`);
            if (decoded !== -compareValues(term, held[q].values[0], held[p].values[0])) assert.fail(`${describe()}: not antisymmetric`);
            comparisons += 1;
          }
        }
      });
    });
    console.log(`order oracle: ${rounds} tables of ${rowsPerRound} rows × ${orderings.length} orders, ${comparisons} pairs, ${byBits} of ${reals.length} reals inserted by their bits`);
  });

test('compareValues: NULLs, classes, exact numbers, code point order, collations, bytes, NUL (hand-written)', () => {
  const term = (collation = 'binary', descending = false, nullsFirst = true) => ({ column: 0, descending, nullsFirst, collation });
  const before = (t, a, b) => {
    if (!(compareValues(t, a, b) < 0 && compareValues(t, b, a) > 0)) assert.fail(`${inspect(a)} should stand before ${inspect(b)} (${inspect(t)})`);
  };
  const same = (t, a, b) => {
    if (!(compareValues(t, a, b) === 0 && compareValues(t, b, a) === 0)) assert.fail(`${inspect(a)} should stand with ${inspect(b)} (${inspect(t)})`);
  };
  // NULL: first or last whatever the direction; equal to itself.
  for (const descending of [false, true]) {
    before(term('binary', descending, true), null, { f: '-inf' });
    before(term('binary', descending, false), { b: 'AA==' }, null);
    same(term('binary', descending, false), null, null);
  }
  // Classes: numbers before text before bytes, whatever their values.
  before(term(), { f: 'inf' }, '');
  before(term(), { i: '9223372036854775807' }, '');
  before(term(), '\u{10ffff}', { b: '' });
  before(term('binary', true), { b: '' }, '\u{10ffff}');
  before(term('binary', true), '', { f: 'inf' });
  // Numbers by exact value, integers and reals alike, in either form.
  before(term(), { f: 9007199254740992 }, { i: '9007199254740993' });
  before(term(), 9007199254740993n, new Real(9007199254740994));
  before(term(), { i: '-9007199254740993' }, { f: -9007199254740992 });
  before(term(), { i: '9223372036854775807' }, { f: 9223372036854775808 });
  before(term(), { f: -9223372036854775808 }, { i: '-9223372036854775807' });
  same(term(), { f: -9223372036854775808 }, { i: '-9223372036854775808' });
  before(term(), { i: '9223372036854775807' }, { f: 'inf' });
  before(term(), { f: '-inf' }, { i: '-9223372036854775808' });
  before(term(), 1, { f: 1.0000000000000002 });
  before(term(), { f: 0.9999999999999999 }, 1);
  same(term(), 1, { f: 1 });
  same(term(), 0, { f: -0 });
  same(term(), 9007199254740992, { i: '9007199254740992' });
  before(term(), -1, { f: -0.5 });
  // Text by code points (UTF-8 bytes), never normalized; JavaScript's < would put the emoji first.
  before(term(), 'e\u0301', '\u00e9');
  assert.ok('\u{1f600}' < '\ue000');
  before(term(), '\ue000', '\u{1f600}');
  before(term(), '\ufffd', '\u{1f600}');
  before(term(), '\uffff', '\u{10000}');
  before(term(), 'a', 'a ');
  before(term(), 'A', '_');
  before(term(), 'Z', 'a');
  // nocase folds A–Z only.
  same(term('nocase'), 'ABC', 'abc');
  before(term('nocase'), '_', 'A');
  before(term('nocase'), 'e\u0301', '\u00c9');
  before(term('nocase'), '\u00c9', '\u00e9');
  before(term('nocase'), 'Z', '\u00df');
  // rtrim drops trailing U+0020, nothing else.
  same(term('rtrim'), 'a  ', 'a');
  before(term('rtrim'), 'a', 'a\t');
  before(term('rtrim'), 'a', 'a\u00a0');
  before(term('rtrim'), ' a', 'a');
  same(term('rtrim'), '', '   ');
  // NUL is a character like any other, but NOCASE compares up to the left text's first NUL and
  // then by length, as SQLite does ('a\0x' = 'a\0y' COLLATE NOCASE).
  before(term(), 'a', 'a\u0000');
  before(term(), 'a\u0000b', 'a\u0001');
  before(term(), 'a\u0000X', 'a\u0000y');
  same(term('nocase'), 'a\u0000X', 'a\u0000y');
  same(term('nocase'), 'A\u0000X', 'a\u0000x');
  before(term('nocase'), 'a\u0000', 'a\u0000x');
  before(term('nocase'), 'a\u0000', 'a\u0001');
  before(term('nocase'), 'A', 'a\u0000');
  // After the NUL, lengths are UTF-8 bytes (SQLite: char(97,0,233) = char(97,0,120,121) COLLATE NOCASE).
  same(term('nocase'), 'a\u0000\u00e9', 'a\u0000xy');
  before(term('nocase'), 'a\u0000xyz', 'a\u0000\u{1F600}');
  before(term('nocase'), 'a\u0001', 'b\u0000');
  same(term('rtrim'), 'a\u0000 ', 'a\u0000');
  before(term('rtrim'), 'a', 'a\u0000 ');
  // Bytes by their bytes, a prefix first.
  before(term(), { b: 'AAE=' }, { b: 'AAEC' });
  before(term(), { b: '' }, { b: 'AA==' });
  before(term(), { b: 'AAEC' }, new Uint8Array([255]));
  same(term(), { b: 'AAEC' }, new Uint8Array([0, 1, 2]));
  // Descending reverses step 2, and gives 0 (not -0) for equal values.
  before(term('binary', true), { i: '9007199254740993' }, { f: 9007199254740992 });
  before(term('nocase', true), 'b', 'A');
  assert.ok(Object.is(compareValues(term('binary', true), 'x', 'x'), 0));
  // A collation names how text compares, and numbers and bytes ignore it.
  same(term('nocase'), 5, { f: 5 });
  before(term('rtrim'), { b: 'IA==' }, { b: 'ICA=' });
  // What is not a value is refused.
  assert.throws(() => compareValues(term(), 1.5, 1), ProtocolError);
  assert.throws(() => compareValues(term(), undefined, 1), ProtocolError);
});

test('compareRows compares term after term, the identity last; a row without values has no place', () => {
  const order = [{ column: 1, descending: true, nullsFirst: false, collation: 'binary' }, { column: 0, descending: false, nullsFirst: true, collation: 'nocase' },
    { column: null, descending: false, nullsFirst: true, collation: 'binary' }];
  const rows = [
    { id: 4, values: ['b', 2] }, { id: 1, values: ['B', 2] }, { id: 3, values: ['a', 2] }, { id: 9007199254740993n, values: ['a', { f: 1.5 }] },
    { id: 2, values: ['Z', null] }, { id: 'x', values: ['z', null] }, { id: 'y', values: ['z', null] },
  ];
  const expected = [3, 1, 4, 9007199254740993n, 2, 'x', 'y'];   // b and B tie under nocase: the identity decides
  const random = generator(seed + 3n);
  for (let round = 0; round < 20; round++) {
    const shuffled = [...rows];
    for (let i = shuffled.length - 1; i > 0; i--) { const j = random(i + 1); [shuffled[i], shuffled[j]] = [shuffled[j], shuffled[i]]; }
    assert.deepEqual(shuffled.sort((a, b) => compareRows(order, a, b)).map((row) => row.id), expected, `seed ${seed}`);
  }
  assert.equal(compareRows(order, rows[0], { id: 4, values: ['B', { f: 2 }] }), 0);
  assert.throws(() => compareRows(order, rows[0], { id: 5, values: null }), TypeError);
  assert.ok(compareRows([{ column: null, descending: true, nullsFirst: true }], { id: 1, values: null }, { id: 2, values: null }) > 0);
});

test('A reset keeps its order; a malformed order is no order and the reset still applies; a reset without one clears it', () => {
  const list = [{ key: null, rows: [{ id: 1, content: 0 }, { id: 2, content: 0 }, { id: 3, content: 0 }] }];
  const reset = (order, version = 'e:1') => ({ ...resetMessage(list, version, [0, 10]), ...(order === undefined ? {} : { order }) });
  const valid = [{ column: 1, descending: true, nullsFirst: false, collation: 'rtrim' }, { column: null, descending: false, nullsFirst: true }];
  const model = new ListModel();
  assert.equal(model.order, null);
  assert.equal(model.receive(reset(valid)).type, 'reset');
  assert.deepEqual(model.order, [{ column: 1, descending: true, nullsFirst: false, collation: 'rtrim' }, { column: null, descending: false, nullsFirst: true, collation: 'binary' }]);
  assert.ok(compareRows(model.order, model.row(0), model.row(1)) > 0);   // 'row 1…' after 'row 2…', descending
  const term = { column: 0, descending: false, nullsFirst: true };
  const identity = { column: null, descending: false, nullsFirst: true };
  const malformed = [
    'order', 7, null, {}, [], [null], ['x'], [[0, false, true]],
    [{ ...term, column: 2 }, identity], [{ ...term, column: -1 }, identity], [{ ...term, column: 0.5 }, identity], [{ ...term, column: '0' }, identity],
    [{ descending: false, nullsFirst: true }, identity],
    [{ ...term, collation: 'NOCASE' }, identity], [{ ...term, collation: 'unicode' }, identity], [{ ...term, collation: null }, identity],
    [{ column: 0, nullsFirst: true }, identity], [{ column: 0, descending: false }, identity], [{ ...term, descending: 'false' }, identity],
    [{ ...term, nullsFirst: 1 }, identity], [term],
  ];
  let version = 1;
  for (const order of malformed) {
    model.receive(reset(valid, `e:${++version}`));
    assert.notEqual(model.order, null);
    const output = model.receive(reset(order, `e:${++version}`));
    assert.equal(output.type, 'reset', JSON.stringify(order));
    assert.equal(model.order, null, JSON.stringify(order));
    assert.equal(model.version, `e:${version}`);
    assert.equal(model.count, 3);
    assert.equal(model.row(2).id, 3);
    // The list goes on.
    model.receive({ sub: 1, type: 'changes', from: `e:${version}`, to: `e:${++version}`, deletes: [[0, 0]] });
    assert.equal(model.count, 2);
    assert.equal(model.row(0).id, 2);
  }
  model.receive(reset(valid, `e:${++version}`));
  assert.equal(model.order.length, 2);
  model.receive(reset(undefined, `e:${++version}`));
  assert.equal(model.order, null);
  // Extra fields of a term are ignored, as the protocol's fields are.
  model.receive(reset([{ ...term, weight: 3 }, identity], `e:${++version}`));
  assert.deepEqual(model.order[0], { column: 0, descending: false, nullsFirst: true, collation: 'binary' });
});
