// One connection per client (Web/livelist/connection.js): a page's lists and its mutator share one
// socket, one reconnect loop and one liveness watch, and a mutation's `mutated` names the versions
// of the lists on it, so that their pending rows go without a `sync`. Node's test runner:
// node --test Tests/Web/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Connection, LiveQuery, Mutator, OfflineStore } from '../../Web/livelist.js';
import { FakeSocket } from './support.mjs';

const url = 'ws://host/live';
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const tick = () => sleep(0);

/** Waits until `condition()` holds, for at most `ms`. */
async function until(condition, ms, what) {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`not within ${ms} ms: ${what}`);
    await sleep(5);
  }
}

/** Subscription `sub`'s reset at `version`: rows 1…count, one section, window [0, count). */
function reset(sub, version, count = 5) {
  return {
    sub, type: 'reset', version, reason: 'subscribed', columns: ['id', 'val'], sections: [[null, count]], window: [0, count],
    rows: Array.from({ length: count }, (_, i) => [i, i + 1, [i + 1, 10 * i]]),
  };
}

const types = (socket) => socket.sent.map((m) => [m.type, m.sub ?? m.id]);

test('Two lists and a mutator share one socket: a subscription number each, each message to its own list, the mutations and their answers on it', async () => {
  FakeSocket.sockets = [];
  const connection = new Connection(url, { WebSocket: FakeSocket, token: 't' });
  const inbox = new LiveQuery(connection, 'inbox');
  const outbox = new LiveQuery(connection, 'outbox');
  const mutator = new Mutator(connection, 'web-s');
  assert.equal(inbox.url, url);
  inbox.start();
  const archived = mutator.mutate('archive', { id: 1 });   // before the socket opens: sent once it does
  outbox.start();
  await tick();
  assert.equal(FakeSocket.sockets.length, 1, 'one socket for the two lists and the mutator');
  const socket = FakeSocket.sockets[0];
  assert.equal(socket.url, `${url}?access_token=t`);
  // The lists subscribe first, then the mutator sends what waits.
  assert.deepEqual(types(socket), [['subscribe', 1], ['subscribe', 2], ['mutate', 1]]);
  assert.deepEqual([socket.sent[0].query, socket.sent[1].query], ['inbox', 'outbox']);
  socket.serve(reset(1, 'a:1'));
  socket.serve(reset(2, 'b:7', 3));
  assert.deepEqual([inbox.state, inbox.model.version, inbox.model.count], ['live', 'a:1', 5]);
  assert.deepEqual([outbox.state, outbox.model.version, outbox.model.count], ['live', 'b:7', 3]);
  socket.serve({ sub: 2, type: 'changes', from: 'b:7', to: 'b:8', deletes: [[0, 0]] });
  assert.deepEqual([inbox.model.version, outbox.model.version, outbox.model.count], ['a:1', 'b:8', 2]);
  // The mutator's answer has no `sub`: the lists pass it by.
  socket.serve({ type: 'mutated', client: 'web-s', id: 1, versions: { 1: 'a:1', 2: 'b:8' }, duplicate: false });
  assert.equal((await archived).id, 1);
  const sent = mutator.mutate('send', {});
  assert.deepEqual(socket.sent.at(-1), { type: 'mutate', client: 'web-s', id: 2, name: 'send', arguments: {} });
  // A list that stops ends its subscription; the socket stays for the others.
  inbox.stop();
  assert.deepEqual(socket.sent.at(-1), { type: 'unsubscribe', sub: 1 });
  assert.equal(socket.closed, null);
  socket.serve({ sub: 1, type: 'changes', from: 'a:1', to: 'a:2', deletes: [[0, 0]] });
  assert.equal(inbox.model.version, 'a:1', 'a subscription given up hears nothing');
  // Started again: a new number on the same socket, resuming from the version held.
  inbox.start();
  assert.deepEqual(socket.sent.at(-1), { type: 'subscribe', sub: 3, query: 'inbox', arguments: {}, window: [0, 100], resume: { version: 'a:1', held: [0, 5] } });
  inbox.stop();
  outbox.stop();
  assert.equal(socket.closed, null, 'open while the mutator uses it');
  mutator.stop();
  await assert.rejects(sent);
  assert.equal(socket.closed, 1000, 'the last one closes it');
  assert.equal(FakeSocket.sockets.length, 1);
});

