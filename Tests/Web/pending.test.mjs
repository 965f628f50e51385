// Pending rows (a mutation's expected effects shown at once) of Web/livelist.js, under Node's
// test runner: node --test Tests/Web/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DisplayedTransition, ListModel, LiveQuery, MutationError, Mutator, PendingEffect, Real, compareRows, identityKey, resolvePending,
  serverPositionMapping,
} from '../../Web/livelist.js';
import { FakeSocket, generator, sectionChanges, testSeed } from './support.mjs';

const seed = testSeed();
console.log(`pending rows seed: ${seed}`);

// ---------------------------------------------------------------------------------------------
// Lists of rows {id, sec, val}: columns id, sec, val; sectioned by sec (descending), or not.

const columns = ['id', 'sec', 'val'];
const identity = { column: null, descending: false, nullsFirst: true };
const orders = {
  sectioned: [{ column: 1, descending: true, nullsFirst: false }, { column: 2, descending: false, nullsFirst: true }, identity],
  flat: [{ column: 2, descending: false, nullsFirst: true }, identity],
  unordered: null,
};
const valuesOf = (row) => [row.id, row.sec, row.val];
const keyOf = (id) => JSON.stringify(id);
const termsOf = (kind) => orders[kind] && orders[kind].map((term) => ({ collation: 'binary', ...term }));

/** Rows as the server lists them: sorted by the kind's order (unordered: as given), in sections. */
function layout(rows, kind) {
  if (kind === 'unordered') return [{ key: null, rows }];
  const order = termsOf(kind);
  const sorted = [...rows].sort((a, b) => compareRows(order, { id: a.id, values: valuesOf(a) }, { id: b.id, values: valuesOf(b) }));
  if (kind === 'flat') return [{ key: null, rows: sorted }];
  const sections = [];
  for (const row of sorted) {
    if (sections.length === 0 || sections.at(-1).key !== row.sec) sections.push({ key: row.sec, rows: [] });
    sections.at(-1).rows.push(row);
  }
  return sections;
}

const flat = (sections) => sections.flatMap((s) => s.rows);

function resetMessage(sections, version, window, kind) {
  const rows = flat(sections).map((r, p) => [p, r.id, valuesOf(r)]).filter(([p]) => p >= window[0] && p < window[1]);
  const message = { sub: 1, type: 'reset', version, reason: 'subscribed', columns, sections: sections.map((s) => [s.key, s.rows.length]),
    window: [window[0], window[1] - window[0]], rows };
  if (orders[kind]) message.order = orders[kind];
  return message;
}

function rowsMessage(sections, version, window) {
  const rows = flat(sections).map((r, p) => [p, r.id, valuesOf(r)]).filter(([p]) => p >= window[0] && p < window[1]);
  return { sub: 1, type: 'rows', version, window: [window[0], window[1] - window[0]], rows };
}


/** The changes from list `old` to `now` (sections of rows), as a server sends them (see sectionChanges). */
function changesBetween(old, now) {
  return sectionChanges(old, now, { contentOf: (row) => JSON.stringify(valuesOf(row)) });
}

function changesMessage(old, now, from, to, window) {
  const { changes, reinserted } = changesBetween(old, now);
  // Every row of the window, with its values (more than a server sends; the model takes them all).
  const rows = flat(now).map((r, p) => [p, r.id, valuesOf(r)]).filter(([p]) => p >= window[0] && p < window[1]);
  return { message: { sub: 1, type: 'changes', from, to, ...changes, rows }, reinserted };
}

function modelOf(rows, kind, window, version = 'e:1') {
  const model = new ListModel();
  model.receive(resetMessage(layout(rows, kind), version, window, kind));
  return model;
}

