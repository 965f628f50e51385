// Frames a server may send, mutated, fed to livelist.js as a page's live query receives them: a
// hostile or broken server must not throw out of the socket's handler, nor leave the list in a
// state that contradicts itself. No JavaScript fuzzer is at hand, so a small seeded mutator does
// the work: JSON-aware changes (a node replaced by an edge value, removed or repeated), text
// changes (a range cut, a token of the dictionary inserted) and frame changes (dropped, repeated,
// taken from another session), from the Swift fuzz target's seeds (Tests/Fuzz/server-messages/).
//
// node --test Tests/Web/                              a short run (CI)
// LIVELIST_FUZZ_SECONDS=600 node --test Tests/Web/fuzz.test.mjs   a long one
// LIVELIST_SEED=N …                                   replays a run; a failure prints its seed,
//                                                     round and frames
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { LiveQuery, ListModel, compareRows } from '../../Web/livelist.js';
import { FakeSocket, generator, testSeed } from './support.mjs';

const here = new URL('../Fuzz/', import.meta.url);
const seeds = readdirSync(new URL('server-messages/', here)).sort()
  .map((name) => readFileSync(new URL(`server-messages/${name}`, here), 'utf8').split('\n').filter((line) => line.length > 0))
  .filter((frames) => frames.length > 0);
const tokens = readFileSync(new URL('server-messages.dict', here), 'utf8').split('\n')
  .filter((line) => line.startsWith('"')).map((line) => JSON.parse(line));
const edges = [null, true, false, 0, -1, 1.5, -0, 2 ** 31, 2 ** 53 + 2, 1e308, '', 'x', 'a:0', 'a:1', [], {}, [0, 0], [-1, 1], [[0, 0]],
  { i: '99999999999999999999' }, { f: 'nan' }, { f: 'inf' }, { b: '@@' }, { column: 9, descending: true, nullsFirst: false }];

/** A mutator over frames, driven by `random(bound)`. */
function mutate(frames, random) {
  const pick = (values) => values[random(values.length)];
  const out = [...frames];
  for (let n = 1 + random(4); n > 0; n--) {
    const index = random(out.length);
    switch (random(7)) {
      case 0: case 1: case 2: {
        // A node of the frame's JSON replaced, removed or repeated.
        let root;
        try { root = JSON.parse(out[index]); } catch { break; }
        const nodes = [];
        (function walk(value, parent, key) {
          nodes.push({ parent, key });
          if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(v, value, Array.isArray(value) ? Number(k) : k);
        })(root, null, null);
        const { parent, key } = pick(nodes);
        if (parent === null) break;
        const action = random(4);
        if (action === 0 && Array.isArray(parent)) parent.splice(key, 1);
        else if (action === 0) delete parent[key];
        else if (action === 1 && Array.isArray(parent)) parent.splice(key, 0, structuredClone(parent[key]));
        else if (action === 2 && typeof parent[key] === 'number') parent[key] = pick([parent[key] + 1, parent[key] - 1, parent[key] * 2 + 1, -parent[key]]);
        else parent[key] = structuredClone(pick(edges));
        out[index] = JSON.stringify(root);
        break;
      }
      case 3: {
        const text = out[index], start = random(text.length + 1), end = Math.min(text.length, start + random(12));
        out[index] = text.slice(0, start) + (random(2) ? pick(tokens) : '') + text.slice(end);
        break;
      }
      case 4: out.splice(index, 1); break;
      case 5: out.splice(index, 0, out[index]); break;
      default: out.splice(index, 0, pick(pick(seeds))); break;
    }
    if (out.length === 0) out.push(pick(pick(seeds)));
  }
  return out;
}

/** What must hold of a list whatever the server sent. */
function checkList(live) {
  const { sections, known } = live.model;
  assert.equal(sections.keys.length, sections.counts.length);
  assert.ok(sections.counts.every((count) => Number.isSafeInteger(count) && count >= 0), `counts ${sections.counts}`);
  assert.equal(live.model.count, sections.counts.reduce((a, b) => a + b, 0));
  for (const position of known.keys()) assert.ok(position >= 0 && position < live.model.count, `a row held at ${position} of ${live.model.count}`);
  const shown = live.displayed;
  assert.ok(Number.isSafeInteger(shown.count) && shown.count >= 0, `shown ${shown.count}`);
  // The list held reads back as the reset it says it is.
  const held = live.model.heldList();
  if (held !== null) new ListModel().receive(JSON.parse(JSON.stringify(held)));
}