test('mutated names the versions of the lists on its connection: their pending rows go at once, without a sync; a list elsewhere, or left out, syncs', async () => {
  FakeSocket.sockets = [];
  const connection = new Connection(url, { WebSocket: FakeSocket });
  const shared = new LiveQuery(connection, 'inbox');
  const own = new LiveQuery(url, 'inbox', { WebSocket: FakeSocket });   // a connection of its own
  const mutator = new Mutator(connection, 'web-v');
  shared.start();
  own.start();
  await tick();
  const [socket, ownSocket] = FakeSocket.sockets;
  socket.serve(reset(1, 'e:1'));
  ownSocket.serve(reset(1, 'e:1'));
  const archived = mutator.mutate('archive', { id: 2 }, { effects: [{ list: shared, delete: { id: 2 } }, { list: own, delete: { id: 2 } }] });
  assert.deepEqual([shared.displayed.count, own.displayed.count], [4, 4]);
  // The commit reaches the shared list before the answer, on the same socket.
  socket.serve({ sub: 1, type: 'changes', from: 'e:1', to: 'e:2', deletes: [[0, 1]] });
  socket.serve({ type: 'mutated', client: 'web-v', id: 1, versions: { 1: 'e:2' }, duplicate: false });
  await archived;
  assert.equal(shared.pendingCount, 0, 'gone with the answer');
  assert.equal(shared.displayed.count, 4);
  assert.ok(!socket.sent.some((m) => m.type === 'sync'), 'no sync on the shared connection');
  // The list on its own connection holds the commit once its sync is answered.
  assert.equal(own.pendingCount, 1);
  const sync = ownSocket.sent.at(-1);
  assert.deepEqual(sync, { type: 'sync', sub: 1, id: sync.id });
  ownSocket.serve({ sub: 1, type: 'changes', from: 'e:1', to: 'e:2', deletes: [[0, 1]] });
  ownSocket.serve({ sub: 1, type: 'synced', id: sync.id, version: 'e:2' });
  await tick();
  assert.equal(own.pendingCount, 0);

  // A `mutated` that leaves the list out (its subscription moved or failed meanwhile), or names
  // another version than the one it holds: the list syncs.
  const sent = mutator.mutate('archive', { id: 3 }, { effects: [{ list: shared, delete: { id: 3 } }] });
  socket.serve({ type: 'mutated', client: 'web-v', id: 2, versions: {}, duplicate: false });
  await sent;
  assert.equal(shared.pendingCount, 1);
  const resync = socket.sent.at(-1);
  assert.deepEqual(resync, { type: 'sync', sub: 1, id: resync.id });
  socket.serve({ sub: 1, type: 'synced', id: resync.id, version: 'e:2' });
  await tick();
  assert.equal(shared.pendingCount, 0);
  const third = mutator.mutate('archive', { id: 4 }, { effects: [{ list: shared, delete: { id: 4 } }] });
  socket.serve({ type: 'mutated', client: 'web-v', id: 3, versions: { 1: 'e:9' }, duplicate: false });
  await third;
  assert.equal(shared.pendingCount, 1, 'the list is not at the version named');
  assert.equal(socket.sent.at(-1).type, 'sync');
  mutator.stop();
  shared.stop();
  own.stop();
});

