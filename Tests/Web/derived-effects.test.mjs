// Pending rows the server derives (docs/PROTOCOL.md, "What mutations do to the list", "Effects the
// server states") in Web/livelist.js, under Node's test runner: node --test Tests/Web/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Connection, ListModel, LiveQuery, MutationError, Mutator, PendingEffect, ProtocolError, Real, deriveEffects, parseEffects, resolvePending } from '../../Web/livelist.js';
import { FakeSocket } from './support.mjs';

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));
const identity = { column: null, descending: false, nullsFirst: true };

/**
 * A message list: columns id, sender, subject (the table `message` also has folder, owner and
 * unread, not shown), filtered on folder, ordered by subject then id.
 */
const inboxColumns = ['id', 'sender', 'subject'];
const inboxOrder = [{ column: 2, descending: false, nullsFirst: true }, identity];
function inboxEffects(folder, mutations, extra = {}) {
  return { table: 'message', identity: 'id', columns: ['id', 'sender', 'subject'], filter: [{ column: 'folder', op: '=', operand: { value: folder } }], mutations, ...extra };
}
const rowsOf = (rows) => rows.map((row, position) => [position, row[0], row]);

function reset({ columns = inboxColumns, rows = [], order = inboxOrder, effects, window = [0, 100], version = 'e:1', sub = 1 }) {
  const message = { sub, type: 'reset', version, reason: 'subscribed', columns, sections: [[null, rows.length]], window, rows: rowsOf(rows).filter(([p]) => p >= window[0] && p < window[0] + window[1]) };
  if (order) message.order = order;
  if (effects !== undefined) message.effects = effects;
  return message;
}

function model(options) {
  const list = new ListModel();
  list.receive(reset(options));
  return list;
}

const inbox = [[1, 'Ada', 'apples'], [2, 'Bob', 'cherries'], [3, 'Cy', 'figs']];

/** The list shown with `derivation`'s effects laid: [id, values, pending] per position. */
function shown(list, derivation) {
  const displayed = resolvePending(list, [derivation.effects.map((effect) => new PendingEffect(effect))]);
  const rows = [];
  for (let position = 0; position < displayed.count; position++) {
    const row = displayed.row(position);
    rows.push([row.id, row.values, row.pending]);
  }
  return rows;
}

const send = [{ insert: { values: { id: { arg: 'id' }, sender: { arg: 'sender' }, subject: { arg: 'subject' }, folder: { value: 'work' }, unread: { value: 1 }, sent: null } } }];
const rename = [{ update: { key: { arg: 'id' }, where: [], set: { subject: { arg: 'subject' } } } }];
const archive = [{ update: { key: { arg: 'id' }, where: [], set: { folder: { value: 'archive' }, version: null } } }];
const unarchive = [{ update: { key: { arg: 'id' }, where: [], set: { folder: { value: 'work' } } } }];
const remove = [{ delete: { key: { arg: 'id' }, where: [{ column: 'sender', op: '=', operand: { value: 'Ada' } }] } }];

// ---------------------------------------------------------------------------------------------
// Reading `effects`

test('A reset\'s effects are read, kept across changes (of any epoch), and written back by heldList', () => {
  const effects = inboxEffects('work', { send, rename, remove });
  const list = model({ rows: inbox, effects });
  assert.deepEqual([...list.effects.mutations.keys()], ['send', 'rename', 'remove']);
  assert.equal(list.effects.table, 'message');
  assert.deepEqual(list.effects.filter, [{ column: 'folder', op: '=', operand: { kind: 'value', value: 'work' }, collation: 'binary' }]);
  assert.deepEqual(list.effects.mutations.get('send')[0].values.get('sent'), null, 'null: a value the server cannot state');
  assert.deepEqual(list.effects.mutations.get('send')[0].values.get('id'), { kind: 'arg', name: 'id', hasDefault: false, fallback: null });
  // A snapshot keeps them: a list restored and resumed with changes still derives.
  const held = list.heldList();
  assert.deepEqual(held.effects, effects);
  const restored = new ListModel();
  restored.receive(held);
  assert.deepEqual(restored.effects, list.effects);
  const stated = list.effects, order = list.order;
  list.receive({ sub: 1, type: 'changes', from: 'e:1', to: 'e:2' });
  assert.equal(list.effects, stated, 'the same live query: they stand');
  // Changes to another epoch that restate nothing (not the answer to arguments): they stand too.
  list.receive({ sub: 1, type: 'changes', from: 'e:2', to: 'f:7' });
  assert.equal(list.effects, stated);
  assert.equal(list.order, order);
  list.receive({ sub: 1, type: 'changes', from: 'f:7', to: 'f:8', restated: false });
  assert.equal(list.effects, stated, '"restated":false restates nothing');
});