/** Feeds `frames` to a new live query (with a pending effect laid over it); returns why it failed. */
function run(frames) {
  FakeSocket.sockets = [];
  const live = new LiveQuery('ws://host/live', 'inbox', { window: [0, 40], WebSocket: FakeSocket, backoff: [60_000, 60_000], liveness: null });
  live.onEvent = () => {};
  live.start();
  return Promise.resolve().then(() => {
    const socket = FakeSocket.sockets.at(-1);
    socket.onopen?.();
    live.addPending('effect', [{ insert: { id: 900001, values: { sender: 'Ada', subject: 'x' } } }, { update: { id: 3, values: { unread: 1 } } }, { delete: { id: 2 } }]);
    for (const [index, frame] of frames.entries()) {
      // A frame for the live query's subscription, whatever number the session had.
      const text = frame.replace(/^\{"sub":\d+,/, `{"sub":${live.sub || 1},`);
      try {
        socket.onmessage?.({ data: text });
        checkList(live);
      } catch (error) {
        return `frame ${index}: ${error.stack ?? error}`;
      }
    }
    live.stop();
    return null;
  });
}

test('frames a server may send, mutated, never throw out of the client nor leave a list that contradicts itself (seed printed)', async () => {
  const seed = testSeed();
  const seconds = Number(process.env.LIVELIST_FUZZ_SECONDS ?? 0);
  console.log(`web fuzz seed: ${seed}${seconds ? `, for ${seconds} s` : ''}`);
  const random = generator(seed);
  const deadline = Date.now() + seconds * 1000;
  let rounds = 0;
  for (const frames of seeds) assert.equal(await run(frames), null, 'a seed fails as it is');
  while (seconds > 0 ? Date.now() < deadline : rounds < 3000) {
    const frames = mutate(seeds[random(seeds.length)], random);
    const failure = await run(frames);
    if (failure !== null) assert.fail(`seed ${seed}, round ${rounds}: ${failure}\nframes:\n${frames.join('\n')}`);
    rounds += 1;
  }
  console.log(`web fuzz: ${rounds} rounds`);
});

// Inputs the fuzzing found, kept: each failed before its fix.

test('found by fuzzing: a row sent with fewer values than columns orders as NULLs, and a pending row still finds its place', async () => {
  // The order's first term reads column 1, which the second row does not have: comparing them threw
  // out of the socket's handler while a pending insert looked for its place.
  const order = [{ column: 1, descending: false, nullsFirst: true }, { column: null, descending: false, nullsFirst: true }];
  assert.equal(compareRows(order, { id: 1, values: [1, 'a'] }, { id: 2, values: [] }), 1);
  const reset = { sub: 1, type: 'reset', version: 'a:1', reason: 'subscribed', columns: ['id', 'name'], sections: [[null, 2]], window: [0, 40],
    rows: [[0, 1, [1, 'a']], [1, 2, []]], order };
  assert.equal(await run([JSON.stringify(reset)]), null);
});

test('found by fuzzing (the Swift offline store): a held row with fewer values than columns takes a pending update of a column it lacks', async () => {
  FakeSocket.sockets = [];
  const live = new LiveQuery('ws://host/live', 'inbox', { window: [0, 40], WebSocket: FakeSocket, backoff: [60_000, 60_000], liveness: null });
  live.start();
  await Promise.resolve();
  const socket = FakeSocket.sockets.at(-1);
  socket.onopen?.();
  const order = [{ column: 1, descending: false, nullsFirst: true }, { column: null, descending: false, nullsFirst: true }];
  socket.onmessage({ data: JSON.stringify({ sub: live.sub, type: 'reset', version: 'a:1', reason: 'subscribed', columns: ['id', 'name', 'unread'],
    sections: [[null, 3]], window: [0, 40], rows: [[0, 1, [1]], [1, 2, [2, 'b', 0]], [2, 3, [3, 'c', 0]]], order }) });
  live.addPending('effect', [{ update: { id: 1, values: { unread: 1 } } }]);
  // Another frame after it: the list shown again with the effect laid over it.
  socket.onmessage({ data: JSON.stringify({ sub: live.sub, type: 'changes', from: 'a:1', to: 'a:2' }) });
  const shown = [...Array(live.displayed.count).keys()].map((position) => live.displayed.row(position));
  assert.deepEqual(shown.find((row) => row?.id === 1)?.values, [1, null, 1]);
  live.stop();
});
