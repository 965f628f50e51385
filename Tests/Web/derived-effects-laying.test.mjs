// Laying the effects the server states (docs/PROTOCOL.md, "Effects the server states", step 6):
// whole or not at all, and a section a pending delete empties taken out, in Web/livelist.js,
// under Node's test runner: node --test Tests/Web/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Connection, ListModel, LiveQuery, Mutator, PendingEffect, deriveEffects, resolvePending } from '../../Web/livelist.js';
import { FakeSocket } from './support.mjs';

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));
const identity = { column: null, descending: false, nullsFirst: true };

/**
 * An inbox sectioned by day (as the server's `inbox`): columns id, day, subject of the table
 * `message` (which also has folder), filtered on folder 'work', ordered by day descending (its
 * section column), subject, id.
 */
const columns = ['id', 'day', 'subject'];
const order = [{ column: 1, descending: true, nullsFirst: false }, { column: 2, descending: false, nullsFirst: true }, identity];
const work = [{ column: 'folder', op: '=', operand: { value: 'work' } }];
const mutations = {
  // A row goes and another comes: two effects.
  refile: [{ delete: { key: { arg: 'old' }, where: [] } },
    { insert: { values: { id: { arg: 'id' }, day: { arg: 'day' }, subject: { arg: 'subject' }, folder: { value: 'work' } } } }],
  redate: [{ update: { key: { arg: 'id' }, where: [], set: { day: { arg: 'day' } } } }],
  rename: [{ update: { key: { arg: 'id' }, where: [], set: { subject: { arg: 'subject' } } } }],
  remove: [{ delete: { key: { arg: 'id' }, where: [] } }],
};
const effects = { table: 'message', identity: 'id', columns, filter: work, mutations };

/** Days 3, 2, 1 (descending), rows `[id, day, subject]`. */
const days = [[31, 3, 'a'], [32, 3, 'b'], [21, 2, 'a'], [22, 2, 'b'], [11, 1, 'a'], [12, 1, 'b']];

/** The reset of `rows` (sorted), sectioned by day, with the window `[start, count]`. */
function reset(rows, window = [0, 100], { sub = 1, version = 'e:1', sectioned = true, listOrder = order } = {}) {
  const sections = [];
  for (const row of rows) {
    if (sections.length === 0 || sections.at(-1)[0] !== row[1]) sections.push([row[1], 0]);
    sections.at(-1)[1] += 1;
  }
  const message = { sub, type: 'reset', version, reason: 'subscribed', columns, sections: sectioned ? sections : [[null, rows.length]], window,
    rows: rows.map((row, position) => [position, row[0], row]).filter(([position]) => position >= window[0] && position < window[0] + window[1]), effects };
  if (listOrder) message.order = listOrder;
  return message;
}

function model(rows, window, options) {
  const list = new ListModel();
  list.receive(reset(rows, window, options));
  return list;
}

/** `effects` as one mutation's group: exact (derived) or not (the app's). */
const group = (list, exact) => ({ effects: list.map((effect) => new PendingEffect(effect)), exact });
/** The ids the list shows (null: a row not known). */
const idsOf = (displayed) => Array.from({ length: displayed.count }, (_, position) => displayed.row(position)?.id ?? null);
const sectionsOf = (displayed) => displayed.sections.keys.map((key, index) => [key, displayed.sections.counts[index]]);