test('The changes that answer arguments (restated) replace the list\'s order and effects with theirs; one absent is none', () => {
  const list = model({ rows: inbox, effects: inboxEffects('work', { send, rename, remove }) });
  // New arguments: the archive, sorted by sender descending, with its own mutations (same epoch or not).
  const archiveEffects = inboxEffects('archive', { unarchive });
  const bySender = [{ column: 1, descending: true, nullsFirst: false }, identity];
  list.receive({ sub: 1, type: 'changes', from: 'e:1', to: 'e:2', restated: true, order: bySender, effects: archiveEffects });
  assert.deepEqual([...list.effects.mutations.keys()], ['unarchive']);
  assert.deepEqual(list.effects.filter[0].operand, { kind: 'value', value: 'archive' });
  assert.deepEqual(list.order.map(({ column, descending }) => [column, descending]), [[1, true], [null, false]]);
  assert.deepEqual(list.heldList().effects, archiveEffects, 'heldList writes the new ones back');
  assert.deepEqual(list.heldList().order.map(({ column }) => column), [1, null]);
  assert.equal(deriveEffects(list, 'send', { id: 9, sender: 'Z', subject: 'b' }).notStated, true, 'the old mutations are gone');
  assert.deepEqual(deriveEffects(list, 'unarchive', { id: 3 }).effects, [{ delete: { id: 3 } }], 'the new filter decides: back to work, out of the archive');
  // Restated without effects: none; without order: none (only the one stated stays).
  list.receive({ sub: 1, type: 'changes', from: 'e:2', to: 'g:1', restated: true, order: bySender });
  assert.equal(list.effects, null);
  assert.equal(list.heldList().effects, undefined);
  assert.notEqual(list.order, null);
  list.receive({ sub: 1, type: 'changes', from: 'g:1', to: 'g:2', restated: true, effects: archiveEffects });
  assert.equal(list.order, null);
  assert.equal(list.heldList().order, undefined);
  assert.notEqual(list.effects, null);
  list.receive({ sub: 1, type: 'changes', from: 'g:2', to: 'g:3', restated: true });
  assert.deepEqual([list.order, list.effects], [null, null]);
  // Unreadable ones are none, as a reset's are; a restated that is not a boolean is malformed, and changes nothing.
  list.receive({ sub: 1, type: 'changes', from: 'g:3', to: 'g:4', restated: true, order: [{ column: 9, descending: false, nullsFirst: true }, identity],
    effects: { ...archiveEffects, filter: 'x' } });
  assert.deepEqual([list.order, list.effects], [null, null]);
  assert.throws(() => list.receive({ sub: 1, type: 'changes', from: 'g:4', to: 'g:5', restated: 1, order: bySender }), (error) => error instanceof ProtocolError);
  assert.equal(list.version, 'g:4');
  assert.equal(list.order, null);
});

test('Malformed effects leave the reset standing without them (as an unreadable order); one unreadable mutation is left out alone', () => {
  const good = inboxEffects('work', { send });
  const malformed = [
    null, 'effects', [], { ...good, table: 1 }, { ...good, identity: undefined }, { ...good, columns: ['id', 'sender'] },
    { ...good, columns: ['id', 'sender', 3] }, { ...good, filter: undefined }, { ...good, filter: [{ column: 'folder', op: 'like', operand: { value: 'w%' } }] },
    { ...good, filter: [{ column: 'folder', op: '=', operand: { arg: 'folder' } }] }, { ...good, filter: [{ column: 'folder', op: '=', operand: { value: 1.5 } }] },
    { ...good, filter: [{ column: 'folder', op: '=', operand: { value: 'w' }, collation: 'unicode' }] }, { ...good, mutations: [] }, { ...good, mutations: undefined },
  ];
  for (const effects of malformed) {
    const list = model({ rows: inbox, effects });
    assert.equal(list.effects, null, JSON.stringify(effects));
    assert.equal(list.count, 3, 'the reset stands');
    assert.notEqual(list.order, null);
    assert.equal(list.heldList().effects, undefined);
  }
  const partly = model({ rows: inbox, effects: inboxEffects('work', {
    send, rename,
    upsert: [{ upsert: { values: {} } }], two: [{ insert: { values: {} }, delete: { key: { value: 1 }, where: [] } }],
    badValue: [{ insert: { values: { id: { value: { i: 'x' } } } } }], both: [{ delete: { key: { value: 1, arg: 'id' }, where: [] } }],
    noWhere: [{ delete: { key: { value: 1 } } }], notArray: { insert: { values: {} } }, badOp: [{ delete: { key: { value: 1 }, where: [{ column: 'x', op: '~' }] } }],
  }) });
  assert.deepEqual([...partly.effects.mutations.keys()], ['send', 'rename']);
  assert.equal(parseEffects(good, 2), null, 'a column per column of the reset');
  assert.notEqual(parseEffects({ ...good, later: 'a field of a later version' }, 3), null);
});

// ---------------------------------------------------------------------------------------------
// The rules, one by one

