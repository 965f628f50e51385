// Offline persistence of Web/livelist.js — LiveQuery.snapshot/restore, staleSince, the resume
// from a restored list, Mutator.onPendingChange and the OfflineStore (over a fake IndexedDB and a
// fake Web Storage written here) — under Node's test runner: node --test Tests/Web/
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { ListModel, LiveQuery, Mutator, OfflineStore, Real, RestoreError, identityKey, sameArguments } from '../../Web/livelist.js';
import { FakeSocket } from './support.mjs';


/** Lets every queued callback run (microtasks, the fake IndexedDB's steps); not a timer, so it works under mocked timers. */
const settle = async () => { for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve)); };

const url = 'ws://host/live';
const columns = ['id', 'day', 'subject', 'data'];
const order = [{ column: 1, descending: true, nullsFirst: false }, { column: 2, descending: false, nullsFirst: true, collation: 'nocase' },
  { column: null, descending: false, nullsFirst: true }];
const big = { i: '9007199254740993' };

/**
 * A sectioned list of `count` rows (days 20, 19, 18…, 15 a day) as the server's reset at
 * `version`, with the rows of `window` and, when `extra`, rows past the window too (the model
 * keeps what a reset sends). Values of every class; the identity at position 15 beyond 2⁵³.
 */
function inboxReset(version, window, { count = 40, extra = 0, unloaded = [] } = {}) {
  const rows = [];
  for (let position = 0; position < count; position++) {
    const id = position === 15 ? big : position + 1;
    const day = 20 - Math.floor(position / 15);
    const data = [null, { f: 1.5 }, { f: '-inf' }, { b: 'AAEC' }, { i: '-9007199254740995' }][position % 5];
    rows.push([position, id, [id, day, `subject ${position} e\u0301 \u0000 😀`, data]]);
  }
  const sections = [];
  for (const [, , values] of rows) {
    if (sections.length === 0 || sections.at(-1)[0] !== values[1]) sections.push([values[1], 0]);
    sections.at(-1)[1] += 1;
  }
  return {
    sub: 1, type: 'reset', version, reason: 'subscribed', columns, sections, window: [window[0], window[1] - window[0]], order,
    rows: rows.filter(([p]) => p >= window[0] && p < window[1] + extra).map(([p, id, values]) => [p, id, unloaded.includes(p) ? null : values]),
  };
}

/** A live query of 'inbox' that received `reset`. */
async function liveList(reset, args = { sort: 'activity', n: big }, window = [reset.window[0], reset.window[0] + reset.window[1]]) {
  const live = new LiveQuery(url, 'inbox', { args, window, WebSocket: FakeSocket });
  live.start();
  await settle();
  const socket = FakeSocket.sockets.at(-1);
  socket.serve(reset);
  return { live, socket };
}

/** What a model holds, compared as plain data: version, counts, sections, columns, order, window, each row of the window. */
function held(model) {
  const rows = [];
  for (let position = model.window[0]; position < Math.min(model.window[1], model.count); position++) {
    const row = model.row(position);
    rows.push(row && { position, key: row.key, id: row.id, values: row.values });
  }
  return { version: model.version, count: model.count, keys: model.sections.keys, counts: model.sections.counts, columns: model.columns,
    order: model.order, window: model.window, rows };
}

test('snapshot → restore round trip: the restored model is the server\'s list exactly — version, counts, sections, order, the window\'s rows and values; pending effects and rows outside the window left out', async () => {
  FakeSocket.sockets = [];
  const reset = inboxReset('k3x9:41', [10, 22], { extra: 8, unloaded: [12] });
  const { live } = await liveList(reset);
  assert.equal(live.model.known.size, 20, 'the model holds rows past the window too');
  live.addPending('m', [{ delete: { id: 11 } }, { update: { id: 14, values: { subject: 'pending' } } }]);
  assert.equal(live.displayed.count, 39);
  const snapshot = live.snapshot();
  assert.equal(snapshot.query, 'inbox');
  assert.deepEqual(snapshot.args, { sort: 'activity', n: big });
  assert.ok(Math.abs(snapshot.savedAt - Date.now()) < 5000);
  const list = snapshot.list;
  assert.equal(list.type, 'reset');
  assert.equal(list.version, 'k3x9:41');
  assert.deepEqual(list.sections, [[20, 15], [19, 15], [18, 10]], 'the server\'s counts, not the displayed ones');
  assert.deepEqual(list.window, [10, 12]);
  assert.deepEqual(list.rows.map(([p]) => p), [10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21], 'the window\'s rows only');
  assert.deepEqual(list.rows[2], [12, 13, null], 'a row held without values is sent without them');
  assert.deepEqual(list.rows[3], reset.rows[3], 'no pending values');
  assert.deepEqual(list.order, order.map((term) => ({ collation: 'binary', ...term })));
  // Exactly the JSON the server sent, value for value (an integer beyond 2⁵³, reals, bytes, text).
  for (const row of list.rows) assert.deepEqual(row, reset.rows.find(([p]) => p === row[0]));

  // Through its JSON text, into a query whose arguments are the same (in another order).
  const text = JSON.stringify(snapshot);
  const again = new LiveQuery(url, 'inbox', { args: { n: { i: '9007199254740993' }, sort: 'activity' }, WebSocket: FakeSocket });
  again.restore(text);
  const expected = held(live.model);
  assert.deepEqual(held(again.model), expected);
  assert.equal(again.model.count, 40);
  assert.equal(typeof again.model.row(15).id, 'bigint');
  assert.equal(typeof again.model.row(14).values[3], 'bigint');
  assert.ok(again.model.row(11).values[3] instanceof Real);
  assert.ok(again.model.row(13).values[3] instanceof Uint8Array);
  assert.equal(again.model.row(12).values, null);
  assert.equal(again.displayed.count, 40, 'no pending effects restored');
  assert.deepEqual(again.snapshot(), { ...snapshot, args: { n: big, sort: 'activity' } }, 'a snapshot of the restored list is the same snapshot, saved when it was');
  live.stop();
});