const effects = (...groups) => groups.map((group) => group.map((effect) => new PendingEffect(effect)));
const show = (model, ...groups) => resolvePending(model, effects(...groups));
/** The displayed list's rows in `from ..< to` as [id, pending] (null: unknown), and its counts. */
function shown(displayed, from = 0, to = displayed.count) {
  const rows = [];
  for (let position = from; position < to; position++) {
    const row = displayed.row(position);
    rows.push(row === null ? null : [row.id, row.pending]);
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------
// Placement, absorption, effect order (hand-written)

test('A sorted insert takes its place among the rows held; before or after them only at the list\'s ends', () => {
  const rows = Array.from({ length: 20 }, (_, i) => ({ id: i + 1, sec: 1, val: 10 * i }));
  const model = modelOf(rows, 'flat', [5, 15]);
  const insert = (id, val) => ({ insert: { id, values: { id, sec: 1, val } } });
  let displayed = show(model, [insert(100, 72)]);
  assert.equal(displayed.count, 21);
  assert.deepEqual(displayed.sections.counts, [21]);
  assert.deepEqual(shown(displayed, 7, 10), [[8, false], [100, true], [9, false]]);
  assert.deepEqual(displayed.row(8).values, [100, 1, 72]);
  assert.equal(displayed.positionOf(keyOf(100)), 8);
  assert.deepEqual(shown(displayed, 14, 17), [[14, false], [15, false], null], 'rows after the window shift by one, unknown');
  // Ties on val: the identity decides.
  displayed = show(model, [insert(0, 70)]);
  assert.equal(displayed.positionOf(keyOf(0)), 7);
  // Before the first row held (the window starts at 5), after the last (it ends before the list): not shown.
  for (const val of [5, 45, 145, 1000]) {
    displayed = show(model, [insert(100, val)]);
    assert.equal(displayed.count, 20, `val ${val}`);
    assert.equal(displayed.hasPending, false);
  }
  assert.equal(show(model, [insert(100, 50)]).positionOf(keyOf(100)), 6, 'right after the first row held (val 50, id 6): shown');
  // A window that holds the whole list: the ends are places too.
  const whole = modelOf(rows, 'flat', [0, 100]);
  assert.equal(show(whole, [insert(100, -1)]).positionOf(keyOf(100)), 0);
  assert.equal(show(whole, [insert(100, 1000)]).positionOf(keyOf(100)), 20);
  // An empty list: one section keyed null.
  const empty = modelOf([], 'flat', [0, 100]);
  assert.deepEqual(shown(show(empty, [insert(5, 1)])), [[5, true]]);
  // A list without a stated order: a sorted insert is not shown; first and last of its one section are places.
  const unordered = modelOf(rows, 'unordered', [0, 100]);
  assert.equal(show(unordered, [insert(100, 72)]).count, 20);
  assert.equal(show(unordered, [{ insert: { id: 100, values: {}, placement: { first: null } } }]).positionOf(keyOf(100)), 0);
  assert.equal(show(unordered, [{ insert: { id: 100, values: {}, placement: { last: null } } }]).positionOf(keyOf(100)), 20);
  assert.equal(show(modelOf(rows, 'unordered', [0, 10]), [{ insert: { id: 100, values: {}, placement: { last: null } } }]).hasPending, false);
  // Values as the wire gives them, and exact identities beyond 2⁵³.
  displayed = show(whole, [{ insert: { id: { i: '9007199254740993' }, values: { sec: 1, val: { i: '71' } } } }]);
  const row = displayed.row(8);
  assert.equal(row.key, '{"i":"9007199254740993"}');
  assert.equal(row.id, 9007199254740993n);
  assert.equal(identityKey(9007199254740993n), row.key);
  assert.deepEqual(row.values, [null, 1, 71]);
  assert.throws(() => new PendingEffect({ insert: { id: 1, values: { val: 1.5 } } }), TypeError);
  assert.throws(() => new PendingEffect({ insert: { id: 1 }, delete: { id: 1 } }), TypeError);
  assert.throws(() => new PendingEffect({ insert: { id: 1, placement: 'top' } }), TypeError);
});

test('With sections, a row goes into the section of its key around its place, never into a new one; first and last of a section', () => {
  // Sections 3, 2, 1 (descending), rows val 0…3 in each.
  const rows = [];
  for (const sec of [3, 2, 1]) for (let val = 0; val < 4; val++) rows.push({ id: sec * 10 + val, sec, val: val * 10 });
  const whole = modelOf(rows, 'sectioned', [0, 100]);
  assert.deepEqual(whole.sections.keys, [3, 2, 1]);
  const insert = (id, sec, val, placement) => ({ insert: { id, values: { id, sec, val }, ...(placement ? { placement } : {}) } });
  // At the boundary between 3 and 2: into 2 (first) or 3 (last), by its key.
  let displayed = show(whole, [insert(100, 2, -5)]);
  assert.equal(displayed.positionOf(keyOf(100)), 4);
  assert.deepEqual(displayed.sections.counts, [4, 5, 4]);
  displayed = show(whole, [insert(100, 3, 99)]);
  assert.equal(displayed.positionOf(keyOf(100)), 4);
  assert.deepEqual(displayed.sections.counts, [5, 4, 4]);
  // Inside a section.
  displayed = show(whole, [insert(100, 2, 15)]);
  assert.equal(displayed.positionOf(keyOf(100)), 6);
  assert.deepEqual(displayed.sections.counts, [4, 5, 4]);
  // A key no section has, at the top, between two sections, at the end: it would open a section.
  for (const sec of [4, null]) assert.equal(show(whole, [insert(100, sec, 0)]).hasPending, false, `sec ${sec}`);
  const gappy = modelOf(rows.filter((r) => r.sec !== 2), 'sectioned', [0, 100]);
  assert.equal(show(gappy, [insert(100, 2, 0)]).hasPending, false);
  assert.equal(show(whole, [insert(100, 0, 0)]).hasPending, false);
  // first and last, by the section's key, whatever the order says.
  displayed = show(whole, [insert(100, 7, 99, { first: 2 })]);
  assert.equal(displayed.positionOf(keyOf(100)), 4);
  assert.deepEqual(displayed.sections.counts, [4, 5, 4]);
  displayed = show(whole, [insert(100, 7, -9, { last: 2 })]);
  assert.equal(displayed.positionOf(keyOf(100)), 8);
  assert.equal(show(whole, [insert(100, 7, 0, { last: 1 })]).positionOf(keyOf(100)), 12);
  assert.equal(show(whole, [insert(100, 7, 0, { first: 9 })]).hasPending, false, 'an unknown section');
  // Only when that edge is among the rows held: the window [5, 9) holds section 2's rows 1…3 and 1's first.
  const window = modelOf(rows, 'sectioned', [5, 9]);
  assert.equal(show(window, [insert(100, 7, 0, { first: 2 })]).hasPending, false);
  assert.equal(show(window, [insert(100, 7, 0, { last: 2 })]).positionOf(keyOf(100)), 8);
  assert.equal(show(window, [insert(100, 7, 0, { first: 1 })]).positionOf(keyOf(100)), 8);
  assert.equal(show(window, [insert(100, 7, 0, { last: 1 })]).hasPending, false);
  // Sorted into a window that does not start the list: after its first row held.
  assert.equal(show(window, [insert(100, 2, 25)]).positionOf(keyOf(100)), 7);
  assert.equal(show(window, [insert(100, 2, 5)]).hasPending, false, 'before the first row held');
  // The boundary between 2 and 1 inside the window: either side by its key.
  assert.equal(show(window, [insert(100, 1, -1)]).positionOf(keyOf(100)), 8);
  assert.equal(show(window, [insert(100, 2, 99)]).positionOf(keyOf(100)), 8);
  assert.deepEqual(show(window, [insert(100, 2, 99)]).sections.counts, [4, 5, 4]);
});

test('Updates change a held row and move it to its sorted place, or leave it where it is; deletes take it out', () => {
  const rows = Array.from({ length: 20 }, (_, i) => ({ id: i + 1, sec: 1, val: 10 * i }));
  const model = modelOf(rows, 'flat', [5, 15]);
  const update = (id, values) => ({ update: { id, values } });
  // Moves down among the rows held (row 7, val 60, to between 110 and 120).
  let displayed = show(model, [update(7, { val: 115 })]);
  assert.deepEqual(shown(displayed, 5, 15).map((r) => r[0]), [6, 8, 9, 10, 11, 12, 7, 13, 14, 15]);
  assert.deepEqual(displayed.row(11), { key: '7', id: 7, values: [7, 1, 115], stamp: displayed.row(11).stamp, pending: true });
  assert.equal(displayed.row(10).pending, false);
  // A place off the rows held: it stays, with its new values.
  displayed = show(model, [update(7, { val: 500 })]);
  assert.deepEqual(shown(displayed, 5, 8), [[6, false], [7, true], [8, false]]);
  assert.deepEqual(displayed.row(6).values, [7, 1, 500]);
  // The values it has already, a row not held, a column the list does not have: nothing.
  for (const effect of [update(7, { val: 60 }), update(7, { val: 60, sec: 1 }), update(3, { val: 1 }), update(7, { colour: 1 })]) {
    assert.equal(show(model, [effect]).hasPending, false, JSON.stringify(effect));
  }
  // Values compare exactly: a real is not the integer of the same value.
  displayed = show(model, [update(7, { val: new Real(60) })]);
  assert.equal(displayed.row(6).pending, true);
  // Without a stated order, an update stays where it is.
  const unordered = modelOf(rows, 'unordered', [0, 100]);
  displayed = show(unordered, [update(7, { val: 1000 })]);
  assert.deepEqual(shown(displayed, 6, 7), [[7, true]]);
  // Deletes: a held row goes; a row not held is the server's business.
  displayed = show(model, [{ delete: { id: 7 } }]);
  assert.equal(displayed.count, 19);
  assert.equal(displayed.positionOf(keyOf(7)), null);
  assert.deepEqual(shown(displayed, 5, 7), [[6, false], [8, false]]);
  assert.equal(show(model, [{ delete: { id: 2 } }]).hasPending, false);
  // With sections: an update whose section has no place around it stays, in its section.
  const sectioned = [];
  for (const sec of [3, 2]) for (let val = 0; val < 4; val++) sectioned.push({ id: sec * 10 + val, sec, val });
  const sections = modelOf(sectioned, 'sectioned', [0, 100]);
  displayed = show(sections, [update(31, { sec: 2, val: 1 })]);
  assert.deepEqual(shown(displayed).map((r) => r[0]), [30, 32, 33, 20, 21, 31, 22, 23]);
  assert.deepEqual(displayed.sections.counts, [3, 5]);
  displayed = show(sections, [update(31, { sec: 9 })]);
  assert.deepEqual(shown(displayed).map((r) => r[0]), [30, 31, 32, 33, 20, 21, 22, 23]);
  assert.deepEqual(displayed.sections.counts, [4, 4]);
  assert.equal(displayed.row(1).pending, true);
});

test('Inserts of rows the server holds do nothing; effects apply in mutation order, later ones seeing earlier ones', () => {
  const rows = Array.from({ length: 10 }, (_, i) => ({ id: i + 1, sec: 1, val: 10 * i }));
  const model = modelOf(rows, 'flat', [0, 100]);
  assert.equal(show(model, [{ insert: { id: 4, values: { val: 999 } } }]).hasPending, false, 'held by the server');
  // Insert, then update the pending row (it moves), then another insert of the same id (nothing).
  let displayed = show(model, [{ insert: { id: 100, values: { val: 25 } } }], [{ update: { id: 100, values: { val: 75 } } }],
    [{ insert: { id: 100, values: { val: 0 } } }]);
  assert.equal(displayed.count, 11);
  assert.equal(displayed.positionOf(keyOf(100)), 8);
  assert.deepEqual(displayed.row(8).values, [null, null, 75]);
  // Insert then delete: nothing shows; delete then update: nothing to update.
  assert.equal(show(model, [{ insert: { id: 100, values: { val: 25 } } }, { delete: { id: 100 } }]).count, 10);
  displayed = show(model, [{ delete: { id: 3 } }], [{ update: { id: 3, values: { val: 1 } } }]);
  assert.equal(displayed.count, 9);
  // A delete of a row the server holds, then its insert: the server holds it, so the insert does nothing.
  assert.equal(show(model, [{ delete: { id: 3 } }], [{ insert: { id: 3, values: { val: 20 } } }]).count, 9);
  // The order of the groups matters: update before the insert does nothing.
  displayed = show(model, [{ update: { id: 100, values: { val: 75 } } }], [{ insert: { id: 100, values: { val: 25 } } }]);
  assert.equal(displayed.positionOf(keyOf(100)), 3);
  // A second insert sorts among the first one: both pending.
  displayed = show(model, [{ insert: { id: 100, values: { val: 25 } } }], [{ insert: { id: 101, values: { val: 25 } } }]);
  assert.deepEqual(shown(displayed, 2, 6), [[3, false], [100, true], [101, true], [4, false]]);
  // With nothing pending, the displayed list is the server's.
  displayed = show(model);
  assert.equal(displayed.sections, model.sections);
  for (let p = 0; p < 10; p++) assert.deepEqual(displayed.row(p), { ...model.row(p), pending: false });
});

test('A pending row that the server\'s changes bring becomes the server\'s row: the transition moves it, never deletes and inserts it', () => {
  const rows = Array.from({ length: 10 }, (_, i) => ({ id: i + 1, sec: 1, val: 10 * i }));
  const model = modelOf(rows, 'flat', [0, 100]);
  const group = effects([{ insert: { id: 100, values: { id: 100, sec: 1, val: 35 } } }]);
  const before = resolvePending(model, group);
  assert.equal(before.positionOf(keyOf(100)), 4);
  // The commit as the server lists it: its own values put the row elsewhere (val 65: position 7).
  const now = [...rows, { id: 100, sec: 1, val: 65 }];
  const { message } = changesMessage(layout(rows, 'flat'), layout(now, 'flat'), 'e:1', 'e:2', [0, 100]);
  const output = model.receive(message);
  const after = resolvePending(model, group, before);   // the effect is absorbed: the server holds 100
  assert.equal(after.hasPending, false);
  const transition = new DisplayedTransition(before, after, serverPositionMapping(output.oldSections, model.sections, output.mapping));
  assert.equal(transition.newPosition(4), 7);
  assert.equal(transition.oldPosition(7), 4);
  assert.equal(after.row(7).pending, false);
  assert.notEqual(after.row(7).stamp, before.row(4).stamp, 'drawn again: no longer pending');
  for (let p = 0; p < 11; p++) assert.equal(after.row(transition.newPosition(p)).id, before.row(p).id, `the row at ${p}`);
  // Taking a pending insert back deletes it; the rows after it come back up.
  const taken = new DisplayedTransition(before, resolvePending(modelOf(rows, 'flat', [0, 100]), []), null);
  assert.equal(taken.newPosition(4), null);
  assert.equal(taken.newPosition(5), 4);
  assert.equal(taken.oldPosition(4), 5);
  // A pending row keeps its stamp while its values stay (its element is not drawn again).
  const again = resolvePending(modelOf(rows, 'flat', [0, 100]), group, before);
  assert.equal(again.row(4).stamp, before.row(4).stamp);
});

test('A row an effect moved into another section stays in place when the commit deletes its old section (and inserts it again)', () => {
  const rows = [{ id: 30, sec: 3, val: 0 }, { id: 31, sec: 3, val: 10 }, { id: 20, sec: 2, val: 0 }];
  const model = modelOf(rows, 'sectioned', [0, 100]);
  const group = effects([{ update: { id: 20, values: { sec: 3, val: 5 } } }]);
  const before = resolvePending(model, group);
  assert.deepEqual(shown(before), [[30, false], [20, true], [31, false]]);
  assert.deepEqual([before.sections.keys, before.sections.counts], [[3], [3]], 'section 2, emptied, is gone');
  // The commit: section 2 deleted, so its row is deleted and inserted (never moved) by the server's changes.
  const now = [rows[0], rows[1], { id: 20, sec: 3, val: 5 }];
  const { message } = changesMessage(layout(rows, 'sectioned'), layout(now, 'sectioned'), 'e:1', 'e:2', [0, 100]);
  assert.deepEqual([message.sectionDeletes, message.deletes, message.inserts], [[1], [[1, 0]], [[0, 1, 20]]]);
  const output = model.receive(message);
  const after = resolvePending(model, group, before);
  assert.equal(after.hasPending, false);
  const transition = new DisplayedTransition(before, after, serverPositionMapping(output.oldSections, model.sections, output.mapping));
  for (let position = 0; position < 3; position++) {
    assert.equal(transition.newPosition(position), position, `row ${position} stays`);
    assert.equal(transition.oldPosition(position), position);
  }
  assert.equal(after.row(1).pending, false);
});

// ---------------------------------------------------------------------------------------------
// Random server transitions and random effects against a naive computation (seeded)

/**
 * The displayed list computed naively from the whole list (which the client never has): the
 * server's rows, the window's rows replaced by the effects applied in order to an array, with
 * linear searches. Rows: {key, id, values, section, pending}.
 */
function naiveDisplayed(sections, window, groups, kind) {
  const all = sections.flatMap((s, section) => s.rows.map((r) => ({ key: keyOf(r.id), id: r.id, values: valuesOf(r), section, pending: false, inserted: false })));
  const count = all.length;
  const start = Math.min(window[0], count), end = Math.max(start, Math.min(window[1], count));
  const held = new Set(all.slice(start, end).map((r) => r.key));
  const keys = sections.map((s) => s.key);
  const sectioned = !(keys.length === 1 && keys[0] === null);
  const order = termsOf(kind);
  const starts = [];
  sections.reduce((sum, s) => { starts.push(sum); return sum + s.rows.length; }, 0);
  starts.push(count);
  const compare = (a, b) => compareRows(order, a, b);
  function place(row, placement, work) {
    if (placement === 'sorted') {
      if (!order || keys.length === 0) return null;
      // Among the server's rows (in its order), linearly; then among the pending rows in that gap.
      const settled = work.map((r, i) => i).filter((i) => !work[i].pending);
      const gap = settled.filter((i) => compare(work[i], row) < 0).length;
      if (gap === 0 && start > 0) return null;
      if (gap === settled.length && end < count) return null;
      const runStart = gap > 0 ? settled[gap - 1] + 1 : 0, runEnd = gap < settled.length ? settled[gap] : work.length;
      let index = runStart;
      while (index < runEnd && compare(row, work[index]) > 0) index++;
      const before = index > 0 ? work[index - 1].section : 0, after = index < work.length ? work[index].section : keys.length - 1;
      if (before > after) return null;
      if (!sectioned) return { index, section: before };
      for (let s = before; s <= after; s++) if (keys[s] === row.values[1]) return { index, section: s };
      return null;
    }
    const section = keys.findIndex((k) => k === ('first' in placement ? placement.first : placement.last));
    if (section < 0) return null;
    const edge = 'first' in placement ? starts[section] : starts[section + 1];
    if (edge < start || edge > end) return null;
    const index = work.findIndex((r) => ('first' in placement ? r.section >= section : r.section > section));
    return { index: index < 0 ? work.length : index, section };
  }
  let work = all.slice(start, end), dropped = 0;
  for (const group of groups) {
    // An exact group (derived effects) is laid on a copy, kept only when every effect showed as stated.
    const laid = group.exact ? [...work] : work;
    let asStated = true;
    for (const effect of group.effects) {
      if (effect.insert) {
        const { id, values, placement = 'sorted' } = effect.insert;
        if (held.has(keyOf(id)) || laid.some((r) => r.key === keyOf(id))) continue;
        const row = { key: keyOf(id), id, values: columns.map((c) => (c in values ? values[c] : null)), pending: true, inserted: true };
        const at = place(row, placement, laid);
        if (at) laid.splice(at.index, 0, { ...row, section: at.section });
        else asStated = false;
      } else if (effect.update) {
        const { id, values } = effect.update;
        const index = laid.findIndex((r) => r.key === keyOf(id));
        if (index < 0) {
          if (held.has(keyOf(id))) asStated = false;   // held, and an earlier effect took it out
          continue;
        }
        const old = laid[index];
        const next = columns.map((c, i) => (c in values ? values[c] : old.values[i]));
        if (next.every((v, i) => v === old.values[i])) continue;
        laid.splice(index, 1);
        const at = place({ ...old, values: next }, 'sorted', laid);
        if (!at) asStated = false;
        if (at && (at.index !== index || at.section !== old.section)) laid.splice(at.index, 0, { ...old, values: next, section: at.section, pending: true });
        else laid.splice(index, 0, { ...old, values: next, pending: true });
      } else {
        const index = laid.findIndex((r) => r.key === keyOf(effect.delete.id));
        if (index >= 0) laid.splice(index, 1);
        else if (held.has(keyOf(effect.delete.id))) asStated = false;
      }
    }
    if (group.exact && asStated) work = laid;
    if (group.exact && !asStated) dropped += 1;
  }
  const rows = [...all.slice(0, start), ...work, ...all.slice(end)];
  // A section the effects emptied is gone (a list without sections keeps its one section).
  const shownSections = keys.map((_, s) => s).filter((s) => !sectioned || rows.some((r) => r.section === s));
  return { rows, start, regionCount: work.length, dropped, keys: shownSections.map((s) => keys[s]), counts: shownSections.map((s) => rows.filter((r) => r.section === s).length) };
}

function randomValue(random) {
  const choice = random(12);
  if (choice === 0) return null;
  if (choice === 1) return ['a', 'b'][random(2)];
  return random(10) * 10;
}

/** A random mutation's effects on the list: 1–3 inserts, updates and deletes of rows held, pending, or not. */
function randomGroup(random, rows, nextId, pendingIds) {
  const group = [];
  const someId = () => {
    const choice = random(4);
    if (choice === 0 && pendingIds.length) return pendingIds[random(pendingIds.length)];
    if (choice < 3 && rows.length) return rows[random(rows.length)].id;
    return 1000 + random(50);
  };
  for (let n = 1 + random(3); n > 0; n--) {
    const kind = random(6);
    if (kind < 3) {
      const id = random(5) === 0 ? someId() : nextId();
      const values = { sec: 1 + random(4), val: randomValue(random) };
      if (random(2)) values.id = id;
      const placement = random(5) === 0 ? { [random(2) ? 'first' : 'last']: random(6) } : random(2) ? 'sorted' : undefined;
      group.push({ insert: { id, values, ...(placement === undefined ? {} : { placement }) } });
    } else if (kind < 5) {
      const values = {};
      if (random(3)) values.val = randomValue(random);
      if (random(3) === 0) values.sec = 1 + random(4);
      group.push({ update: { id: someId(), values } });
    } else {
      group.push({ delete: { id: someId() } });
    }
  }
  return group;
}

/** The server's next rows: random commits of others, and perhaps a pending group's commit. */
function randomCommit(random, rows, nextId, committed) {
  const next = rows.map((r) => ({ ...r }));
  for (let n = random(4); n > 0; n--) {
    const kind = random(5);
    if (kind === 0 || next.length === 0) next.splice(random(next.length + 1), 0, { id: nextId(), sec: 1 + random(4), val: randomValue(random) });
    else if (kind === 1) next.splice(random(next.length), 1);
    else if (kind === 2) next[random(next.length)].val = randomValue(random);
    else if (kind === 3) next[random(next.length)].sec = 1 + random(4);
    else { const [row] = next.splice(random(next.length), 1); next.splice(random(next.length + 1), 0, row); }   // (unordered lists: a move)
  }
  for (const effect of committed ?? []) {
    if (effect.insert) {
      const { id, values } = effect.insert;
      if (typeof id !== 'number' || next.some((r) => r.id === id)) continue;
      // The server's values: the expected ones, or not quite.
      next.splice(random(next.length + 1), 0, { id, sec: values.sec ?? 1, val: random(3) ? values.val ?? null : randomValue(random) });
    } else if (effect.update) {
      const row = next.find((r) => r.id === effect.update.id);
      if (row) Object.assign(row, effect.update.values);
    } else {
      const index = next.findIndex((r) => r.id === effect.delete.id);
      if (index >= 0) next.splice(index, 1);
    }
  }
  return next;
}

/** Checks `displayed` against the naive list: counts, sections, the region's rows, and what is unknown outside it. */
function checkDisplayed(displayed, expected, model, groups, context) {
  assert.equal(displayed.count, expected.rows.length, `${context}: count`);
  assert.deepEqual(displayed.sections.keys, expected.keys, `${context}: section keys`);
  assert.deepEqual(displayed.sections.counts, expected.counts, `${context}: section counts`);
  const regionEnd = expected.start + expected.regionCount;
  const seen = new Set();
  for (let p = 0; p < expected.rows.length; p++) {
    const row = displayed.row(p);
    if (p < expected.start || p >= regionEnd) {
      assert.equal(row, null, `${context}: a row outside the window at ${p}`);
      continue;
    }
    const want = expected.rows[p];
    assert.ok(row, `${context}: no row at ${p}`);
    assert.deepEqual([row.key, row.values, row.pending], [want.key, want.values, want.pending], `${context}: row at ${p}`);
    assert.equal(displayed.positionOf(row.key), p, `${context}: positionOf ${row.key}`);
    assert.ok(!seen.has(row.key), `${context}: ${row.key} twice`);
    seen.add(row.key);
  }
  if (groups.length === 0) {
    // Nothing pending: the server's list itself.
    assert.equal(displayed.count, model.count, context);
    assert.equal(displayed.sections, model.sections, context);
    for (let p = 0; p < model.count; p++) {
      const server = model.row(p), row = displayed.row(p);
      assert.deepEqual(row && [row.key, row.values, row.stamp, row.pending], server && [server.key, server.values, server.stamp, false], `${context}: ${p}`);
    }
  }
}

/**
 * Checks one transition of the displayed list against the lists before and after (their
 * identities at every position, known to the test): surviving rows pair both ways, each with the
 * row of the same identity; applying it by position to the list before gives the list after; a
 * row shown on both sides is paired (moved), unless the server's changes deleted and inserted it.
 */
function checkTransition(transition, before, after, reinserted, context) {
  const oldKeys = before.rows.map((r) => r.key), newKeys = after.rows.map((r) => r.key);
  assert.equal(transition.from.count, oldKeys.length, context);
  assert.equal(transition.to.count, newKeys.length, context);
  const applied = new Array(newKeys.length).fill(null);
  for (let x = 0; x < oldKeys.length; x++) {
    const y = transition.newPosition(x);
    if (y === null) continue;
    assert.ok(y >= 0 && y < newKeys.length, `${context}: ${x} → ${y}`);
    assert.equal(transition.oldPosition(y), x, `${context}: ${x} → ${y} → back`);
    assert.equal(applied[y], null, `${context}: two rows to ${y}`);
    applied[y] = oldKeys[x];
  }
  for (let y = 0; y < newKeys.length; y++) {
    const x = transition.oldPosition(y);
    if (x === null) { applied[y] = newKeys[y]; continue; }   // inserted
    assert.equal(transition.newPosition(x), y, `${context}: ${y} ← ${x}`);
  }
  assert.deepEqual(applied, newKeys, `${context}: the transition applied to the list before`);
  // Rows shown in both windows, the same row: pending ones always, server ones unless the server re-inserted them.
  const region = (list) => new Map(list.rows.slice(list.start, list.start + list.regionCount).map((r, i) => [r.key, { at: list.start + i, inserted: r.inserted }]));
  const oldRegion = region(before), newRegion = region(after);
  for (const [key, old] of oldRegion) {
    const now = newRegion.get(key);
    if (!now) continue;
    if (reinserted.has(key) && !old.inserted && !now.inserted) continue;
    assert.equal(transition.newPosition(old.at), now.at, `${context}: ${key} from ${old.at} to ${now.at}`);
  }
}

test('Random server transitions, windows and pending effects (exact or not): the displayed list is the naive one, and every transition leads to it (seeded)', () => {
  const random = generator(seed + 7n);
  let checks = 0, pendingShown = 0, absorbedByCommits = 0, exactDropped = 0, sectionsEmptied = 0;
  for (let round = 0; round < 300; round++) {
    const kind = ['sectioned', 'flat', 'unordered'][random(3)];
    let id = 0;
    const nextId = () => ++id;
    let rows = Array.from({ length: random(25) }, () => ({ id: nextId(), sec: 1 + random(4), val: randomValue(random) }));
    let sections = layout(rows, kind);
    let window = (() => { const start = random(rows.length + 2); return [start, start + random(16)]; })();
    let version = 1;
    const model = new ListModel();
    model.receive(resetMessage(sections, `e:${version}`, window, kind));
    const groups = new Map();
    let nextGroup = 0;
    let displayed = resolvePending(model, []);
    let expected = naiveDisplayed(sections, window, [], kind);
    for (let step = 0; step < 40; step++) {
      const context = `seed ${seed} round ${round} step ${step} (${kind})`;
      const action = random(10);
      let server = null, reinserted = new Set(), reset = false;
      if (action < 3) {
        const pendingIds = [...groups.values()].flatMap((g) => g.effects).filter((e) => e.insert).map((e) => e.insert.id);
        const group = randomGroup(random, flat(sections).filter((_, p) => p >= window[0] - 2 && p < window[1] + 2), nextId, pendingIds);
        groups.set(`g${nextGroup++}`, { effects: group, exact: random(2) === 0 });
      } else if (action < 5) {
        if (groups.size) groups.delete([...groups.keys()][random(groups.size)]);
      } else if (action < 8) {
        // A commit: others', and perhaps one of the pending groups' (the server applied it).
        const committed = groups.size && random(2) ? [...groups.values()][random(groups.size)].effects : null;
        const nextRows = randomCommit(random, rows, nextId, committed);
        const nextSections = layout(nextRows, kind);
        const { message, reinserted: again } = changesMessage(sections, nextSections, `e:${version}`, `e:${version + 1}`, window);
        version += 1;
        const output = model.receive(JSON.parse(JSON.stringify(message)));
        assert.equal(output.type, 'changes', context);
        server = serverPositionMapping(output.oldSections, model.sections, output.mapping);
        reinserted = new Set([...again].map(keyOf));
        rows = nextRows;
        sections = nextSections;
      } else if (action < 9) {
        // The window moves: a `rows` answer.
        const start = random(rows.length + 2);
        window = [start, start + random(16)];
        model.didRequest(window);
        model.receive(rowsMessage(sections, `e:${version}`, window));
      } else {
        reset = true;
        version += 1;
        model.receive(resetMessage(sections, `e:${version}`, window, kind));
      }
      const groupList = [...groups.values()];
      const next = resolvePending(model, groupList.map((g) => ({ effects: g.effects.map((e) => new PendingEffect(e)), exact: g.exact })), displayed);
      const nextExpected = naiveDisplayed(sections, window, groupList, kind);
      checkDisplayed(next, nextExpected, model, groupList, context);
      if (!reset) checkTransition(new DisplayedTransition(displayed, next, server), expected, nextExpected, reinserted, context);
      if (next.hasPending) pendingShown += 1;
      exactDropped += nextExpected.dropped;
      if (nextExpected.keys.length < model.sections.length) sectionsEmptied += 1;
      if (displayed.hasPending && !next.hasPending && groups.size) absorbedByCommits += 1;
      displayed = next;
      expected = nextExpected;
      checks += 1;
    }
  }
  console.log(`pending rows: ${checks} steps checked, ${pendingShown} with pending rows shown, ${absorbedByCommits} where commits absorbed every effect, `
    + `${exactDropped} exact groups not shown, ${sectionsEmptied} with a section emptied`);
  assert.ok(pendingShown > checks / 5, 'the random effects show often enough to test something');
  assert.ok(exactDropped > checks / 20 && sectionsEmptied > 5, 'exact groups and emptied sections often enough');
});

// ---------------------------------------------------------------------------------------------
// The live query and the mutator: effects shown at once, until the list holds the commit

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

async function liveInbox(rows, kind, window = [0, 100]) {
  const live = new LiveQuery('ws://host/live', 'inbox', { WebSocket: FakeSocket, window, prefetch: 0 });
  const events = [];
  live.onEvent = (event) => events.push(event);
  live.start();
  await tick();
  const socket = FakeSocket.sockets.at(-1);
  socket.serve(resetMessage(layout(rows, kind), 'e:1', window, kind));
  return { live, socket, events };
}

test('mutate with effects shows them before it returns, removes them once the list has synced after mutated, and at once on a refusal', async () => {
  FakeSocket.sockets = [];
  const rows = Array.from({ length: 10 }, (_, i) => ({ id: i + 1, sec: 1, val: 10 * i }));
  const { live, socket, events } = await liveInbox(rows, 'flat');
  const mutator = new Mutator('ws://host/live', 'web-1', { WebSocket: FakeSocket });
  const archived = mutator.mutate('archive', { id: 3 }, { effects: [{ list: live, delete: { id: 3 } }, { list: live, update: { id: 5, values: { val: 95 } } }] });
  // Shown synchronously, before anything was sent or answered.
  assert.equal(live.displayed.count, 9);
  assert.equal(live.displayed.positionOf(keyOf(3)), null);
  assert.deepEqual(live.displayed.row(8), { key: '5', id: 5, values: [5, 1, 95], stamp: live.displayed.row(8).stamp, pending: true });
  assert.equal(live.model.count, 10, 'the server\'s list is as it was');
  const pendingEvent = events.at(-1);
  assert.equal(pendingEvent.type, 'pending');
  assert.equal(pendingEvent.transition.newPosition(2), null);
  assert.equal(pendingEvent.transition.newPosition(4), 8);
  assert.equal(pendingEvent.transition.newPosition(9), 7);
  await tick();
  const mutations = FakeSocket.sockets.at(-1);
  assert.deepEqual(mutations.sent.map((m) => [m.id, m.name]), [[1, 'archive']]);
  // The server's changeset with the commit: row 3 deleted, row 5 at its new place. The effects
  // still there do nothing: the list is the server's, and row 5 moved as itself.
  const now = rows.filter((r) => r.id !== 3).map((r) => (r.id === 5 ? { ...r, val: 95 } : r));
  const { message } = changesMessage(layout(rows, 'flat'), layout(now, 'flat'), 'e:1', 'e:2', [0, 100]);
  socket.serve(message);
  const changes = events.at(-1);
  assert.equal(changes.type, 'changes');
  assert.equal(live.displayed.hasPending, false);
  assert.equal(changes.transition.newPosition(8), 8, 'the pending row 5 is the server\'s row 5, where it was');
  mutations.serve({ type: 'mutated', client: 'web-1', id: 1, versions: {}, duplicate: false });
  assert.equal((await archived).id, 1);
  // Removed only once the list has synced.
  assert.equal(live.pendingCount, 1);
  const sync = socket.sent.at(-1);
  assert.deepEqual(sync, { type: 'sync', sub: 1, id: sync.id });
  socket.serve({ sub: 1, type: 'synced', id: sync.id, version: 'e:2' });
  await tick();
  assert.equal(live.pendingCount, 0);
  // A refusal takes the effects back at once, in one transition, and rejects.
  const sent = mutator.mutate('send', { subject: 'x' }, { effects: [{ list: live, insert: { id: 100, values: { id: 100, sec: 1, val: 15 } } }] });
  assert.equal(live.displayed.positionOf(keyOf(100)), 2);
  assert.equal(live.displayed.row(2).pending, true);
  mutations.serve({ type: 'error', mutation: { client: 'web-1', id: 2 }, code: 'badArguments', message: 'id: unknown' });
  assert.equal(live.pendingCount, 0);
  assert.equal(live.displayed.positionOf(keyOf(100)), null);
  assert.equal(events.at(-1).type, 'pending');
  assert.equal(events.at(-1).transition.newPosition(2), null);
  await assert.rejects(sent, (error) => error instanceof MutationError && error.code === 'badArguments');
  // A malformed effect rejects the call and sends nothing.
  await assert.rejects(mutator.mutate('archive', { id: 1 }, { effects: [{ list: live, delete: {} }] }), TypeError);
  assert.equal(mutator.nextId, 3);
  // Existing calls without effects work as before.
  const plain = mutator.mutate('archive', { id: 4 });
  assert.equal(live.pendingCount, 0);
  mutations.serve({ type: 'mutated', client: 'web-1', id: 3, versions: {}, duplicate: false });
  assert.equal((await plain).id, 3);
  mutator.stop();
  live.stop();
});

test('A sync outlives a lost connection (sent again on the next subscription); stopping rejects it and takes the effects back', async () => {
  FakeSocket.sockets = [];
  const rows = Array.from({ length: 5 }, (_, i) => ({ id: i + 1, sec: 1, val: 10 * i }));
  const { live, socket } = await liveInbox(rows, 'flat');
  const synced = live.sync();
  const first = socket.sent.at(-1);
  assert.equal(first.type, 'sync');
  socket.onclose({ code: 1006, reason: '' });
  live.retry();
  await tick();
  const second = FakeSocket.sockets.at(-1);
  assert.equal(second.sent.at(-1).type, 'subscribe');
  // Not before the new subscription's first answer.
  assert.equal(second.sent.filter((m) => m.type === 'sync').length, 0);
  second.serve({ sub: 2, type: 'changes', from: 'e:1', to: 'e:2' });
  const again = second.sent.at(-1);
  assert.deepEqual(again, { type: 'sync', sub: 2, id: first.id });
  second.serve({ sub: 2, type: 'synced', id: first.id, version: 'e:2' });
  assert.equal(await synced, 'e:2');
  // Stopped: the sync rejects, and a mutator's effects waiting for it go.
  const mutator = new Mutator('ws://host/live', 'web-2', { WebSocket: FakeSocket });
  const done = mutator.mutate('archive', { id: 2 }, { effects: [{ list: live, delete: { id: 2 } }] });
  await tick();
  FakeSocket.sockets.at(-1).serve({ type: 'mutated', client: 'web-2', id: 1, versions: {}, duplicate: false });
  await done;
  assert.equal(live.pendingCount, 1);
  live.stop();
  await tick();
  assert.equal(live.pendingCount, 0);
  await assert.rejects(live.sync());
  mutator.stop();
});

test('The window asked for is in the server\'s positions: pending rows shift the displayed ones', async () => {
  FakeSocket.sockets = [];
  const rows = Array.from({ length: 300 }, (_, i) => ({ id: i + 1, sec: 1, val: i }));
  const { live, socket } = await liveInbox(rows, 'flat', [0, 50]);
  live.addPending('k', [{ insert: { id: 1000, values: { val: 10 } } }, { insert: { id: 1001, values: { val: 11 } } }, { insert: { id: 1002, values: { val: 12 } } }]);
  assert.equal(live.displayed.count, 303);
  live.showRows(103, 113);   // displayed positions: the server's 100 ..< 110
  assert.deepEqual(socket.sent.at(-1), { type: 'window', sub: 1, window: [100, 10] });
  assert.deepEqual([11, 12, 13, 16].map((p) => live.displayed.row(p).id), [1000, 12, 1001, 14]);
  assert.equal(live.displayed.serverPosition(11), 11, 'a pending row: the nearest held');
  assert.equal(live.displayed.serverPosition(12), 11);
  assert.equal(live.displayed.serverPosition(16), 13);
  assert.equal(live.displayed.serverPosition(10), 10);
  live.stop();
});

test('A restored mutation\'s effects (show) appear before any connection, stay through stop, and go once its list has synced after its answer; a refused one\'s at once', async () => {
  FakeSocket.sockets = [];
  const rows = Array.from({ length: 10 }, (_, i) => ({ id: i + 1, sec: 1, val: 10 * i }));
  const { live, socket } = await liveInbox(rows, 'flat');
  const restored = [7, 8].map((id) => ({ type: 'mutate', client: 'web-3', id, name: id === 7 ? 'archive' : 'send', arguments: { id } }));
  const mutator = new Mutator('ws://host/live', 'web-3', { WebSocket: FakeSocket, nextId: 9, pending: restored });
  const sockets = FakeSocket.sockets.length;
  mutator.show([{ list: live, delete: { id: 3 } }, { list: live, update: { id: 5, values: { val: 95 } } }], 7);
  mutator.show([{ list: live, insert: { id: 100, values: { id: 100, sec: 1, val: 15 } } }], 8);
  // Shown at once, before the mutator connects.
  assert.equal(FakeSocket.sockets.length, sockets, 'no connection');
  assert.equal(live.pendingCount, 2);
  assert.equal(live.displayed.count, 10);
  assert.equal(live.displayed.positionOf(keyOf(3)), null);
  assert.deepEqual([live.displayed.row(2).id, live.displayed.row(2).pending], [100, true]);
  assert.deepEqual(live.displayed.row(9).values, [5, 1, 95]);
  assert.deepEqual(mutator.effects(7), [{ list: live, delete: { id: 3 } }, { list: live, update: { id: 5, values: { val: 95 } } }]);
  assert.deepEqual(mutator.effects(8), [{ list: live, insert: { id: 100, values: { id: 100, sec: 1, val: 15 }, placement: 'sorted' } }]);
  // No mutation 20 pending: nothing shown; a malformed effect shows none of them.
  mutator.show([{ list: live, delete: { id: 1 } }], 20);
  assert.deepEqual(mutator.effects(20), []);
  assert.throws(() => mutator.show([{ list: live, delete: { id: 1 } }, { list: live, delete: {} }], 7), TypeError);
  assert.equal(mutator.effects(7).length, 2);
  assert.equal(live.displayed.count, 10);
  // Stopped, connected or not: still pending, still shown.
  mutator.stop();
  assert.equal(live.pendingCount, 2);
  mutator.start();
  await tick();
  const mutations = FakeSocket.sockets.at(-1);
  assert.deepEqual(mutations.sent.map((m) => m.id), [7, 8]);
  mutator.stop();
  assert.equal(live.pendingCount, 2);
  assert.equal(live.displayed.positionOf(keyOf(3)), null);
  mutator.start();
  await tick();
  const again = FakeSocket.sockets.at(-1);
  assert.deepEqual(again.sent.map((m) => m.id), [7, 8]);
  // Refused, with no caller waiting: taken back at once.
  again.serve({ type: 'error', mutation: { client: 'web-3', id: 8 }, code: 'conflict', message: 'taken' });
  assert.equal(live.pendingCount, 1);
  assert.equal(live.displayed.positionOf(keyOf(100)), null);
  assert.deepEqual(mutator.effects(8), []);
  // Applied: shown until the list holds the commit (its sync answered), then the server's rows.
  const syncs = () => socket.sent.filter((m) => m.type === 'sync');
  assert.equal(syncs().length, 0);
  again.serve({ type: 'mutated', client: 'web-3', id: 7, versions: {}, duplicate: false });
  assert.equal(mutator.pendingCount, 0);
  assert.equal(live.pendingCount, 1, 'not before the list has synced');
  assert.equal(syncs().length, 1);
  await tick();
  assert.equal(live.pendingCount, 1);
  const now = rows.filter((r) => r.id !== 3).map((r) => (r.id === 5 ? { ...r, val: 95 } : r));
  socket.serve(changesMessage(layout(rows, 'flat'), layout(now, 'flat'), 'e:1', 'e:2', [0, 100]).message);
  socket.serve({ sub: 1, type: 'synced', id: syncs()[0].id, version: 'e:2' });
  await tick();
  assert.equal(live.pendingCount, 0);
  assert.deepEqual(mutator.effects(7), []);
  assert.equal(live.displayed.count, 9);
  mutator.stop();
  live.stop();
});

test('A call that stopped waiting (stop) leaves its effects shown; they go once its mutation is answered after a restart and the list has synced', async () => {
  FakeSocket.sockets = [];
  const rows = Array.from({ length: 5 }, (_, i) => ({ id: i + 1, sec: 1, val: 10 * i }));
  const { live, socket } = await liveInbox(rows, 'flat');
  const mutator = new Mutator('ws://host/live', 'web-4', { WebSocket: FakeSocket });
  const call = mutator.mutate('archive', { id: 2 }, { effects: [{ list: live, delete: { id: 2 } }] });
  await tick();
  mutator.stop();
  await assert.rejects(call, (error) => error instanceof MutationError && error.code === 'stopped');
  assert.equal(live.pendingCount, 1, 'still pending: still shown');
  assert.equal(live.displayed.positionOf(keyOf(2)), null);
  assert.deepEqual(mutator.effects(1), [{ list: live, delete: { id: 2 } }]);
  mutator.start();
  await tick();
  const mutations = FakeSocket.sockets.at(-1);
  assert.deepEqual(mutations.sent.map((m) => m.id), [1]);
  mutations.serve({ type: 'mutated', client: 'web-4', id: 1, versions: {}, duplicate: false });
  assert.equal(live.pendingCount, 1);
  const sync = socket.sent.at(-1);
  assert.equal(sync.type, 'sync');
  socket.serve({ sub: 1, type: 'changes', from: 'e:1', to: 'e:2', deletes: [[0, 1]] });
  socket.serve({ sub: 1, type: 'synced', id: sync.id, version: 'e:2' });
  await tick();
  assert.equal(live.pendingCount, 0);
  assert.equal(live.displayed.count, 4);
  mutator.stop();
  live.stop();
});