test('An insert that meets the filter is inserted at its sorted place with its values; one that does not, or whose values are not all known, is not', () => {
  const list = model({ rows: inbox, effects: inboxEffects('work', {
    send, sendArchived: [{ insert: { values: { ...send[0].insert.values, folder: { value: 'archive' } } } }],
    sendUnstated: [{ insert: { values: { ...send[0].insert.values, subject: null } } }],
    sendSomewhere: [{ insert: { values: { ...send[0].insert.values, folder: { arg: 'folder' } } } }],
    sendNumbered: [{ insert: { values: { ...send[0].insert.values, id: null } } }],
  }) });
  const derived = deriveEffects(list, 'send', { id: 9, sender: 'Zed', subject: 'bananas' });
  assert.deepEqual(derived, { effects: [{ insert: { id: 9, values: { id: 9, sender: 'Zed', subject: 'bananas' }, placement: 'sorted' } }], stopped: null, notStated: false });
  assert.deepEqual(shown(list, derived), [[1, [1, 'Ada', 'apples'], false], [9, [9, 'Zed', 'bananas'], true], [2, [2, 'Bob', 'cherries'], false], [3, [3, 'Cy', 'figs'], false]]);
  assert.deepEqual(deriveEffects(list, 'sendArchived', { id: 9, sender: 'Zed', subject: 'b' }).effects, [], 'not in the list');
  assert.equal(deriveEffects(list, 'sendArchived', { id: 9, sender: 'Zed', subject: 'b' }).stopped, null);
  assert.equal(deriveEffects(list, 'sendUnstated', { id: 9, sender: 'Zed' }).stopped, 'unknownColumn', 'a value shown the server cannot state');
  assert.equal(deriveEffects(list, 'sendSomewhere', { id: 9, sender: 'Zed', subject: 'b' }).stopped, 'unknownOperand', 'the filter needs an argument not given');
  assert.equal(deriveEffects(list, 'sendSomewhere', { id: 9, sender: 'Zed', subject: 'b', folder: 'work' }).effects.length, 1);
  assert.equal(deriveEffects(list, 'sendNumbered', { sender: 'Zed', subject: 'b' }).stopped, 'unknownIdentity', 'the database numbers it');
  assert.equal(deriveEffects(list, 'send', { id: null, sender: 'Zed', subject: 'b' }).stopped, 'unknownIdentity', 'NULL: the database numbers it');
  assert.equal(deriveEffects(list, 'send', { id: 2, sender: 'Zed', subject: 'b' }).stopped, 'identityTaken');
  // A mutation the reset does not state, or a list without effects: nothing, and said so.
  assert.equal(deriveEffects(list, 'archive', { id: 1 }).notStated, true);
  assert.equal(deriveEffects(model({ rows: inbox }), 'send', { id: 9, sender: 'Zed', subject: 'b' }).notStated, true);
  // A list without an order: the insert is derived, and not shown (its place is not known).
  const unordered = model({ rows: inbox, order: null, effects: inboxEffects('work', { send }) });
  const unplaced = deriveEffects(unordered, 'send', { id: 9, sender: 'Zed', subject: 'bananas' });
  assert.equal(unplaced.effects.length, 1);
  assert.equal(shown(unordered, unplaced).length, 3);
});

test('An update of a held row changes it in place or moves it by the order, or deletes it when it leaves the filter; its where decides', () => {
  const list = model({ rows: inbox, effects: inboxEffects('work', {
    rename, archive, setSender: [{ update: { key: { arg: 'id' }, where: [{ column: 'sender', op: '<>', operand: { value: 'Bob' } }], set: { sender: { arg: 'sender' } } } }],
    touchOwner: [{ update: { key: { arg: 'id' }, where: [{ column: 'owner', op: '=', operand: { value: 'ada' } }], set: { sender: { value: 'X' } } } }],
    hideOwner: [{ update: { key: { arg: 'id' }, where: [], set: { owner: { value: 'bob' } } } }],
  }) });
  // Staying, moving by its subject: the update names the columns that change.
  const moved = deriveEffects(list, 'rename', { id: 1, subject: 'grapes' });
  assert.deepEqual(moved.effects, [{ update: { id: 1, values: { subject: 'grapes' } } }]);
  assert.deepEqual(shown(list, moved), [[2, [2, 'Bob', 'cherries'], false], [3, [3, 'Cy', 'figs'], false], [1, [1, 'Ada', 'grapes'], true]]);
  // Staying in place (folder, not shown, is 'work' in every row of the list: its filter says so).
  const renamed = deriveEffects(list, 'setSender', { id: 3, sender: 'Dee' });
  assert.deepEqual(shown(list, renamed).at(-1), [3, [3, 'Dee', 'figs'], true]);
  assert.deepEqual(deriveEffects(list, 'setSender', { id: 2, sender: 'Dee' }), { effects: [], stopped: null, notStated: false }, 'where not met');
  assert.deepEqual(deriveEffects(list, 'rename', { id: 1, subject: 'apples' }).effects, [], 'the values it has already');
  // Leaving the filter: a delete.
  const archived = deriveEffects(list, 'archive', { id: 2 });
  assert.deepEqual(archived.effects, [{ delete: { id: 2 } }]);
  assert.deepEqual(shown(list, archived).map(([id]) => id), [1, 3]);
  // A where on a column the list does not show: not known.
  assert.equal(deriveEffects(list, 'touchOwner', { id: 2 }).stopped, 'unknownColumn');
  // A row no list holds: not known.
  assert.deepEqual(deriveEffects(list, 'archive', { id: 42 }), { effects: [], stopped: 'rowNotHeld', notStated: false });
  // Setting a column no one shows, off the filter: nothing changes on screen.
  assert.deepEqual(deriveEffects(list, 'hideOwner', { id: 2 }), { effects: [], stopped: null, notStated: false });
});