test('restore refuses, and changes nothing: started, another query, other arguments (exact value equality), a damaged snapshot', async () => {
  FakeSocket.sockets = [];
  const { live: source } = await liveList(inboxReset('e:7', [0, 10]), { sort: 'activity', text: 'e\u0301', n: 5 });
  const snapshot = source.snapshot();
  source.stop();
  const fresh = (args = { sort: 'activity', text: 'e\u0301', n: 5 }, query = 'inbox') => {
    const live = new LiveQuery(url, query, { args, WebSocket: FakeSocket });
    live.events = [];
    live.onEvent = (event) => live.events.push(event);
    return live;
  };
  const refused = (live, given, code) => {
    assert.throws(() => live.restore(given), (error) => error instanceof RestoreError && error.code === code, code);
    assert.equal(live.model.version, null);
    assert.equal(live.staleSince, null);
    assert.equal(live.snapshot(), null);
    assert.deepEqual(live.events, []);
  };
  // Started, or holding a list already.
  const started = fresh();
  started.start();
  started.events = [];
  refused(started, snapshot, 'started');
  started.stop();
  const twice = fresh();
  twice.restore(snapshot);
  assert.throws(() => twice.restore(snapshot), (error) => error.code === 'started');
  // Another query; other arguments, compared exactly.
  refused(fresh(undefined, 'outbox'), snapshot, 'otherQuery');
  refused(fresh({ sort: 'sender', text: 'e\u0301', n: 5 }), snapshot, 'otherArguments');
  refused(fresh({ sort: 'activity', text: '\u00e9', n: 5 }), snapshot, 'otherArguments');        // never normalized
  refused(fresh({ sort: 'activity', text: 'e\u0301', n: { f: 5 } }), snapshot, 'otherArguments'); // a real is not an integer
  refused(fresh({ sort: 'activity', text: 'e\u0301' }), snapshot, 'otherArguments');
  refused(fresh({ sort: 'activity', text: 'e\u0301', n: 5, folder: null }), snapshot, 'otherArguments');
  assert.ok(sameArguments({ n: 5, text: 'e\u0301', sort: 'activity' }, snapshot.args));
  assert.ok(sameArguments({ n: { i: '5' } }, { n: 5 }), 'the same integer, however written');
  assert.ok(sameArguments({ n: big }, { n: { i: '9007199254740993' } }));
  assert.ok(!sameArguments({ n: big }, { n: { i: '9007199254740992' } }));
  assert.ok(!sameArguments({ n: { b: 'AAEC' } }, { n: { b: 'AAED' } }));
  // Damaged: not JSON, parts missing, a list that is not a reset the model takes.
  const damaged = (change) => { const copy = structuredClone(snapshot); change(copy); return copy; };
  refused(fresh(), '{"query":"inbox","args":', 'damaged');
  refused(fresh(), JSON.stringify(snapshot).slice(0, -10), 'damaged');
  refused(fresh(), 'null', 'damaged');
  refused(fresh(), damaged((s) => { delete s.list; }), 'damaged');
  refused(fresh(), damaged((s) => { s.savedAt = 'yesterday'; }), 'damaged');
  refused(fresh(), damaged((s) => { s.list.type = 'changes'; }), 'damaged');
  refused(fresh(), damaged((s) => { s.list.version = 'not a version'; }), 'damaged');
  refused(fresh(), damaged((s) => { s.list.sections = [[20, -1]]; }), 'damaged');
  refused(fresh(), damaged((s) => { s.list.window = [0]; }), 'damaged');
  refused(fresh(), damaged((s) => { s.list.rows[2] = [2, 3]; }), 'damaged');
  refused(fresh(), damaged((s) => { s.list.rows[2][2][3] = { f: 'nan' }; }), 'damaged');
  refused(fresh(), damaged((s) => { s.list.columns = [1, 2]; }), 'damaged');
  // The same query, untouched by the refusals, takes the good snapshot.
  const good = fresh();
  for (const bad of ['{', damaged((s) => { s.list.type = 'rows'; })]) assert.throws(() => good.restore(bad), RestoreError);
  good.restore(snapshot);
  assert.equal(good.model.version, 'e:7');
});

