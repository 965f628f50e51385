// A quiet connection is probed, and one that stays silent is dropped without waiting for its close.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LiveQuery, Mutator } from '../../Web/livelist.js';
import { FakeSocket } from './support.mjs';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function reset(version) {
  return { sub: 1, type: 'reset', version, reason: 'subscribed', columns: ['id'], sections: [[null, 2]], window: [0, 2], rows: [[0, 1, [1]], [1, 2, [2]]] };
}

/** Waits until `condition()` holds, for at most `ms`. */
async function until(condition, ms, what) {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`not within ${ms} ms: ${what}`);
    await sleep(5);
  }
}

test('A quiet live connection is probed with a sync for a number never opened; answered it stays, silent it is dropped and the query resumes on a new one without its close', async () => {
  FakeSocket.sockets = [];
  const live = new LiveQuery('ws://host/live', 'inbox', { WebSocket: FakeSocket, backoff: [1, 1], liveness: [60, 60] });
  live.start();
  await sleep(0);
  const first = FakeSocket.sockets[0];
  first.serve(reset('e:1'));
  assert.equal(live.state, 'live');
  // Quiet for 60 ms: one sync, for subscription 0, which the connection never opens.
  await until(() => first.sent.some((m) => m.type === 'sync'), 1_000, 'a probe');
  const probe = first.sent.find((m) => m.type === 'sync');
  assert.equal(probe.sub, 0);
  assert.equal(first.sent.filter((m) => m.type === 'sync').length, 1);
  first.serve({ sub: 0, type: 'error', code: 'unknownSubscription', message: 'no subscription 0' });
  // Answered: the connection stays; a later quiet spell is probed again.
  await until(() => first.sent.filter((m) => m.type === 'sync').length === 2, 1_000, 'a second probe');
  assert.equal(FakeSocket.sockets.length, 1);
  assert.equal(live.state, 'live');
  // Not answered: dropped, though the socket never reports its close, and a new one resumes.
  await until(() => FakeSocket.sockets.length === 2, 1_000, 'a new connection');
  assert.equal(first.closed, 1000);
  assert.match(live.failure.message, /no frame from the server/);
  const second = FakeSocket.sockets[1];
  await sleep(0);
  assert.equal(second.sent[0].type, 'subscribe');
  assert.deepEqual(second.sent[0].resume, { version: 'e:1', held: [0, 2] });
  // What the old socket still delivers is ignored.
  first.serve({ sub: 1, type: 'changes', from: 'e:1', to: 'e:2', deletes: [[0, 0]] });
  assert.equal(live.model.version, 'e:1');
  second.serve({ sub: 2, type: 'changes', from: 'e:1', to: 'e:2' });
  assert.equal(live.state, 'live');
  assert.equal(live.model.version, 'e:2');
  live.stop();
});

test('A connection whose subscription is never answered is dropped after both spells; liveness null never drops', async () => {
  FakeSocket.sockets = [];
  const live = new LiveQuery('ws://host/live', 'inbox', { WebSocket: FakeSocket, backoff: [1, 1], liveness: [30, 30] });
  live.start();
  await sleep(0);
  assert.equal(FakeSocket.sockets[0].sent[0].type, 'subscribe');
  await until(() => FakeSocket.sockets.length === 2, 1_000, 'a new connection');
  assert.deepEqual(FakeSocket.sockets[0].sent.filter((m) => m.type === 'sync').map((m) => m.sub), [0], 'one probe, not answered');
  assert.equal(FakeSocket.sockets[0].closed, 1000);
  live.stop();

  FakeSocket.sockets = [];
  const patient = new LiveQuery('ws://host/live', 'inbox', { WebSocket: FakeSocket, backoff: [1, 1], liveness: null });
  patient.start();
  await sleep(0);
  FakeSocket.sockets[0].serve(reset('e:1'));
  await sleep(150);
  assert.equal(FakeSocket.sockets.length, 1);
  assert.equal(FakeSocket.sockets[0].sent.filter((m) => m.type === 'sync').length, 0);
  assert.equal(FakeSocket.sockets[0].closed, null);
  patient.stop();
});

test('A server that is behind the version held: the query connects again at once, without waiting for the close', async () => {
  FakeSocket.sockets = [];
  const live = new LiveQuery('ws://host/live', 'inbox', { WebSocket: FakeSocket, backoff: [1, 1] });
  live.start();
  await sleep(0);
  FakeSocket.sockets[0].serve(reset('e:5'));
  FakeSocket.sockets[0].drop();
  await until(() => FakeSocket.sockets.length === 2, 1_000, 'a second connection');
  await sleep(0);
  const second = FakeSocket.sockets[1];
  second.serve({ sub: 2, type: 'error', code: 'behind', message: 'this server has not reached e:5' });
  assert.equal(second.closed, 1000);
  await until(() => FakeSocket.sockets.length === 3, 1_000, 'a third connection');
  live.stop();
});