test('What a list\'s filter says of the columns it does not show: their value, when it compares them = with text under binary or with bytes; nothing else', () => {
  const mutations = {
    rename, unarchive,
    removeWork: [{ delete: { key: { arg: 'id' }, where: [{ column: 'folder', op: '=', operand: { value: 'work' } }] } }],
    removeUnread: [{ delete: { key: { arg: 'id' }, where: [{ column: 'unread', op: '=', operand: { value: 1 } }] } }],
  };
  const filtered = (filter) => model({ rows: inbox, effects: { ...inboxEffects('work', mutations), filter } });
  // folder = 'work' under binary: every row has it.
  const binary = filtered([{ column: 'folder', op: '=', operand: { value: 'work' } }]);
  assert.deepEqual(deriveEffects(binary, 'removeWork', { id: 1 }).effects, [{ delete: { id: 1 } }]);
  assert.deepEqual(deriveEffects(binary, 'rename', { id: 1, subject: 'grapes' }).effects, [{ update: { id: 1, values: { subject: 'grapes' } } }]);
  // Under nocase it may be stored 'WORK'; another comparison says no value; nor does a number
  // (1 or 1.0): not known, though the held row meets them.
  for (const filter of [[{ column: 'folder', op: '=', operand: { value: 'work' }, collation: 'nocase' }], [{ column: 'priority', op: '>', operand: { value: 3 } }]]) {
    assert.equal(deriveEffects(filtered(filter), 'removeWork', { id: 1 }).stopped, 'unknownColumn', JSON.stringify(filter));
    assert.equal(deriveEffects(filtered(filter), 'rename', { id: 1, subject: 'grapes' }).stopped, 'unknownColumn', JSON.stringify(filter));
  }
  assert.equal(deriveEffects(filtered([{ column: 'unread', op: '=', operand: { value: 1 } }]), 'removeUnread', { id: 1 }).stopped, 'unknownColumn');
  assert.deepEqual(deriveEffects(filtered([{ column: 'unread', op: '=', operand: { value: { b: 'AQ==' } } }]), 'removeUnread', { id: 1 }).effects, [], 'bytes are not the number 1');
  // A row another list holds gives its filter's values too: bytes shown, a number not.
  const columns = ['id', 'subject', 'unread'];
  const shown = model({ columns, rows: [[1, 'apples', 0]], effects: { ...inboxEffects('work', mutations), columns } });
  const archivedWith = (operand) => model({ rows: [[7, 'Eve', 'dates']], effects: { ...inboxEffects('archive', mutations), filter: [
    { column: 'folder', op: '=', operand: { value: 'archive' } }, { column: 'unread', op: '=', operand }] } });
  assert.equal(deriveEffects(shown, 'unarchive', { id: 7 }, [archivedWith({ value: 1 })]).stopped, 'unknownColumn');
  assert.deepEqual(deriveEffects(shown, 'unarchive', { id: 7 }, [archivedWith({ value: { b: 'AQ==' } })]).effects,
    [{ insert: { id: 7, values: { id: 7, subject: 'dates', unread: Uint8Array.of(1) }, placement: 'sorted' } }]);
  // A held row without its values (sent null): its filter's values still hold.
  const unloaded = new ListModel();
  unloaded.receive({ ...reset({ rows: inbox, effects: inboxEffects('work', mutations) }), rows: [[0, 1, null], [1, 2, [2, 'Bob', 'cherries']], [2, 3, [3, 'Cy', 'figs']]] });
  assert.deepEqual(deriveEffects(unloaded, 'removeWork', { id: 1 }).effects, [{ delete: { id: 1 } }]);
  assert.equal(deriveEffects(unloaded, 'rename', { id: 1, subject: 'x' }).stopped, 'unknownColumn');
  const removeAda = [{ delete: { key: { arg: 'id' }, where: [{ column: 'sender', op: '=', operand: { value: 'Ada' } }] } }];
  const ada = new ListModel();
  ada.receive({ ...reset({ rows: inbox.slice(0, 1), effects: { ...inboxEffects('work', { removeAda }), filter: [{ column: 'sender', op: '=', operand: { value: 'Ada' } }] } }), rows: [[0, 1, null]] });
  assert.deepEqual(deriveEffects(ada, 'removeAda', { id: 1 }).effects, [{ delete: { id: 1 } }], 'a column shown, its value not sent');
});