test('A restored list is shown at once, stale since it was saved, and resumes from its version and window: staleSince cleared by the first server message applied', async () => {
  FakeSocket.sockets = [];
  const { live: source } = await liveList(inboxReset('k3x9:41', [20, 30]));
  const snapshot = source.snapshot();
  source.stop();
  const savedAt = snapshot.savedAt - 3_600_000;   // an hour ago
  const live = new LiveQuery(url, 'inbox', { args: { sort: 'activity', n: big }, window: [0, 100], WebSocket: FakeSocket, backoff: [10_000, 10_000] });
  const events = [];
  live.onEvent = (event) => events.push(event);
  const observed = [];
  const stop = live.observe((event) => observed.push(event.type));
  live.restore({ ...snapshot, savedAt });
  assert.equal(live.staleSince, savedAt);
  assert.deepEqual(events.map((event) => [event.type, event.restored]), [['reset', true]], 'a reset event: the view draws it at once');
  assert.deepEqual(observed, ['reset']);
  assert.equal(live.displayed.count, 40);
  assert.equal(live.displayed.row(20).id, 21);
  assert.equal(live.displayed.row(20).values[2], snapshot.list.rows[0][2][2]);
  assert.equal(live.resetsReceived, 0, 'a restored list is not a reset the server sent');
  assert.equal(live.state, 'idle');

  live.start();
  await settle();
  const first = FakeSocket.sockets.at(-1);
  assert.deepEqual(first.sent[0], { type: 'subscribe', sub: 1, query: 'inbox', arguments: { sort: 'activity', n: big }, window: [20, 10],
    resume: { version: 'k3x9:41', held: [20, 10] } });
  assert.equal(live.staleSince, savedAt, 'connected is not answered');
  first.drop();
  assert.equal(live.staleSince, savedAt, 'still the snapshot');
  live.retry();
  await settle();
  const second = FakeSocket.sockets.at(-1);
  assert.deepEqual(second.sent[0].resume, { version: 'k3x9:41', held: [20, 10] });
  // An error that answers the subscription does not bring the list up to date.
  second.serve({ sub: 2, type: 'error', code: 'queryFailed', message: 'busy' });
  assert.equal(live.staleSince, savedAt);
  // The server's one changeset from the snapshot's version: applied, no longer stale.
  const before = events.length;
  second.serve({ sub: 2, type: 'changes', from: 'k3x9:41', to: 'k3x9:44', deletes: [[1, 6]], rows: [[29, 31, [31, 19, 'x', null]]] });
  assert.equal(live.staleSince, null);
  assert.equal(live.model.version, 'k3x9:44');
  assert.equal(live.model.count, 39);
  assert.equal(live.model.row(29).id, 31);
  assert.equal(live.resetsReceived, 0);
  assert.deepEqual(events.slice(before).map((event) => event.type).sort(), ['changes', 'recovered', 'stale', 'state']);
  assert.equal(live.snapshot().savedAt >= Date.now() - 5000, true, 'saved now, once live');
  stop();
  second.serve({ sub: 2, type: 'changes', from: 'k3x9:44', to: 'k3x9:45' });
  assert.deepEqual(observed.filter((type) => type === 'changes').length, 1, 'observe stops when told');
  live.stop();
});

test('Mutator.onPendingChange is told synchronously after numbering and before sending, and after each answer', async () => {
  FakeSocket.sockets = [];
  const mutator = new Mutator(url, 'web-9', { WebSocket: FakeSocket, nextId: 5 });
  const seen = [];
  mutator.onPendingChange = () => seen.push({ nextId: mutator.nextId, pending: mutator.pendingMutations.map((m) => m.id),
    sent: FakeSocket.sockets.at(-1)?.sent.map((m) => m.id) ?? null });
  const first = mutator.mutate('archive', { id: 1 });
  assert.deepEqual(seen, [{ nextId: 6, pending: [5], sent: null }], 'before any socket');
  await settle();
  const socket = FakeSocket.sockets.at(-1);
  assert.deepEqual(socket.sent.map((m) => m.id), [5]);
  const second = mutator.mutate('archive', { id: 2 });
  assert.deepEqual(seen.at(-1), { nextId: 7, pending: [5, 6], sent: [5] }, 'told before the send on an open connection');
  assert.deepEqual(socket.sent.map((m) => m.id), [5, 6]);
  socket.serve({ type: 'mutated', client: 'web-9', id: 5, versions: {}, duplicate: false });
  assert.deepEqual(seen.at(-1).pending, [6]);
  socket.serve({ type: 'error', mutation: { client: 'web-9', id: 6 }, code: 'conflict', message: 'gone' });
  assert.deepEqual(seen.at(-1).pending, []);
  // A busy answer changes nothing kept: not told.
  const third = mutator.mutate('archive', { id: 3 });
  const told = seen.length;
  socket.serve({ type: 'error', mutation: { client: 'web-9', id: 7 }, code: 'mutationUnavailable', message: 'busy' });
  assert.equal(seen.length, told);
  await first;
  await assert.rejects(second);
  mutator.stop();
  await assert.rejects(third);
});