test('A mutation\'s derived effects show whole or not at all: an insert into a section the window lacks hides its delete too', async () => {
  FakeSocket.sockets = [];
  const connection = new Connection('ws://host/live', { WebSocket: FakeSocket, liveness: null });
  // Days 3 and 2 held, day 1 beyond the window.
  const live = new LiveQuery(connection, 'inbox', { window: [0, 4], prefetch: 0 });
  const mutator = new Mutator(connection, 'web-x');
  live.start();
  await tick();
  const socket = FakeSocket.sockets.at(-1);
  socket.serve(reset(days, [0, 4]));
  mutator.start();
  // Into day 1: its place is past the last row held, and the window does not reach the list's end.
  const args = { old: 31, id: 9, day: 1, subject: 'c' };
  const derived = deriveEffects(live.model, 'refile', args);
  assert.deepEqual(derived.effects, [{ delete: { id: 31 } }, { insert: { id: 9, values: { id: 9, day: 1, subject: 'c' }, placement: 'sorted' } }]);
  mutator.mutate('refile', args).catch(() => {});
  assert.deepEqual(mutator.effects(1).map(({ list, ...effect }) => effect), derived.effects, 'shown for the mutation, and kept');
  assert.equal(live.pendingCount, 1);
  assert.equal(live.displayed.hasPending, false, 'nothing of it shows: not even the delete');
  assert.deepEqual(idsOf(live.displayed), [31, 32, 21, 22, null, null]);
  // The same effects as the app's show what they can: the delete.
  assert.deepEqual(idsOf(resolvePending(live.model, [group(derived.effects, false)])), [32, 21, 22, null, null]);
  // Into day 2, between two rows held: both show.
  mutator.mutate('refile', { old: 32, id: 8, day: 2, subject: 'ab' }).catch(() => {});
  assert.deepEqual(idsOf(live.displayed), [31, 21, 8, 22, null, null]);
  assert.deepEqual(sectionsOf(live.displayed), [[3, 1], [2, 3], [1, 2]]);
  assert.deepEqual([live.displayed.row(2).pending, live.displayed.row(0).pending], [true, false]);
  // Into a day the list does not have, though the window holds it whole: it would open a section.
  const whole = model(days);
  const opening = deriveEffects(whole, 'refile', { old: 31, id: 7, day: 5, subject: 'a' });
  assert.equal(opening.effects.length, 2);
  assert.equal(resolvePending(whole, [group(opening.effects, true)]).hasPending, false);
  assert.deepEqual(idsOf(resolvePending(whole, [group(opening.effects, false)])), [32, 21, 22, 11, 12]);
  // The commit of the first (9 slides into the window): the server's list, with the second laid over it.
  socket.serve({ sub: 1, type: 'changes', from: 'e:1', to: 'e:2', deletes: [[0, 0]], inserts: [[2, 0, 9]], rows: [[3, 9, [9, 1, 'c']]] });
  assert.deepEqual(idsOf(live.displayed), [21, 8, 22, 9, null, null]);
  assert.deepEqual(sectionsOf(live.displayed), [[2, 3], [1, 3]], 'the second\'s delete of 32 empties day 3');
  // The app's effects given later for the list (show) take the derived ones' place: only the app's show.
  mutator.show([{ list: live, update: { id: 21, values: { subject: 'zz' } } }], 1);
  assert.deepEqual(mutator.effects(1).map(({ list, ...effect }) => effect), [{ update: { id: 21, values: { subject: 'zz' } } }]);
  assert.equal(live.pendingEffects.get('web-x#1').exact, false);
  assert.deepEqual(idsOf(live.displayed), [8, 22, 21, 9, null, null]);
  mutator.stop();
  live.stop();
});