test('An update brings in a row another list over the same table holds, when it did not meet this filter before and does after', () => {
  const work = model({ rows: inbox, effects: inboxEffects('work', { unarchive, archive }) });
  const archived = model({ rows: [[7, 'Eve', 'dates'], [8, 'Fay', 'kiwis']], effects: inboxEffects('archive', { unarchive, archive }) });
  // The archive list does not show folder; its filter says what it is.
  const back = deriveEffects(work, 'unarchive', { id: 7 }, [work, archived]);
  assert.deepEqual(back.effects, [{ insert: { id: 7, values: { id: 7, sender: 'Eve', subject: 'dates' }, placement: 'sorted' } }]);
  assert.deepEqual(shown(work, back).map(([id, , pending]) => [id, pending]), [[1, false], [2, false], [7, true], [3, false]]);
  // The archive list, for the same mutation: its row leaves.
  assert.deepEqual(deriveEffects(archived, 'unarchive', { id: 7 }, [work, archived]).effects, [{ delete: { id: 7 } }]);
  // Without the other list: not held anywhere.
  assert.deepEqual(deriveEffects(work, 'unarchive', { id: 7 }), { effects: [], stopped: 'rowNotHeld', notStated: false });
  // A list over another table, or with another identity, is no source.
  const elsewhere = model({ rows: [[7, 'Eve', 'dates']], effects: { ...inboxEffects('archive', {}), table: 'draft' } });
  assert.equal(deriveEffects(work, 'unarchive', { id: 7 }, [elsewhere]).stopped, 'rowNotHeld');
  // A row that met this filter before is in this list, outside what it holds: not known.
  const partial = model({ rows: inbox, window: [0, 2], effects: inboxEffects('work', { unarchive, remove: [{ delete: { key: { arg: 'id' }, where: [] } }] }) });
  const sameFolder = model({ rows: [[3, 'Cy', 'figs']], effects: inboxEffects('work', {}) });
  assert.deepEqual(deriveEffects(partial, 'unarchive', { id: 3 }, [sameFolder]), { effects: [], stopped: 'rowNotHeld', notStated: false });
  assert.deepEqual(deriveEffects(partial, 'remove', { id: 3 }, [sameFolder]), { effects: [], stopped: 'rowNotHeld', notStated: false });
  assert.deepEqual(deriveEffects(partial, 'remove', { id: 7 }, [archived]), { effects: [], stopped: null, notStated: false }, 'not in this list: nothing');
  // An update whose where the other list's row does not meet: nothing, in or out of this list.
  const unarchiveAda = [{ update: { key: { arg: 'id' }, where: [{ column: 'sender', op: '=', operand: { value: 'Ada' } }], set: { folder: { value: 'work' } } } }];
  const guarded = model({ rows: inbox, window: [0, 2], effects: inboxEffects('work', { unarchiveAda }) });
  assert.deepEqual(deriveEffects(guarded, 'unarchiveAda', { id: 3 }, [sameFolder]), { effects: [], stopped: null, notStated: false });
  // A delete of a row only another list holds: nothing to show here, whatever its where needs.
  const removeOwned = [{ delete: { key: { arg: 'id' }, where: [{ column: 'owner', op: '=', operand: { value: 'ada' } }] } }];
  const withRemove = model({ rows: inbox, effects: inboxEffects('work', { removeOwned }) });
  assert.deepEqual(deriveEffects(withRemove, 'removeOwned', { id: 7 }, [archived]), { effects: [], stopped: null, notStated: false });
  assert.equal(deriveEffects(withRemove, 'removeOwned', { id: 1 }, [archived]).stopped, 'unknownColumn', 'one it holds: not known');
  // A source whose row lacks a value this list shows: not known.
  const narrow = model({ columns: ['id', 'subject'], order: [identity], rows: [[7, 'dates']], effects: { ...inboxEffects('archive', {}), columns: ['id', 'subject'] } });
  assert.equal(deriveEffects(work, 'unarchive', { id: 7 }, [narrow]).stopped, 'unknownColumn');
});

test('A delete takes a held row out when its where is met; not when it is not, nor a row not held', () => {
  const list = model({ rows: inbox, effects: inboxEffects('work', { remove, removeAny: [{ delete: { key: { arg: 'id' }, where: [] } }] }) });
  assert.deepEqual(deriveEffects(list, 'remove', { id: 1 }).effects, [{ delete: { id: 1 } }]);
  assert.deepEqual(shown(list, deriveEffects(list, 'remove', { id: 1 })).map(([id]) => id), [2, 3]);
  assert.deepEqual(deriveEffects(list, 'remove', { id: 2 }), { effects: [], stopped: null, notStated: false });
  assert.deepEqual(deriveEffects(list, 'removeAny', { id: 99 }), { effects: [], stopped: 'rowNotHeld', notStated: false });
  assert.deepEqual(deriveEffects(list, 'removeAny', { id: null }), { effects: [], stopped: null, notStated: false }, 'no identity is NULL = anything');
  // Identities compare exactly as the wire's values: {"i":"1"} is the integer 1.
  assert.deepEqual(deriveEffects(list, 'removeAny', { id: { i: '1' } }).effects, [{ delete: { id: 1 } }]);
  assert.deepEqual(deriveEffects(list, 'removeAny', { id: { f: 1 } }).stopped, 'rowNotHeld', 'the real 1.0 is another identity');
});

test('Operands: an argument missing without a default stops; with one, the default; an argument the wire cannot carry stops', () => {
  const list = model({ rows: inbox, effects: inboxEffects('work', {
    send: [{ insert: { values: { id: { arg: 'id' }, sender: { arg: 'sender', default: 'anon' }, subject: { arg: 'subject', default: null }, folder: { value: 'work' } } } }],
    removeUnused: [{ delete: { key: { arg: 'id' }, where: [{ column: 'sender', op: '=', operand: { arg: 'who' } }] } }],
  }) });
  assert.deepEqual(deriveEffects(list, 'send', { id: 9 }).effects, [{ insert: { id: 9, values: { id: 9, sender: 'anon', subject: null }, placement: 'sorted' } }]);
  assert.deepEqual(deriveEffects(list, 'send', { id: 9, sender: undefined }).effects[0].insert.values.sender, 'anon', 'undefined is not sent');
  assert.deepEqual(deriveEffects(list, 'send', { id: 9, sender: null }).effects[0].insert.values.sender, null);
  assert.equal(deriveEffects(list, 'send', { sender: 'x' }).stopped, 'unknownOperand');
  for (const bad of [1.5, 2 ** 60, true, [1], { f: NaN }, { i: 'x' }, { b: '!' }, new Real(1), 5n, { i: '1', f: 1 }]) {
    assert.equal(deriveEffects(list, 'send', { id: 9, sender: bad }).stopped, 'unknownOperand', String(bad));
  }
  // Every operand is resolved first, needed or not: a condition's argument missing stops, whatever the row.
  assert.equal(deriveEffects(list, 'removeUnused', { id: 42 }).stopped, 'unknownOperand');
  // Values in the wire's form, exact.
  const exact = deriveEffects(list, 'send', { id: { i: '9007199254740993' }, sender: { b: 'AAE=' }, subject: { f: 2.5 } }).effects[0].insert;
  assert.equal(exact.id, 9007199254740993n);
  assert.deepEqual([...exact.values.sender], [0, 1]);
  assert.deepEqual(exact.values.subject, new Real(2.5));
});