// ---------------------------------------------------------------------------------------------
// A fake IndexedDB: what OfflineStore uses of it (open with an upgrade, one object store with a
// key path, readonly get and readwrite put in transactions that complete, abort or error). Its
// data is the "disk": a readwrite transaction's puts are visible once it completes, and a test can
// hold completions to see how many writes are under way.

class FakeIndexedDB {
  constructor() {
    this.databases = new Map();
    this.holdWrites = false;
    this.held = [];            // completions waiting for release()
    this.active = 0;           // readwrite transactions under way
    this.maxActive = 0;
    this.commits = [];         // the records of each committed write
    this.failWrites = false;
  }
  open(name, version) {
    const request = { result: null, error: null };
    setImmediate(() => {
      if (!this.databases.has(name)) this.databases.set(name, { version: 0, stores: new Map() });
      const database = this.databases.get(name);
      request.result = new FakeConnection(this, database);
      if (database.version < version) {
        database.version = version;
        request.onupgradeneeded?.({ oldVersion: 0, newVersion: version });
      }
      request.onsuccess?.({});
    });
    return request;
  }
  release() { this.held.shift()?.(); }
  records(name, store = 'lists') { return this.databases.get(name)?.stores.get(store)?.records ?? new Map(); }
}

class FakeConnection {
  constructor(factory, database) { this.factory = factory; this.database = database; this.closed = false; }
  get objectStoreNames() { return { contains: (name) => this.database.stores.has(name) }; }
  createObjectStore(name, { keyPath }) { this.database.stores.set(name, { keyPath, records: new Map() }); }
  transaction(names, mode) {
    if (this.closed) throw new Error('InvalidStateError: the connection is closed');
    return new FakeTransaction(this, mode);
  }
  close() { this.closed = true; }
}

class FakeTransaction {
  constructor(connection, mode) {
    this.connection = connection;
    this.mode = mode;
    this.steps = [];
    this.error = null;
    setImmediate(() => this.#run());   // once the caller has made its requests
  }
  objectStore(name) {
    const store = this.connection.database.stores.get(name);
    return {
      get: (key) => {
        const request = {};
        this.steps.push(() => { request.result = structuredClone(store.records.get(key)); });
        return request;
      },
      put: (value) => {
        if (this.mode !== 'readwrite') throw new Error('ReadOnlyError');
        const copy = structuredClone(value);
        this.steps.push(() => store.records.set(copy[store.keyPath], copy));
        return {};
      },
    };
  }
  #run() {
    const factory = this.connection.factory;
    if (this.mode === 'readonly') {
      for (const step of this.steps) step();
      this.oncomplete?.();
      return;
    }
    factory.active += 1;
    factory.maxActive = Math.max(factory.maxActive, factory.active);
    const finish = () => {
      factory.active -= 1;
      if (factory.failWrites) {
        this.error = new Error('QuotaExceededError');
        this.onabort?.();
        return;
      }
      for (const step of this.steps) step();
      factory.commits.push(this.steps.length);
      this.oncomplete?.();
    };
    if (factory.holdWrites) factory.held.push(finish); else setImmediate(finish);
  }
}

/** Web Storage in memory (getItem, setItem), with a write log. */
class FakeStorage {
  constructor() { this.items = new Map(); this.writes = []; }
  getItem(key) { return this.items.has(key) ? this.items.get(key) : null; }
  setItem(key, value) { this.items.set(key, String(value)); this.writes.push(key); }
}