/** A socket whose opening handshake is never answered (a server that accepted the connection and hangs). */
class SilentSocket extends FakeSocket {
  set onopen(handler) {}
  get onopen() { return undefined; }
}

test('A mutator whose handshake is never answered gives it up and connects again; the mutation is sent once a connection opens', async () => {
  FakeSocket.sockets = [];
  let Socket = SilentSocket;
  const mutator = new Mutator('ws://host/live', 'web-l', { WebSocket: class { constructor(url) { return new Socket(url); } }, backoff: [1, 1], connectTimeout: 30 });
  const answered = mutator.mutate('archive', { id: 3 });
  await until(() => FakeSocket.sockets.length >= 2, 1_000, 'a second attempt');
  assert.equal(FakeSocket.sockets[0].closed, 1000);
  assert.equal(FakeSocket.sockets[0].sent.length, 0);
  Socket = FakeSocket;
  const attempts = FakeSocket.sockets.length;
  await until(() => FakeSocket.sockets.length > attempts && FakeSocket.sockets.at(-1).sent.length === 1, 1_000, 'the mutation sent on an opened connection');
  const socket = FakeSocket.sockets.at(-1);
  assert.deepEqual(socket.sent.map((m) => [m.type, m.id, m.name]), [['mutate', 1, 'archive']]);
  socket.serve({ type: 'mutated', client: 'web-l', id: 1, versions: {}, duplicate: false });
  assert.equal((await answered).id, 1);
  // Connected and answered: no timer drops it later.
  await sleep(80);
  assert.equal(socket.closed, null);
  mutator.stop();
});

test('A mutator probes a quiet connection with a sync for a number it never opens; answered it stays, silent it is dropped and its mutations are sent again on a new one', async () => {
  FakeSocket.sockets = [];
  const mutator = new Mutator('ws://host/live', 'web-q', { WebSocket: FakeSocket, backoff: [1, 1], liveness: [60, 60] });
  const answered = mutator.mutate('archive', { id: 3 });
  await until(() => FakeSocket.sockets[0]?.sent.length === 1, 1_000, 'the mutation sent');
  const first = FakeSocket.sockets[0];
  // Quiet: one probe, for a subscription the mutator never opens; its error answer keeps the connection.
  await until(() => first.sent.some((m) => m.type === 'sync'), 1_000, 'a probe');
  const probe = first.sent.find((m) => m.type === 'sync');
  assert.equal(probe.sub, 0);
  assert.ok(!first.sent.some((m) => m.type === 'subscribe'));
  first.serve({ type: 'error', sub: 0, code: 'unknownSubscription', message: 'no subscription 0' });
  await until(() => first.sent.filter((m) => m.type === 'sync').length === 2, 1_000, 'a second probe');
  assert.equal(FakeSocket.sockets.length, 1);
  assert.equal(first.closed, null);
  // Silent: dropped without its close, and the mutation goes again, once, on a new connection.
  await until(() => FakeSocket.sockets.length === 2 && FakeSocket.sockets[1].sent.length > 0, 1_000, 'the mutation sent again');
  assert.equal(first.closed, 1000);
  const second = FakeSocket.sockets[1];
  assert.deepEqual(second.sent.map((m) => [m.type, m.id]), [['mutate', 1]]);
  // The old socket's late answer is ignored; the new one's resolves the call.
  first.serve({ type: 'mutated', client: 'web-q', id: 1, versions: {}, duplicate: false });
  assert.equal(mutator.pendingCount, 1);
  second.serve({ type: 'mutated', client: 'web-q', id: 1, versions: {}, duplicate: true });
  assert.equal((await answered).duplicate, true);
  assert.equal(mutator.pendingCount, 0);
  mutator.stop();
  // Stopped: no timer probes or drops anything.
  const sent = second.sent.length;
  await sleep(200);
  assert.equal(second.sent.length, sent);
  assert.equal(FakeSocket.sockets.length, 2);
});

test('A mutator with liveness null never probes nor drops a quiet connection', async () => {
  FakeSocket.sockets = [];
  const mutator = new Mutator('ws://host/live', 'web-r', { WebSocket: FakeSocket, backoff: [1, 1], liveness: null });
  const answered = mutator.mutate('archive', { id: 4 });
  await until(() => FakeSocket.sockets[0]?.sent.length === 1, 1_000, 'the mutation sent');
  await sleep(150);
  assert.equal(FakeSocket.sockets.length, 1);
  assert.deepEqual(FakeSocket.sockets[0].sent.map((m) => m.type), ['mutate']);
  FakeSocket.sockets[0].serve({ type: 'mutated', client: 'web-r', id: 1, versions: {}, duplicate: false });
  assert.equal((await answered).id, 1);
  mutator.stop();
});