test('Expression columns: a row they show is inserted or changed only when their value is known', () => {
  const columns = ['id', 'subject', 'size'];
  const effects = { ...inboxEffects('work', { rename, send, flag: [{ update: { key: { arg: 'id' }, where: [], set: { unread: { value: 0 } } } }] }), columns: ['id', 'subject', null] };
  const list = model({ columns, order: [{ column: 1, descending: false, nullsFirst: true }, identity], rows: [[1, 'apples', 6], [2, 'figs', 4]], effects });
  assert.equal(deriveEffects(list, 'rename', { id: 1, subject: 'pears' }).stopped, 'unknownColumn', 'size may follow the subject');
  assert.deepEqual(deriveEffects(list, 'rename', { id: 1, subject: 'apples' }).effects, [], 'no value changes: size stays');
  assert.equal(deriveEffects(list, 'send', { id: 9, sender: 'x', subject: 'y' }).stopped, 'unknownColumn');
  assert.equal(deriveEffects(list, 'flag', { id: 1 }).stopped, 'unknownColumn', 'a column not shown may change the expression');
  assert.deepEqual(deriveEffects(list, 'archive', { id: 1 }).notStated, true);
  const leaving = model({ columns, rows: [[1, 'apples', 6]], effects: { ...effects, mutations: { archive } } });
  assert.deepEqual(deriveEffects(leaving, 'archive', { id: 1 }).effects, [{ delete: { id: 1 } }], 'a row that leaves needs no value');
});

test('Conditions compare as the order does: collations, NULL, classes, exact numbers', () => {
  const columns = ['id', 'name', 'size'];
  const list = (filter) => model({ columns, order: [identity], rows: [], effects: { table: 't', identity: 'id', columns, filter, mutations: {
    add: [{ insert: { values: { id: { arg: 'id' }, name: { arg: 'name' }, size: { arg: 'size' } } } }],
  } } });
  const meets = (filter, name, size = 1) => {
    const derived = deriveEffects(list(filter), 'add', { id: 1, name, size });
    assert.equal(derived.stopped, null);
    return derived.effects.length === 1;
  };
  const name = (op, value, collation) => [{ column: 'name', op, operand: { value }, ...(collation ? { collation } : {}) }];
  // Collations: nocase folds A–Z only, and stops at the first NUL; rtrim drops trailing spaces.
  assert.equal(meets(name('=', 'ada'), 'ADA'), false);
  assert.equal(meets(name('=', 'ada', 'nocase'), 'ADA'), true);
  assert.equal(meets(name('=', 'straße', 'nocase'), 'STRASSE'), false);
  assert.equal(meets(name('=', 'é', 'nocase'), 'É'), false, 'only ASCII folds');
  assert.equal(meets(name('=', 'a\u0000x', 'nocase'), 'A\u0000y'), true, 'SQLite: equal up to the NUL, then as long');
  assert.equal(meets(name('=', 'a\u0000x'), 'a\u0000y'), false);
  assert.equal(meets(name('=', 'ada', 'rtrim'), 'ada  '), true);
  assert.equal(meets(name('=', 'ada', 'rtrim'), ' ada'), false);
  assert.equal(meets(name('=', 'ada'), 'ada '), false);
  assert.equal(meets(name('=', 'é'), 'e\u0301'), false, 'never normalized');
  assert.equal(meets(name('>', '\uffff'), '😀'), true, 'UTF-8 bytes, not UTF-16 units');
  // NULL on either side is not met; isNull and notNull test it.
  assert.equal(meets(name('=', null), null), false);
  assert.equal(meets(name('<>', 'x'), null), false);
  assert.equal(meets(name('<>', null), 'x'), false);
  assert.equal(meets([{ column: 'name', op: 'isNull' }], null), true);
  assert.equal(meets([{ column: 'name', op: 'isNull' }], ''), false);
  assert.equal(meets([{ column: 'name', op: 'notNull' }], 0), true);
  // Classes: numbers before text before bytes.
  assert.equal(meets(name('<', ''), 5), true);
  assert.equal(meets(name('>', 'zzz'), { b: 'AA==' }), true);
  assert.equal(meets(name('<', { b: '' }), 'zzz'), true);
  assert.equal(meets(name('=', '5'), 5), false);
  // Numbers exactly: integers and reals, beyond 2⁵³, infinities.
  assert.equal(meets(name('=', 1), { f: 1 }), true);
  assert.equal(meets(name('>', { f: 9007199254740992 }), { i: '9007199254740993' }), true);
  assert.equal(meets(name('=', { f: 9007199254740992 }), { i: '9007199254740993' }), false);
  assert.equal(meets(name('<', { f: 'inf' }), { i: '9223372036854775807' }), true);
  assert.equal(meets(name('>', { f: '-inf' }), -(2 ** 53) + 1), true);
  assert.equal(meets(name('<=', { f: 0.5 }), 0), true);
  assert.equal(meets(name('>=', { f: 0.5 }), 1), true);
  // All conditions: one not met decides, though another needs a column not known.
  const hidden = [{ column: 'owner', op: '=', operand: { value: 'ada' } }];
  assert.equal(meets([...name('=', 'x'), ...hidden], 'y'), false);
  assert.equal(deriveEffects(list([...name('=', 'x'), ...hidden]), 'add', { id: 1, name: 'x', size: 1 }).stopped, 'unknownColumn');
});