test('OfflineStore: nothing saved at first; a change is written once after the delay, changes meanwhile with it; one write at a time; a reload restores the last write', async (t) => {
  mock.timers.enable({ apis: ['setTimeout'] });
  t.after(() => mock.timers.reset());
  FakeSocket.sockets = [];
  const disk = new FakeIndexedDB();
  const store = new OfflineStore({ indexedDB: disk, storage: new FakeStorage() });
  await assert.rejects(store.keep(new LiveQuery(url, 'inbox'), 'inbox'), /open the store first/);
  const opened = store.open('test-db');
  await settle();
  assert.equal(await opened, store);
  const live = new LiveQuery(url, 'inbox', { args: { sort: 'activity' }, window: [0, 10], WebSocket: FakeSocket });
  const kept = store.keep(live, 'inbox');
  await settle();
  assert.deepEqual(await kept, { nothingSaved: true });
  assert.equal(live.staleSince, null);
  live.start();
  await settle();
  const socket = FakeSocket.sockets.at(-1);
  socket.serve(inboxReset('e:1', [0, 10]));
  socket.serve({ sub: 1, type: 'changes', from: 'e:1', to: 'e:2', deletes: [[0, 0]] });
  socket.serve({ sub: 1, type: 'changes', from: 'e:2', to: 'e:3', deletes: [[0, 0]] });
  mock.timers.tick(OfflineStore.saveDelay - 1);
  await settle();
  assert.equal(disk.commits.length + disk.active, 0, 'nothing written before the delay');
  mock.timers.tick(1);
  await settle();
  assert.deepEqual(disk.commits, [1], 'one write of the one list');
  const saved = JSON.parse(disk.records('test-db').get('inbox').snapshot);
  assert.equal(saved.list.version, 'e:3', 'the list as it stood when written');
  assert.deepEqual(saved.list.rows.map(([p]) => p), [0, 1, 2, 3, 4, 5, 6, 7], 'the window\'s rows held (two slid in without being sent)');
  assert.deepEqual(await (async () => { const value = store.saved('inbox'); await settle(); return value; })(), saved);

  // One write at a time: a change during a write is written after it, with the changes since.
  disk.holdWrites = true;
  socket.serve({ sub: 1, type: 'changes', from: 'e:3', to: 'e:4', deletes: [[0, 0]] });
  mock.timers.tick(OfflineStore.saveDelay);
  await settle();
  assert.equal(disk.active, 1);
  socket.serve({ sub: 1, type: 'changes', from: 'e:4', to: 'e:5', deletes: [[0, 0]] });
  mock.timers.tick(OfflineStore.saveDelay * 4);
  await settle();
  assert.equal(disk.active, 1, 'no second write while the first is under way');
  socket.serve({ sub: 1, type: 'changes', from: 'e:5', to: 'e:6', deletes: [[0, 0]] });
  disk.release();
  await settle();
  assert.equal(JSON.parse(disk.records('test-db').get('inbox').snapshot).list.version, 'e:4');
  assert.equal(disk.active, 0, 'the next write waits for its delay');
  mock.timers.tick(OfflineStore.saveDelay);
  await settle();
  assert.equal(disk.active, 1);
  disk.release();
  await settle();
  assert.equal(disk.maxActive, 1);
  assert.equal(JSON.parse(disk.records('test-db').get('inbox').snapshot).list.version, 'e:6', 'the changes made during the write, written after it');
  disk.holdWrites = false;

  // saveNow writes at once, and a failed write is told.
  socket.serve({ sub: 1, type: 'changes', from: 'e:6', to: 'e:7', deletes: [[0, 0]] });
  const now = store.saveNow();
  await settle();
  await now;
  assert.equal(JSON.parse(disk.records('test-db').get('inbox').snapshot).list.version, 'e:7');
  mock.timers.tick(OfflineStore.saveDelay);
  await settle();
  const writes = disk.commits.length;
  assert.equal(store.writes, writes, 'the pending timer found nothing left to write');
  disk.failWrites = true;
  const failing = assert.rejects(store.saveNow(), /QuotaExceeded/);
  await settle();
  await failing;
  assert.match(String(store.lastSaveError), /QuotaExceeded/);
  disk.failWrites = false;
  live.stop();
  store.close();

  // A reload: a new store over the same disk shows the last list written, and resumes from it.
  const reloaded = new OfflineStore({ indexedDB: disk, storage: new FakeStorage() });
  const opening = reloaded.open('test-db');
  await settle();
  await opening;
  const again = new LiveQuery(url, 'inbox', { args: { sort: 'activity' }, WebSocket: FakeSocket });
  const restored = reloaded.keep(again, 'inbox');
  await settle();
  const outcome = await restored;
  assert.deepEqual(Object.keys(outcome), ['restored']);
  assert.equal(outcome.restored, again.staleSince);
  assert.equal(again.model.version, 'e:7');
  assert.equal(again.model.count, 34);
  mock.timers.tick(OfflineStore.saveDelay);
  await settle();
  assert.equal(reloaded.writes, 0, 'showing the list written is not a change to write');
  again.start();
  await settle();
  assert.deepEqual(FakeSocket.sockets.at(-1).sent[0].resume, { version: 'e:7', held: [0, 4] }, 'the rows it holds: six slid out, none sent in');
  FakeSocket.sockets.at(-1).serve({ sub: 1, type: 'changes', from: 'e:7', to: 'e:8' });
  assert.equal(again.staleSince, null);
  again.stop();

  // Other arguments, or a damaged record: not shown, and replaced by this list's at the next write.
  const other = new LiveQuery(url, 'inbox', { args: { sort: 'sender' }, WebSocket: FakeSocket });
  const refused = reloaded.keep(other, 'inbox');
  await settle();
  assert.deepEqual(await refused, { notRestored: 'otherArguments' });
  assert.equal(other.model.version, null);
  disk.records('test-db').set('broken', { key: 'broken', query: 'inbox', savedAt: 0, snapshot: '{"query":"inbox","args":{},"list":{"type":"reset"' });
  const broken = reloaded.keep(new LiveQuery(url, 'inbox', { WebSocket: FakeSocket }), 'broken');
  await settle();
  assert.deepEqual(await broken, { notRestored: 'damaged' });
  other.start();
  await settle();
  FakeSocket.sockets.at(-1).serve({ ...inboxReset('f:1', [0, 5]), sub: 1 });
  mock.timers.tick(OfflineStore.saveDelay);
  await settle();
  assert.deepEqual(JSON.parse(disk.records('test-db').get('inbox').snapshot).args, { sort: 'sender' });
  other.stop();
  reloaded.close();
});