test('A lost socket is made again once: every list resumes from its version and the mutator sends what waits, on the one new socket', async () => {
  FakeSocket.sockets = [];
  const connection = new Connection(url, { WebSocket: FakeSocket, backoff: [1, 1] });
  const inbox = new LiveQuery(connection, 'inbox');
  const outbox = new LiveQuery(connection, 'outbox');
  const mutator = new Mutator(connection, 'web-r');
  const states = [];
  inbox.onEvent = (event) => { if (event.type === 'state' || event.type === 'failure') states.push(event.type === 'state' ? event.state : 'failure'); };
  inbox.start();
  outbox.start();
  await tick();
  const first = FakeSocket.sockets[0];
  first.serve(reset(1, 'a:3'));
  first.serve(reset(2, 'b:4'));
  const archived = mutator.mutate('archive', { id: 5 }, { effects: [{ list: inbox, delete: { id: 5 } }] });
  assert.deepEqual(types(first).at(-1), ['mutate', 1]);
  first.drop();
  assert.deepEqual([inbox.state, outbox.state], ['reconnecting', 'reconnecting']);
  assert.match(inbox.failure.message, /connection lost: closed \(1006\)/);
  await until(() => FakeSocket.sockets.length === 2 && FakeSocket.sockets[1].sent.length === 3, 1_000, 'a new socket');
  await sleep(20);
  assert.equal(FakeSocket.sockets.length, 2, 'one reconnect loop, not one per user');
  const second = FakeSocket.sockets[1];
  assert.deepEqual(second.sent, [
    { type: 'subscribe', sub: 3, query: 'inbox', arguments: {}, window: [0, 100], resume: { version: 'a:3', held: [0, 5] } },
    { type: 'subscribe', sub: 4, query: 'outbox', arguments: {}, window: [0, 100], resume: { version: 'b:4', held: [0, 5] } },
    { type: 'mutate', client: 'web-r', id: 1, name: 'archive', arguments: { id: 5 } },
  ]);
  // What the old socket still delivers is ignored.
  first.serve({ sub: 1, type: 'changes', from: 'a:3', to: 'a:4' });
  first.serve({ type: 'mutated', client: 'web-r', id: 1, versions: {}, duplicate: false });
  assert.equal(inbox.model.version, 'a:3');
  assert.equal(mutator.pendingCount, 1);
  second.serve({ sub: 3, type: 'changes', from: 'a:3', to: 'a:5', deletes: [[0, 4]] });
  second.serve({ sub: 4, type: 'changes', from: 'b:4', to: 'b:4' });
  second.serve({ type: 'mutated', client: 'web-r', id: 1, versions: { 3: 'a:5', 4: 'b:4' }, duplicate: true });
  assert.equal((await archived).duplicate, true);
  assert.deepEqual([inbox.state, outbox.state, inbox.model.version, inbox.failure], ['live', 'live', 'a:5', null]);
  assert.equal(inbox.pendingCount, 0, 'covered by the answer on the new socket');
  assert.deepEqual(states, ['connecting', 'live', 'failure', 'reconnecting', 'live']);
  inbox.stop();
  outbox.stop();
  mutator.stop();
});

test('One liveness watch for the whole connection: one probe, and a silent socket dropped once for every list and the mutator', async () => {
  FakeSocket.sockets = [];
  const connection = new Connection(url, { WebSocket: FakeSocket, backoff: [1, 1], liveness: [40, 40] });
  const inbox = new LiveQuery(connection, 'inbox');
  const outbox = new LiveQuery(connection, 'outbox');
  const mutator = new Mutator(connection, 'web-w');
  inbox.start();
  outbox.start();
  mutator.start();
  await tick();
  const first = FakeSocket.sockets[0];
  first.serve(reset(1, 'a:1'));
  first.serve(reset(2, 'b:1'));
  await until(() => first.sent.some((m) => m.type === 'sync'), 1_000, 'a probe');
  assert.deepEqual(first.sent.filter((m) => m.type === 'sync').map((m) => m.sub), [0], 'one probe, for a number never opened');
  first.serve({ sub: 0, type: 'error', code: 'unknownSubscription', message: 'no subscription 0' });
  assert.deepEqual([inbox.state, inbox.failure], ['live', null], 'the probe\'s answer is no list\'s');
  await until(() => FakeSocket.sockets.length === 2, 1_000, 'a new socket after silence');
  assert.equal(first.closed, 1000);
  assert.match(outbox.failure.message, /no frame from the server/);
  await tick();
  assert.deepEqual(types(FakeSocket.sockets[1]), [['subscribe', 3], ['subscribe', 4]]);
  inbox.stop();
  outbox.stop();
  mutator.stop();
  const probes = FakeSocket.sockets[1].sent.length;
  await sleep(150);
  assert.equal(FakeSocket.sockets[1].sent.length, probes, 'closed: no probe');
});