test('Statements run in order, each seeing what the earlier ones did; identities may change', () => {
  const list = model({ rows: inbox, effects: inboxEffects('work', {
    sendAndRename: [...send, { update: { key: { arg: 'id' }, where: [], set: { subject: { value: 'zucchini' } } } }],
    archiveAndBack: [...archive, ...unarchive],
    renumber: [{ update: { key: { arg: 'id' }, where: [], set: { id: { arg: 'to' } } } }],
    deleteAndSend: [{ delete: { key: { arg: 'id' }, where: [] } }, ...send],
    removeOwnedAndSend: [{ delete: { key: { arg: 'id' }, where: [{ column: 'owner', op: '=', operand: { value: 'ada' } }] } }, ...send],
    deleteAndRename: [{ delete: { key: { arg: 'id' }, where: [] } }, ...rename],
    removeOwnedAndRenumber: [{ delete: { key: { arg: 'to' }, where: [{ column: 'owner', op: '=', operand: { value: 'ada' } }] } },
      { update: { key: { arg: 'id' }, where: [], set: { id: { arg: 'to' } } } }],
  }) });
  const archived = model({ rows: [[7, 'Eve', 'dates']], effects: inboxEffects('archive', {}) });
  assert.deepEqual(deriveEffects(list, 'sendAndRename', { id: 9, sender: 'Zed', subject: 'b' }).effects,
    [{ insert: { id: 9, values: { id: 9, sender: 'Zed', subject: 'zucchini' }, placement: 'sorted' } }]);
  assert.deepEqual(deriveEffects(list, 'archiveAndBack', { id: 2 }).effects, [], 'out and back: as it was');
  assert.deepEqual(deriveEffects(list, 'renumber', { id: 2, to: 10 }).effects,
    [{ delete: { id: 2 } }, { insert: { id: 10, values: { id: 10, sender: 'Bob', subject: 'cherries' }, placement: 'sorted' } }]);
  assert.equal(deriveEffects(list, 'renumber', { id: 2, to: 3 }).stopped, 'identityTaken');
  assert.deepEqual(deriveEffects(list, 'deleteAndSend', { id: 2, sender: 'Zed', subject: 'b' }).effects, [{ update: { id: 2, values: { sender: 'Zed', subject: 'b' } } }]);
  assert.deepEqual(deriveEffects(list, 'deleteAndRename', { id: 2, subject: 'b' }).effects, [{ delete: { id: 2 } }], 'the row is gone: the update finds none');
  // A row of another list whose delete is not known (its where needs owner): inserting its identity again is not known.
  assert.equal(deriveEffects(list, 'removeOwnedAndSend', { id: 7, sender: 'Zed', subject: 'b' }, [archived]).stopped, 'rowNotHeld');
  assert.equal(deriveEffects(list, 'deleteAndSend', { id: 7, sender: 'Zed', subject: 'b' }, [archived]).effects.length, 1, 'deleted: inserted again');
  assert.equal(deriveEffects(list, 'removeOwnedAndRenumber', { id: 2, to: 7 }, [archived]).stopped, 'rowNotHeld');
});

test('Columns of one name: an insert sets each; an update that changes one is not shown', () => {
  const columns = ['id', 'name', 'name'];
  const effects = { table: 't', identity: 'id', columns: ['id', 'name', 'nick'], filter: [], mutations: {
    add: [{ insert: { values: { id: { arg: 'id' }, name: { arg: 'name' }, nick: { arg: 'nick' } } } }],
    rename: [{ update: { key: { arg: 'id' }, where: [], set: { nick: { arg: 'nick' } } } }],
  } };
  const list = model({ columns, order: [identity], rows: [[1, 'a', 'a']], effects });
  assert.deepEqual(deriveEffects(list, 'add', { id: 2, name: 'b', nick: 'b' }).effects, [{ insert: { id: 2, values: { id: 2, name: 'b' }, placement: 'sorted' } }]);
  assert.equal(deriveEffects(list, 'add', { id: 2, name: 'b', nick: 'c' }).stopped, 'unrepresentable');
  assert.equal(deriveEffects(list, 'rename', { id: 1, nick: 'c' }).stopped, 'unrepresentable');
  // A column named __proto__ is a column like any other.
  const odd = model({ columns: ['id', '__proto__'], order: [identity], rows: [], effects: JSON.parse(`{"table":"t","identity":"id","columns":["id","__proto__"],"filter":[],
    "mutations":{"add":[{"insert":{"values":{"id":{"arg":"id"},"__proto__":{"arg":"p"}}}}]}}`) });
  const [effect] = deriveEffects(odd, 'add', { id: 2, p: 'x' }).effects;
  assert.deepEqual(new PendingEffect(effect).values.get('__proto__'), 'x');
});

// ---------------------------------------------------------------------------------------------
// The mutator: shown as the app's effects are, with their lifetime

async function shared(options = {}) {
  FakeSocket.sockets = [];
  const connection = new Connection('ws://host/live', { WebSocket: FakeSocket, liveness: null });
  const work = new LiveQuery(connection, 'inbox', { args: { folder: 'work' }, window: [0, 100], prefetch: 0 });
  const archived = new LiveQuery(connection, 'inbox', { args: { folder: 'archive' }, window: [0, 100], prefetch: 0 });
  const mutator = new Mutator(connection, 'web-d', options);
  work.start();
  archived.start();
  await tick();
  const socket = FakeSocket.sockets.at(-1);
  const mutations = { send, rename, archive, unarchive, remove };
  socket.serve(reset({ sub: 1, rows: inbox, effects: inboxEffects('work', mutations) }));
  socket.serve(reset({ sub: 2, rows: [[7, 'Eve', 'dates']], effects: inboxEffects('archive', mutations) }));
  mutator.start();
  return { connection, work, archived, mutator, socket };
}