test('OfflineStore.mutator: the client name, next number and pending mutations are in storage before each send, and a reload numbers on from them', async () => {
  FakeSocket.sockets = [];
  const storage = new FakeStorage();
  const store = new OfflineStore({ indexedDB: null, storage });
  const mutator = store.mutator(url, { WebSocket: FakeSocket });
  const item = `livelist.mutator ${url}`;
  const kept = () => JSON.parse(storage.getItem(item));
  assert.match(mutator.client, /^web-/);
  assert.deepEqual(kept(), { client: mutator.client, nextId: 1, pending: [], effects: [] }, 'the name kept before anything is numbered');
  // Written before the send: the socket has sent nothing when the storage already holds it.
  const sends = [];
  const realSetItem = storage.setItem.bind(storage);
  storage.setItem = (key, value) => { sends.push(FakeSocket.sockets.at(-1)?.sent.length ?? 0); realSetItem(key, value); };
  const first = mutator.mutate('archive', { id: 1 });
  assert.deepEqual(kept().pending.map((m) => [m.id, m.name]), [[1, 'archive']]);
  assert.equal(kept().nextId, 2);
  await settle();
  const socket = FakeSocket.sockets.at(-1);
  const second = mutator.mutate('send', { subject: 'é' });
  assert.deepEqual(sends, [0, 1], 'each write before its mutation went out');
  assert.deepEqual(kept().pending.map((m) => m.id), [1, 2]);
  socket.serve({ type: 'mutated', client: mutator.client, id: 1, versions: {}, duplicate: false });
  await first;
  assert.deepEqual(kept().pending.map((m) => m.id), [2]);
  mutator.stop();
  await assert.rejects(second);

  // A reload: the same name, numbering on, the mutation left pending sent first.
  const reloaded = new OfflineStore({ storage }).mutator(url, { WebSocket: FakeSocket });
  assert.equal(reloaded.client, mutator.client);
  assert.equal(reloaded.nextId, 3);
  assert.deepEqual(reloaded.pendingMutations.map((m) => [m.id, m.name, m.arguments]), [[2, 'send', { subject: 'é' }]]);
  const third = reloaded.mutate('archive', { id: 9 });
  await settle();
  assert.deepEqual(FakeSocket.sockets.at(-1).sent.map((m) => m.id), [2, 3]);
  reloaded.stop();
  await assert.rejects(third);
  // Another URL is another client; a kept state that cannot be read is never numbered on.
  assert.notEqual(new OfflineStore({ storage }).mutator('ws://other/live').client, mutator.client);
  storage.setItem(item, JSON.stringify({ client: mutator.client, nextId: 'three', pending: [] }));
  const fresh = new OfflineStore({ storage }).mutator(url);
  assert.notEqual(fresh.client, mutator.client);
  assert.equal(fresh.nextId, 1);
  storage.setItem(item, '{"client":');
  assert.notEqual(new OfflineStore({ storage }).mutator(url).client, mutator.client);
  // Bounded by the mutator: past Mutator.maximumPending, mutate refuses and nothing more is kept.
  const bounded = new OfflineStore({ storage: new FakeStorage() });
  const many = bounded.mutator('ws://many/live', { WebSocket: class { constructor() { this.sent = []; } send() {} close() {} } });
  const calls = [];
  for (let i = 0; i < Mutator.maximumPending; i++) calls.push(many.mutate('archive', { id: i }).catch(() => {}));
  await assert.rejects(many.mutate('archive', { id: -1 }), (error) => error.code === 'tooManyPending');
  assert.equal(JSON.parse(bounded.storage.getItem('livelist.mutator ws://many/live')).pending.length, Mutator.maximumPending);
  many.stop();
  await Promise.all(calls);
});

test('ListModel.heldList is null before the first state', () => {
  assert.equal(new ListModel().heldList(), null);
  assert.equal(new LiveQuery(url, 'inbox', { WebSocket: FakeSocket }).snapshot(), null);
});

// ---------------------------------------------------------------------------------------------
// A pending mutation's rows across page loads: its effects kept with its number in Web Storage.

/** A store over `disk` and `storage`, open. */
async function openStore(disk, storage) {
  const store = new OfflineStore({ indexedDB: disk, storage });
  const opening = store.open('rows-db');
  await settle();
  await opening;
  return store;
}

/** `store.keep(live, key)`'s outcome. */
async function kept(store, live, key) {
  const outcome = store.keep(live, key);
  await settle();
  return outcome;
}

/** A mutator's effects without their lists (compared exactly: -0, Real and integer, BigInt, bytes). */
const effectsOf = (mutator, id) => mutator.effects(id).map(({ list, ...effect }) => effect);