test('A list refused on a shared connection leaves it to the others; a server behind drops it for all, and all come back on one new socket', async () => {
  FakeSocket.sockets = [];
  const connection = new Connection(url, { WebSocket: FakeSocket, backoff: [1, 1] });
  const nope = new LiveQuery(connection, 'nope');
  const inbox = new LiveQuery(connection, 'inbox');
  const mutator = new Mutator(connection, 'web-b');
  nope.start();
  inbox.start();
  await tick();
  const first = FakeSocket.sockets[0];
  first.serve({ sub: 1, type: 'error', code: 'unknownQuery', message: 'no published query "nope"' });
  assert.equal(nope.state, 'refused');
  assert.equal(first.closed, null, 'the socket stays for the others');
  first.serve(reset(2, 'e:5'));
  assert.equal(inbox.state, 'live');
  const answered = mutator.mutate('archive', { id: 1 });
  // The server has not reached the version a list resumes from: every user goes to a new socket.
  first.drop();
  await until(() => FakeSocket.sockets.length === 2 && FakeSocket.sockets[1].sent.length === 2, 1_000, 'a second socket');
  const second = FakeSocket.sockets[1];
  assert.deepEqual(types(second), [['subscribe', 3], ['mutate', 1]], 'the refused list stays refused');
  second.serve({ sub: 3, type: 'error', code: 'behind', message: 'this server has not reached e:5' });
  assert.equal(second.closed, 1000);
  await until(() => FakeSocket.sockets.length === 3 && FakeSocket.sockets[2].sent.length === 2, 1_000, 'a third socket');
  assert.deepEqual(types(FakeSocket.sockets[2]), [['subscribe', 4], ['mutate', 1]]);
  FakeSocket.sockets[2].serve({ type: 'mutated', client: 'web-b', id: 1, versions: {}, duplicate: false });
  await answered;
  // Its retry subscribes it again, on the socket open.
  nope.retry();
  assert.deepEqual(FakeSocket.sockets[2].sent.at(-1), { type: 'subscribe', sub: 5, query: 'nope', arguments: {}, window: [0, 100] });
  nope.stop();
  inbox.stop();
  mutator.stop();
  assert.equal(FakeSocket.sockets[2].closed, 1000);
});

test('OfflineStore.mutator on a shared connection sends on it, and keeps its state by the server\'s URL', async () => {
  FakeSocket.sockets = [];
  const items = new Map();
  const storage = { getItem: (key) => items.get(key) ?? null, setItem: (key, value) => { items.set(key, String(value)); } };
  const connection = new Connection(url, { WebSocket: FakeSocket });
  const live = new LiveQuery(connection, 'inbox');
  const mutator = new OfflineStore({ indexedDB: null, storage }).mutator(connection);
  assert.equal(mutator.connection, connection);
  live.start();
  const sent = mutator.mutate('archive', { id: 1 });
  await tick();
  assert.equal(FakeSocket.sockets.length, 1);
  assert.deepEqual(types(FakeSocket.sockets[0]), [['subscribe', 1], ['mutate', 1]]);
  assert.deepEqual(JSON.parse(items.get(`livelist.mutator ${url}`)).pending.map((m) => m.id), [1]);
  mutator.stop();
  await assert.rejects(sent);
  live.stop();
});