test('Derived effects show only as stated: an update whose place is not known, or of a row held outside the window, hides the mutation; the app\'s stays where it is', () => {
  // A window of days 3 and 2: moving 21 to day 1 puts it past the rows held.
  const windowed = model(days, [0, 4]);
  const redate = deriveEffects(windowed, 'redate', { id: 21, day: 1 }).effects;
  assert.deepEqual(redate, [{ update: { id: 21, values: { day: 1 } } }]);
  assert.equal(resolvePending(windowed, [group(redate, true)]).hasPending, false);
  const lenient = resolvePending(windowed, [group(redate, false)]);
  assert.deepEqual([idsOf(lenient), lenient.row(2).values], [[31, 32, 21, 22, null, null], [21, 1, 'a']], 'the app\'s: it stays, with its new values');
  // Its sorted place among the rows held: it moves, and shows.
  const moved = resolvePending(windowed, [group(deriveEffects(windowed, 'redate', { id: 21, day: 3 }).effects, true)]);
  assert.deepEqual(idsOf(moved), [21, 31, 32, 22, null, null]);
  // A list without an order: an update that changes a row has no place known; a delete shows.
  const unordered = model(days, [0, 100], { sectioned: false, listOrder: null });
  assert.equal(resolvePending(unordered, [group(deriveEffects(unordered, 'rename', { id: 21, subject: 'z' }).effects, true)]).hasPending, false);
  assert.deepEqual(idsOf(resolvePending(unordered, [group(deriveEffects(unordered, 'remove', { id: 21 }).effects, true)])), [31, 32, 22, 11, 12]);
  // A row the list holds beyond its window (a window asked for, not yet answered): not shown there, so none of it.
  const asked = model(days, [0, 2]);
  asked.didRequest([0, 6]);
  asked.receive({ sub: 1, type: 'changes', from: 'e:1', to: 'e:2', rows: days.map((row, position) => [position, row[0], row]) });
  assert.equal(asked.row(4).id, 11, 'held, outside the window');
  const both = [{ delete: { id: 31 } }, { delete: { id: 11 } }];
  assert.equal(resolvePending(asked, [group(both, true)]).hasPending, false);
  assert.deepEqual(idsOf(resolvePending(asked, [group(both, false)])), [32, 21, 22, 11, 12], 'the app\'s: what the window holds');
  // A row not held at all: the server's list shows it already, and the rest shows.
  assert.deepEqual(idsOf(resolvePending(asked, [group([{ delete: { id: 31 } }, { delete: { id: 99 } }], true)])).slice(0, 1), [32]);
  // A row held without its values: an update of it is not known.
  const unloaded = new ListModel();
  unloaded.receive({ ...reset(days), rows: reset(days).rows.map(([position, id, values]) => [position, id, id === 22 ? null : values]) });
  assert.equal(resolvePending(unloaded, [group([{ update: { id: 22, values: { subject: 'c' } } }, { delete: { id: 31 } }], true)]).hasPending, false);
  // One mutation hidden does not hide another's.
  const two = resolvePending(windowed, [group(redate, true), group([{ delete: { id: 32 } }], true)]);
  assert.deepEqual(idsOf(two), [31, 21, 22, null, null]);
});

test('A section whose every row a pending delete (or move) takes out is gone from the list shown, as the server\'s will be; a list without sections keeps its one', () => {
  const rows = [[31, 3, 'a'], [32, 3, 'b'], [21, 2, 'a'], [11, 1, 'a'], [12, 1, 'b']];
  const list = model(rows);
  const remove = deriveEffects(list, 'remove', { id: 21 }).effects;
  for (const exact of [true, false]) {
    const shown = resolvePending(list, [group(remove, exact)]);
    assert.deepEqual(sectionsOf(shown), [[3, 2], [1, 2]], `exact: ${exact}`);
    assert.deepEqual(idsOf(shown), [31, 32, 11, 12]);
    assert.equal(shown.sections.path(2)[0], 1, 'positions read through the sections left');
  }
  // Moved to another day: its section goes, the other grows.
  const moved = resolvePending(list, [group(deriveEffects(list, 'redate', { id: 21, day: 1 }).effects, true)]);
  assert.deepEqual(sectionsOf(moved), [[3, 2], [1, 3]]);
  assert.deepEqual(idsOf(moved), [31, 32, 11, 21, 12], 'day 1, subject a: after 11 by its identity');
  // Every row of the first and the last.
  const all = resolvePending(list, [group([{ delete: { id: 31 } }, { delete: { id: 32 } }, { delete: { id: 11 } }, { delete: { id: 12 } }], true)]);
  assert.deepEqual([sectionsOf(all), idsOf(all)], [[[2, 1]], [21]]);
  // A list without sections: its one section, keyed null, stays when emptied.
  const flat = model([[1, 1, 'a']], [0, 100], { sectioned: false });
  const empty = resolvePending(flat, [group([{ delete: { id: 1 } }], true)]);
  assert.deepEqual([sectionsOf(empty), empty.count], [[[null, 0]], 0]);
  // A section partly outside the window keeps its rows there.
  const partial = model(rows, [0, 3]);
  assert.deepEqual(sectionsOf(resolvePending(partial, [group([{ delete: { id: 21 } }], true)])), [[3, 2], [1, 2]]);
  assert.deepEqual(sectionsOf(resolvePending(partial, [group([{ delete: { id: 31 } }, { delete: { id: 32 } }], true)])), [[2, 1], [1, 2]]);
});