test('OfflineStore.mutator writes each new mutation\'s effects on the kept lists with its number, in the same write; a reload shows them before any connection, value for value; they go with the answer', async () => {
  FakeSocket.sockets = [];
  const disk = new FakeIndexedDB(), storage = new FakeStorage();
  const item = `rows-db.mutator ${url}`;
  const stored = () => JSON.parse(storage.getItem(item));
  const store = await openStore(disk, storage);
  const live = new LiveQuery(url, 'inbox', { args: { sort: 'activity' }, window: [0, 40], WebSocket: FakeSocket });
  assert.deepEqual(await kept(store, live, 'inbox'), { nothingSaved: true });
  live.start();
  await settle();
  FakeSocket.sockets.at(-1).serve(inboxReset('e:1', [0, 40]));
  const elsewhere = new LiveQuery(url, 'outbox', { WebSocket: FakeSocket });   // not kept
  const mutator = store.mutator(url, { WebSocket: FakeSocket });
  // Every value class: integers (within 2⁵³ and beyond), reals (−0, 1.0, the infinities), text
  // with NUL and a combining mark, bytes, null; every kind of change and placement.
  const values = [
    { list: live, insert: { id: 9007199254740995n, values: { id: 9007199254740995n, day: 20, subject: 'e\u0301\u0000 😀', data: new Uint8Array([0, 1, 2, 255]) }, placement: { first: 20 } } },
    { list: live, insert: { id: 'n\u0000ul', values: { day: 19, subject: 'b', data: new Real(-0) }, placement: { last: 19 } } },
    { list: live, insert: { id: 5000, values: { day: 18, subject: 'a', data: 1 } } },
    { list: elsewhere, delete: { id: 1 } },
    { list: live, update: { id: 2, values: { subject: null, data: new Real(Infinity) } } },
    { list: live, update: { id: 3, values: { data: new Real(-Infinity) } } },
    { list: live, update: { id: 4, values: { data: new Real(1), day: -9007199254740993n } } },
    { list: live, delete: { id: { i: '9007199254740993' } } },
  ];
  const sockets = FakeSocket.sockets.length;
  const writes = storage.writes.length;
  const first = mutator.mutate('compose', { n: 1 }, { effects: values });
  // One write, before anything is sent, holding the number, the mutation and its effects on the kept list.
  assert.equal(storage.writes.length, writes + 1);
  assert.deepEqual(FakeSocket.sockets.slice(sockets).flatMap((socket) => socket.sent), [], 'nothing sent yet');
  assert.deepEqual(stored().pending.map((m) => m.id), [1]);
  assert.deepEqual(stored().effects.map((e) => [e.mutation, e.list]), Array(7).fill([1, 'inbox']), 'not the list kept nowhere');
  assert.deepEqual(stored().effects[0].insert.id, { i: '9007199254740995' });
  assert.deepEqual(stored().effects[1].insert.values.data, { f: -0 });
  assert.deepEqual(stored().effects[3].update.values.data, { f: 'inf' });
  assert.deepEqual(stored().effects[0].insert.values.data, { b: 'AAEC/w==' });
  assert.equal(stored().effects[0].insert.values.subject, 'e\u0301\u0000 😀');
  const second = mutator.mutate('archive', { id: 6 }, { effects: [{ list: live, delete: { id: 6 } }] });
  assert.deepEqual(stored().effects.map((e) => e.mutation), [1, 1, 1, 1, 1, 1, 1, 2]);
  const shown = live.displayed;
  assert.equal(mutator.effects(1).length, 8);
  const onInbox = (id) => mutator.effects(id).filter(({ list }) => list === live).map(({ list, ...effect }) => effect);
  const expected = [onInbox(1), onInbox(2)];
  assert.equal(expected[0].length, 7);
  mutator.stop();
  await Promise.allSettled([first, second]);
  await store.saveNow();
  live.stop();
  store.close();

  // A reload: the list kept first, then the mutator — the rows pending again before any connection.
  const reloaded = await openStore(disk, storage);
  const again = new LiveQuery(url, 'inbox', { args: { sort: 'activity' }, window: [0, 40], WebSocket: FakeSocket });
  assert.ok('restored' in await kept(reloaded, again, 'inbox'));
  const before = FakeSocket.sockets.length;
  const restored = reloaded.mutator(url, { WebSocket: FakeSocket });
  assert.equal(reloaded.unreadableChanges, 0);
  assert.deepEqual(restored.pendingMutations.map((m) => m.id), [1, 2]);
  assert.deepEqual([effectsOf(restored, 1), effectsOf(restored, 2)], expected, 'every value as it was, exactly');
  assert.ok(restored.effects(1).every(({ list }) => list === again));
  assert.ok(Object.is(effectsOf(restored, 1)[1].insert.values.data.value, -0));
  assert.equal(FakeSocket.sockets.length, before, 'no connection');
  assert.equal(again.pendingCount, 2);
  assert.equal(again.displayed.count, 40 + 3 - 2, 'three inserts shown, two rows deleted');
  assert.equal(again.displayed.count, shown.count);
  for (let position = 0; position < shown.count; position++) {
    const [a, b] = [shown.row(position), again.displayed.row(position)];
    assert.deepEqual(b && [b.key, b.values, b.pending], a && [a.key, a.values, a.pending], `row ${position}`);
  }
  const inserted = again.displayed.row(again.displayed.positionOf(identityKey(9007199254740995n)));
  assert.deepEqual([inserted.id, inserted.pending], [9007199254740995n, true]);
  assert.deepEqual(['n\u0000ul', 5000].map((id) => again.displayed.row(again.displayed.positionOf(identityKey(id))).pending), [true, true]);
  assert.equal(again.displayed.positionOf(identityKey('n\u0000ul')), 29, 'last of the second section');
  assert.equal(again.displayed.row(0).id, 2, 'a NULL subject first in its section (NULLs first)');
  assert.ok(again.displayed.row(0).pending);
  assert.equal(again.displayed.positionOf(identityKey(6)), null);
  assert.deepEqual(stored().effects.map((e) => e.mutation), [1, 1, 1, 1, 1, 1, 1, 2], 'written again as they were');

  // Answered: 2 refused (gone at once, from the list and the storage), 1 applied (gone from the
  // storage with its answer, from the list once it has synced).
  again.start();
  await settle();
  const listSocket = FakeSocket.sockets.at(-1);
  listSocket.serve({ sub: 1, type: 'changes', from: listSocket.sent[0].resume.version, to: 'e:2' });
  restored.start();
  await settle();
  const mutations = FakeSocket.sockets.at(-1);
  assert.deepEqual(mutations.sent.map((m) => m.id), [1, 2]);
  mutations.serve({ type: 'error', mutation: { client: restored.client, id: 2 }, code: 'conflict', message: 'gone' });
  assert.equal(again.pendingCount, 1);
  assert.notEqual(again.displayed.positionOf(identityKey(6)), null);
  assert.deepEqual(stored().effects.map((e) => e.mutation), [1, 1, 1, 1, 1, 1, 1]);
  mutations.serve({ type: 'mutated', client: restored.client, id: 1, versions: {}, duplicate: false });
  assert.deepEqual(stored().pending, []);
  assert.deepEqual(stored().effects, []);
  assert.equal(again.pendingCount, 1, 'until the list has synced');
  const sync = listSocket.sent.at(-1);
  assert.equal(sync.type, 'sync');
  listSocket.serve({ sub: 1, type: 'synced', id: sync.id, version: 'e:2' });
  await settle();
  assert.equal(again.pendingCount, 0);
  restored.stop();
  again.stop();
  reloaded.close();
});