const ids = (live) => Array.from({ length: live.displayed.count }, (_, position) => live.displayed.row(position).id);

test('mutate shows the derived effects on every list of its connection the app gives none for, and takes them away as it takes the app\'s', async () => {
  const { connection, work, archived, mutator, socket } = await shared();
  assert.deepEqual(connection.lists, [work, archived]);
  const done = mutator.mutate('archive', { id: 2 });
  assert.deepEqual(ids(work), [1, 3]);
  assert.deepEqual(ids(archived), [2, 7], 'brought in from the other list, sorted');
  assert.equal(archived.displayed.row(0).pending, true);
  assert.deepEqual(mutator.effects(1), [{ list: work, delete: { id: 2 } }, { list: archived, insert: { id: 2, values: { id: 2, sender: 'Bob', subject: 'cherries' }, placement: 'sorted' } }]);
  assert.deepEqual(socket.sent.at(-1), { type: 'mutate', client: 'web-d', id: 1, name: 'archive', arguments: { id: 2 } });
  // The commit, then the answer naming both lists' versions: nothing moves, the effects go.
  socket.serve({ sub: 1, type: 'changes', from: 'e:1', to: 'e:2', deletes: [[0, 1]] });
  socket.serve({ sub: 2, type: 'changes', from: 'e:1', to: 'e:2', inserts: [[0, 0, 2]], rows: [[0, 2, [2, 'Bob', 'cherries']]] });
  assert.deepEqual([ids(work), ids(archived)], [[1, 3], [2, 7]]);
  socket.serve({ type: 'mutated', client: 'web-d', id: 1, versions: { 1: 'e:2', 2: 'e:2' }, duplicate: false });
  await done;
  assert.deepEqual([work.pendingCount, archived.pendingCount], [0, 0]);
  assert.equal(archived.displayed.row(0).pending, false);
  // A refusal takes them back at once.
  const refused = mutator.mutate('rename', { id: 3, subject: 'apricots' });
  assert.deepEqual(ids(work), [1, 3]);
  assert.deepEqual(work.displayed.row(1).values, [3, 'Cy', 'apricots']);
  socket.serve({ type: 'error', mutation: { client: 'web-d', id: 2 }, code: 'mutationFailed', message: 'no' });
  await assert.rejects(refused, (error) => error instanceof MutationError && error.code === 'mutationFailed');
  assert.equal(work.pendingCount, 0);
  assert.deepEqual(work.displayed.row(1).values, [3, 'Cy', 'figs']);
  mutator.stop();
  work.stop();
  archived.stop();
});

test('The app\'s effect wins on its list; lists elsewhere, stopped, or without effects derive nothing; deriveEffects: false turns it off', async () => {
  const { work, archived, mutator, socket } = await shared();
  // The app describes the work list only: the archive list still derives.
  mutator.mutate('archive', { id: 1 }, { effects: [{ list: work, update: { id: 1, values: { subject: 'zzz' } } }] }).catch(() => {});
  assert.deepEqual(mutator.effects(1), [{ list: work, update: { id: 1, values: { subject: 'zzz' } } }, { list: archived, insert: { id: 1, values: { id: 1, sender: 'Ada', subject: 'apples' }, placement: 'sorted' } }]);
  assert.deepEqual(ids(work), [2, 3, 1]);
  // A list on the app's effects is a source for another list too.
  const own = new LiveQuery('ws://host/live', 'inbox', { WebSocket: FakeSocket, window: [0, 100] });
  own.start();
  await tick();
  FakeSocket.sockets.at(-1).serve(reset({ sub: 1, rows: [[5, 'Gus', 'limes']], effects: inboxEffects('work', { archive }) }));
  mutator.mutate('archive', { id: 5 }, { effects: [{ list: own, update: { id: 5, values: { subject: 'x' } } }] }).catch(() => {});
  assert.deepEqual(mutator.effects(2).map(({ list, ...effect }) => [list === own ? 'own' : list === archived ? 'archived' : 'work', Object.keys(effect)[0]]),
    [['own', 'update'], ['archived', 'insert']]);
  // A list on another connection is not the mutator's: it derives nothing on it.
  mutator.mutate('rename', { id: 5, subject: 'y' }).catch(() => {});
  assert.deepEqual(mutator.effects(3), []);
  own.stop();
  // A stopped list is not on the connection.
  archived.stop();
  mutator.mutate('unarchive', { id: 7 }).catch(() => {});
  assert.deepEqual(mutator.effects(4), [], 'its row is held by no list on the connection now');
  // Turned off: the property, and the option.
  mutator.deriveEffects = false;
  mutator.mutate('rename', { id: 2, subject: 'q' }).catch(() => {});
  assert.deepEqual(mutator.effects(5), []);
  mutator.stop();
  work.stop();
  const off = await shared({ deriveEffects: false });
  off.mutator.mutate('archive', { id: 2 }).catch(() => {});
  assert.deepEqual(off.mutator.effects(1), []);
  assert.deepEqual(ids(off.work), [1, 2, 3]);
  off.mutator.stop();
  off.work.stop();
  off.archived.stop();
  void socket;
});