test('OfflineStore.mutator skips a kept change it cannot read, and counts it: the mutator is made, its mutations sent, the readable changes shown and kept', async () => {
  FakeSocket.sockets = [];
  const disk = new FakeIndexedDB(), storage = new FakeStorage();
  const store = await openStore(disk, storage);
  const live = new LiveQuery(url, 'inbox', { args: { sort: 'activity' }, window: [0, 40], WebSocket: FakeSocket });
  await kept(store, live, 'inbox');
  live.restore({ query: 'inbox', args: { sort: 'activity' }, list: inboxReset('e:1', [0, 40]), savedAt: 1 });
  const item = `rows-db.mutator ${url}`;
  const pending = [1, 2].map((id) => ({ type: 'mutate', client: 'web-k', id, name: 'archive', arguments: { id } }));
  const good = { mutation: 1, list: 'inbox', delete: { id: 1 } };
  const away = { mutation: 2, list: 'drafts', update: { id: 7, values: { subject: 'kept for later' } } };
  const damaged = [
    { mutation: 1, list: 'inbox', update: { id: 2, values: { data: 9007199254740993 } } },   // beyond 2⁵³ as a bare number
    { mutation: 2, list: 'inbox', insert: { id: 5, values: {}, placement: 'middle' } },
    { mutation: 2, list: 'inbox', update: { id: { f: 1.5, x: 1 }, values: {} } },
    { mutation: 2, list: 'inbox', update: { id: 3, values: { subject: 1.5 } } },              // a real without {f}
    { mutation: 2, list: 'inbox', delete: { id: 4 }, update: { id: 4, values: {} } },
    { mutation: '2', list: 'inbox', delete: { id: 4 } },
    { list: 'inbox', delete: { id: 4 } },
    'not a change',
    null,
  ];
  storage.setItem(item, JSON.stringify({ client: 'web-k', nextId: 3, pending, effects: [damaged[0], good, ...damaged.slice(1), away,
    { mutation: 9, list: 'inbox', delete: { id: 9 } }] }));
  const mutator = store.mutator(url, { WebSocket: FakeSocket });
  assert.equal(store.unreadableChanges, damaged.length);
  assert.equal(mutator.client, 'web-k');
  assert.deepEqual(mutator.pendingMutations.map((m) => m.id), [1, 2]);
  assert.deepEqual(effectsOf(mutator, 1), [{ delete: { id: 1 } }]);
  assert.deepEqual(mutator.effects(2), [], 'its list is not kept here');
  assert.equal(live.pendingCount, 1);
  assert.equal(live.displayed.positionOf(identityKey(1)), null);
  assert.deepEqual(JSON.parse(storage.getItem(item)).effects, [good, away], 'the readable ones kept, of the mutations pending');
  mutator.start();
  await settle();
  assert.deepEqual(FakeSocket.sockets.at(-1).sent.map((m) => m.id), [1, 2]);
  mutator.stop();
  // Effects that are not a list of changes at all: counted once, the mutator as ever.
  storage.setItem(item, JSON.stringify({ client: 'web-k', nextId: 3, pending, effects: 'nope' }));
  const other = await openStore(disk, storage);
  const plain = other.mutator(url, { WebSocket: FakeSocket });
  assert.equal(other.unreadableChanges, 1);
  assert.equal(plain.client, 'web-k');
  assert.deepEqual(plain.pendingMutations.map((m) => m.id), [1, 2]);
  store.close();
  other.close();
});
