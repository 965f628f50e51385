// Derived pending rows (docs/PROTOCOL.md, "Effects the server states") against an independent
// oracle: a table simulated in JS, lists selected from it, mutations applied to it. Under Node's
// test runner: node --test Tests/Web/ (LIVELIST_SEED replays another seed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Connection, LiveQuery, Mutator, Real, deriveEffects } from '../../Web/livelist.js';
import { FakeSocket, generator, lis } from './support.mjs';

const seed = process.env.LIVELIST_SEED ? BigInt(process.env.LIVELIST_SEED) : 20_260_117n;
console.log(`derived effects oracle seed: ${seed}`);

// ---------------------------------------------------------------------------------------------
// Values, compared as SQLite compares them, written without the client's code

const bytes = (...list) => Uint8Array.from(list);
const pool = [
  null, 0, 1, -1, 5, 9007199254740991, -9007199254740991, 9007199254740993n, -9007199254740993n, 9223372036854775807n,
  new Real(1), new Real(5.5), new Real(0.1), new Real(9007199254740992), new Real(Infinity), new Real(-Infinity), new Real(-2.5),
  '', 'a', 'A', 'b', 'B', 'a ', 'a  ', ' a', 'é', 'e\u0301', 'É', 'a\u0000x', 'A\u0000y', 'a\u0000', 'ß', '😀', '\uffff', 'Z', 'z',
  bytes(), bytes(0), bytes(1, 2), bytes(0xff), bytes(0x61),
];

/** A value in the wire's JSON form. */
function wire(value) {
  if (typeof value === 'bigint') return { i: String(value) };
  if (value instanceof Real) return { f: value.value === Infinity ? 'inf' : value.value === -Infinity ? '-inf' : value.value };
  if (value instanceof Uint8Array) return { b: Buffer.from(value).toString('base64') };
  return value;
}

const classOf = (value) => (typeof value === 'string' ? 2 : value instanceof Uint8Array ? 3 : 1);

/** A number as m·2^e exactly (BigInts), or an infinity. */
function exact(value) {
  if (!(value instanceof Real)) return { m: BigInt(value), e: 0 };
  const x = value.value;
  if (x === Infinity || x === -Infinity) return { infinity: Math.sign(x) };
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const high = view.getUint32(0), low = view.getUint32(4);
  const biased = (high >>> 20) & 0x7ff;
  let m = (BigInt(high & 0xfffff) << 32n) | BigInt(low);
  if (biased !== 0) m |= 1n << 52n;
  return { m: high >>> 31 ? -m : m, e: (biased === 0 ? 1 : biased) - 1075 };
}

function compareNumbers(a, b) {
  const x = exact(a), y = exact(b);
  if (x.infinity || y.infinity) return Math.sign((x.infinity ?? 0) - (y.infinity ?? 0));
  const e = Math.min(x.e, y.e);
  const left = x.m << BigInt(x.e - e), right = y.m << BigInt(y.e - e);
  return left < right ? -1 : left > right ? 1 : 0;
}

const encoder = new TextEncoder();
const fold = (byte) => (byte >= 0x41 && byte <= 0x5a ? byte + 0x20 : byte);

/** SQLite's collating functions over UTF-8 bytes: memcmp then length; NOCASE as sqlite3StrNICmp; RTRIM without trailing spaces. */
function compareText(a, b, collation) {
  let x = encoder.encode(a), y = encoder.encode(b);
  if (collation === 'rtrim') {
    let endX = x.length, endY = y.length;
    while (endX > 0 && x[endX - 1] === 0x20) endX--;
    while (endY > 0 && y[endY - 1] === 0x20) endY--;
    x = x.subarray(0, endX);
    y = y.subarray(0, endY);
  }
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) {
    if (collation === 'nocase') {
      if (x[i] === 0 || fold(x[i]) !== fold(y[i])) {
        const difference = fold(x[i]) - fold(y[i]);
        if (difference !== 0) return Math.sign(difference);
        break;   // both NUL: then by length
      }
    } else if (x[i] !== y[i]) {
      return x[i] < y[i] ? -1 : 1;
    }
  }
  return Math.sign(x.length - y.length);
}

function compareBytes(x, y) {
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
  return Math.sign(x.length - y.length);
}

/** Two non-NULL values: by class, then within it. */
function compare(a, b, collation = 'binary') {
  const ca = classOf(a), cb = classOf(b);
  if (ca !== cb) return ca < cb ? -1 : 1;
  if (ca === 1) return compareNumbers(a, b);
  if (ca === 2) return compareText(a, b, collation);
  return compareBytes(a, b);
}

// ---------------------------------------------------------------------------------------------
// The table, the lists selected from it, and mutations applied to it

const tableColumns = ['id', 'c0', 'c1', 'c2', 'c3'];
const ops = ['=', '<>', '<', '<=', '>', '>=', 'isNull', 'notNull'];
const collations = ['binary', 'nocase', 'rtrim'];

/** An expression column's value (an expression the server cannot state): the class of c0. */
const expression = (row) => ['null', 'number', 'text', 'bytes'][row.get('c0') === null ? 0 : classOf(row.get('c0'))];

function meets(row, condition, value = condition.value) {
  const have = row.get(condition.column);
  if (condition.op === 'isNull') return have === null;
  if (condition.op === 'notNull') return have !== null;
  if (have === null || value === null) return false;
  const order = compare(have, value, condition.collation);
  return { '=': order === 0, '<>': order !== 0, '<': order < 0, '<=': order <= 0, '>': order > 0, '>=': order >= 0 }[condition.op];
}

/** The list's rows (`{id, values}`): the table's rows that meet the filter, sorted by the order (none: by id). */
function select(definition, table) {
  const valuesOf = (row) => definition.columns.map((column) => (column.table === null ? expression(row) : row.get(column.table)));
  const rows = [...table.values()].filter((row) => definition.filter.every((condition) => meets(row, condition)))
    .map((row) => ({ id: row.get('id'), values: valuesOf(row) }));
  const terms = definition.order ?? [{ column: null, descending: false, nullsFirst: true }];
  rows.sort((a, b) => {
    for (const term of terms) {
      const x = term.column === null ? a.id : a.values[term.column], y = term.column === null ? b.id : b.values[term.column];
      let order;
      if (x === null || y === null) order = x === y ? 0 : (x === null) === term.nullsFirst ? -1 : 1;
      else order = term.descending ? -compare(x, y, term.collation) : compare(x, y, term.collation);
      if (order !== 0) return order;
    }
    return 0;
  });
  return rows;
}

/** A reset of `rows` (window: the whole list) with the definition's order and effects. */
function resetOf(definition, rows, sub, version, mutations) {
  const message = { sub, type: 'reset', version, reason: 'subscribed', columns: definition.columns.map((column) => column.name),
    sections: [[null, rows.length]], window: [0, 1000], rows: rows.map((row, position) => [position, row.id, row.values.map(wire)]),
    effects: {
      table: 'message', identity: 'id', columns: definition.columns.map((column) => column.table),
      filter: definition.filter.map(({ column, op, value, collation }) => (op === 'isNull' || op === 'notNull' ? { column, op } : { column, op, operand: { value: wire(value) }, collation })),
      mutations,
    } };
  if (definition.order) message.order = definition.order.map(({ column, descending, nullsFirst, collation }) => ({ column, descending, nullsFirst, collation }));
  return message;
}

/** The `changes` from list `old` to `now` (one section; the window the whole list): what a server sends. */
function changesOf(old, now, sub, from, to) {
  const oldIndex = new Map(old.map((row, index) => [row.id, index]));
  const newIndex = new Map(now.map((row, index) => [row.id, index]));
  const message = { sub, type: 'changes', from, to, deletes: [], inserts: [], moves: [], reloads: [], rows: now.map((row, position) => [position, row.id, row.values.map(wire)]) };
  old.forEach((row, index) => { if (!newIndex.has(row.id)) message.deletes.push([0, index]); });
  const staying = now.filter((row) => oldIndex.has(row.id));
  const kept = lis(staying.map((row) => oldIndex.get(row.id)));
  staying.forEach((row, j) => {
    const from = oldIndex.get(row.id);
    if (!kept.has(j)) message.moves.push([0, from, 0, newIndex.get(row.id), row.id]);
    if (JSON.stringify(row.values.map(wire)) !== JSON.stringify(old[from].values.map(wire))) message.reloads.push([0, from, row.id]);
  });
  now.forEach((row, index) => { if (!oldIndex.has(row.id)) message.inserts.push([0, index, row.id]); });
  return message;
}

/**
 * The mutation applied to a copy of `table`, as the database would: every operand resolved (an
 * argument missing without a default refuses it), values the server cannot state drawn at random,
 * a second row of one identity refused. Returns the table after it, or null when refused.
 */
function apply(statements, args, table, random) {
  const resolve = (operand) => {
    if ('value' in operand) return { value: operand.value };
    if (Object.hasOwn(args, operand.arg)) return { value: args[operand.arg] };
    return 'default' in operand ? { value: operand.default } : null;
  };
  const decoded = (json) => (json && typeof json === 'object' ? (json.i !== undefined ? BigInt(json.i) : json.f !== undefined ? new Real(json.f === 'inf' ? Infinity : json.f === '-inf' ? -Infinity : json.f) : bytes(...Buffer.from(json.b, 'base64'))) : json);
  const all = [];
  for (const statement of statements) {
    const body = statement.insert ?? statement.update ?? statement.delete;
    for (const operand of [body.key, ...Object.values(body.values ?? {}), ...Object.values(body.set ?? {}), ...(body.where ?? []).map((c) => c.operand)]) {
      if (operand) all.push(operand);
    }
  }
  if (all.some((operand) => resolve(operand) === null)) return null;
  const value = (operand) => (operand === null || operand === undefined ? pool[random(pool.length)] : decoded(resolve(operand).value));
  const after = new Map([...table].map(([id, row]) => [id, new Map(row)]));
  const key = (id) => (typeof id === 'bigint' ? Number(id) : id);
  for (const statement of statements) {
    if (statement.insert) {
      const values = statement.insert.values;
      const row = new Map(tableColumns.map((column) => [column, column === 'id' && !values.id ? Math.max(0, ...after.keys()) + 1 : value(values[column])]));
      if (after.has(key(row.get('id')))) return null;
      after.set(key(row.get('id')), row);
      continue;
    }
    const body = statement.update ?? statement.delete;
    const id = key(value(body.key));
    const row = after.get(id);
    if (!row || !body.where.every((condition) => meets(row, { ...condition, collation: condition.collation }, value(condition.operand)))) continue;
    if (statement.delete) after.delete(id);
    else for (const [column, operand] of Object.entries(statement.update.set)) row.set(column, value(operand));
  }
  return after;
}

// ---------------------------------------------------------------------------------------------
// Random tables, lists and mutations

function randomCondition(random, withArguments) {
  const column = tableColumns[1 + random(tableColumns.length - 1)];
  const op = ops[random(ops.length)];
  if (op === 'isNull' || op === 'notNull') return { column, op };
  const value = pool[random(pool.length)];
  const collation = collations[random(3)];
  if (!withArguments) return { column, op, value, collation };
  return { column, op, operand: randomOperand(random), collation };
}

function randomOperand(random) {
  const choice = random(10);
  if (choice < 5) return { value: wire(pool[random(pool.length)]) };
  const operand = { arg: ['a', 'b', 'c'][random(3)] };
  if (choice < 7) operand.default = wire(pool[random(pool.length)]);
  return operand;
}

/** A list: its columns ({name, table}: table null for the expression), filter and order. */
function randomList(random) {
  const wide = random(3) === 0;   // every column: a source for the other list's rows
  const shown = tableColumns.filter(() => wide || random(4) !== 0);
  for (let i = shown.length - 1; i > 0; i--) { const j = random(i + 1); [shown[i], shown[j]] = [shown[j], shown[i]]; }
  const columns = shown.map((name) => ({ name, table: name }));
  if (random(4) === 0) columns.splice(random(columns.length + 1), 0, { name: 'x', table: null });
  const filter = [];
  for (let i = random(3); i > 0; i--) {
    // Mostly on a column the list shows, sometimes one it does not (known only when the filter holds it equal).
    const condition = randomCondition(random, false);
    const shownColumns = columns.filter((column) => column.table !== null && column.table !== 'id');
    if (random(3) !== 0 && shownColumns.length > 0) condition.column = shownColumns[random(shownColumns.length)].table;
    filter.push(condition);
  }
  let order = null;
  if (random(8) !== 0) {
    order = [];
    const orderable = columns.map((column, index) => ({ column, index })).filter(({ column }) => column.table !== null);
    for (let i = random(3); i > 0 && orderable.length > 0; i--) {
      order.push({ column: orderable[random(orderable.length)].index, descending: random(2) === 0, nullsFirst: random(2) === 0, collation: collations[random(3)] });
    }
    order.push({ column: null, descending: false, nullsFirst: true, collation: 'binary' });
  }
  return { columns, filter, order };
}

/** A statement; `hints`, the lists' filters' equalities, which an update's `set` often meets. */
function randomStatement(random, hints) {
  const kind = random(10);
  const set = () => {
    const values = {};
    for (let i = 1 + random(2); i > 0; i--) values[tableColumns[1 + random(4)]] = random(7) === 0 ? null : randomOperand(random);
    if (hints.length > 0 && random(2) === 0) {
      const hint = hints[random(hints.length)];
      values[hint.column] = { value: wire(hint.value) };
    }
    return values;
  };
  const where = () => Array.from({ length: random(2) }, () => randomCondition(random, true));
  if (kind < 3) {
    const values = {};
    const idChoice = random(20);
    if (idChoice === 0) values.id = null; else if (idChoice > 1) values.id = { arg: 'id' };
    for (const column of tableColumns.slice(1)) {
      const choice = random(7);
      if (choice < 5) values[column] = randomOperand(random); else if (choice === 5) values[column] = null;
    }
    return { insert: { values } };
  }
  if (kind < 8) return { update: { key: { arg: 'id' }, where: where(), set: set() } };
  return { delete: { key: { arg: 'id' }, where: where() } };
}

/** A row as the test compares it: its identity and values, exactly. */
const rowText = (row) => JSON.stringify([wire(row.id), row.values === null ? null : row.values.map(wire)]);
const displayedRows = (live) => Array.from({ length: live.displayed.count }, (_, position) => rowText(live.displayed.row(position)));

test('Random tables, lists and mutations: the pending list derived is the list the commit makes, and the commit replaces it without a move or a reload (seeded)', async () => {
  const random = generator(seed);
  FakeSocket.sockets = [];
  const connection = new Connection('ws://host/live', { WebSocket: FakeSocket, liveness: null });
  const lists = [new LiveQuery(connection, 'a', { window: [0, 1000], prefetch: 0 }), new LiveQuery(connection, 'b', { window: [0, 1000], prefetch: 0 })];
  const events = [[], []];
  lists.forEach((live, index) => { live.onEvent = (event) => events[index].push(event); });
  const mutator = new Mutator(connection, 'oracle');
  for (const live of lists) live.start();
  await tick();
  const socket = FakeSocket.sockets.at(-1);
  mutator.start();
  const stats = { cases: 0, exact: 0, exactChanged: 0, inserts: 0, updates: 0, deletes: 0, fromOther: 0, refused: 0, stopped: {}, unordered: 0 };
  for (let round = 0; round < 1200; round++) {
    // The table: ids 1…14, hostile values; two lists over it.
    const table = new Map();
    for (let i = random(12); i > 0; i--) {
      const id = 1 + random(14);
      table.set(id, new Map(tableColumns.map((column) => [column, column === 'id' ? id : pool[random(pool.length)]])));
    }
    const definitions = [randomList(random), randomList(random)];
    const hints = definitions.flatMap((definition) => definition.filter.filter((condition) => condition.op === '='));
    const statements = Array.from({ length: random(6) === 0 ? 2 : 1 }, () => randomStatement(random, hints));
    /** @type {number[] | null} the identities to pick from, when moving rows between two folders */
    let folder = null;
    if (random(3) === 0) {
      // A folder each: one column held equal to two values (an inbox and an archive), and a
      // mutation that moves a row from one to the other.
      const column = tableColumns[1 + random(4)];
      const [first, second] = [pool[17 + random(10)], pool[27 + random(10)]];
      if (random(2) === 0) definitions[0].filter = [];
      definitions[0].filter.push({ column, op: '=', value: first, collation: 'binary' });
      definitions[1].filter = [{ column, op: '=', value: second, collation: 'binary' }];
      for (const row of table.values()) if (random(2) === 0) row.set(column, random(2) === 0 ? first : second);
      const to = random(2);
      statements[0] = { update: { key: { arg: 'id' }, where: [], set: { ...(random(2) === 0 ? randomStatement(random, []).update?.set : {}), [column]: { value: wire(to === 0 ? first : second) } } } };
      folder = select(definitions[1 - to], table).map((row) => row.id);
    }
    const before = definitions.map((definition) => select(definition, table));
    const epoch = `k${round}`;
    definitions.forEach((definition, index) => socket.serve(resetOf(definition, before[index], index + 1, `${epoch}:1`, { m: statements })));
    // The arguments: an identity held by a list, in the table only, new, or none.
    const args = {};
    const inTable = [...table.keys()];
    const idChoice = random(20);
    const heldIds = folder ?? before[random(2)].map((row) => row.id);
    const inserts = statements.some((statement) => statement.insert);
    if (inserts ? idChoice < 14 : idChoice >= 19) args.id = 15 + random(5);
    else if (idChoice < 16 && heldIds.length > 0) args.id = heldIds[random(heldIds.length)];
    else if (idChoice < 19 && inTable.length > 0) args.id = inTable[random(inTable.length)];
    for (const name of ['a', 'b', 'c']) if (random(12) !== 0) args[name] = wire(pool[random(pool.length)]);

    const derivations = lists.map((live) => deriveEffects(live.model, 'm', args, lists.map((other) => other.model)));
    const after = apply(statements, args, table, random);
    const expected = after === null ? null : definitions.map((definition) => select(definition, after));
    const beforeText = before.map((rows) => rows.map(rowText));
    for (const list of events) list.length = 0;
    const answer = mutator.mutate('m', args);
    answer.catch(() => {});
    const id = mutator.nextId - 1;
    stats.cases += 1;
    if (after === null) stats.refused += 1;
    const exactLists = [];
    lists.forEach((live, index) => {
      const derivation = derivations[index];
      const shown = displayedRows(live);
      const context = () => JSON.stringify({ seed: String(seed), round, list: index, args, statements, derivation, shown, before: beforeText[index],
        expected: expected?.[index].map(rowText) }, (key, value) => (typeof value === 'bigint' ? String(value) : value));
      // What was shown is what was derived (the mutator derives as deriveEffects does).
      assert.deepEqual(mutator.effects(id).filter((effect) => effect.list === live).length, derivation.effects.length, context());
      if (derivation.stopped) {
        stats.stopped[derivation.stopped] = (stats.stopped[derivation.stopped] ?? 0) + 1;
        assert.deepEqual(shown, beforeText[index], context());
        // Stopped for an argument missing, or an identity taken: the database refuses the mutation.
        if (derivation.stopped === 'unknownOperand' || derivation.stopped === 'identityTaken') assert.equal(after, null, context());
        else assert.ok(['unknownColumn', 'unknownIdentity', 'rowNotHeld'].includes(derivation.stopped), context());
        return;
      }
      if (after === null) return;   // a refused mutation's effects go with its error (below)
      if (definitions[index].order === null) { stats.unordered += 1; return; }   // no place known for a row that comes or moves
      // Otherwise the pending list is the list the commit makes: ids, order, values.
      assert.deepEqual(shown, expected[index].map(rowText), context());
      stats.exact += 1;
      exactLists.push(index);
      if (JSON.stringify(shown) !== JSON.stringify(beforeText[index])) stats.exactChanged += 1;
      for (const effect of derivation.effects) {
        if (effect.insert) {
          stats.inserts += 1;
          if (before[1 - index].some((row) => row.id === effect.insert.id)) stats.fromOther += 1;
        } else if (effect.update) stats.updates += 1;
        else stats.deletes += 1;
      }
    });
    if (after === null) {
      socket.serve({ type: 'error', mutation: { client: 'oracle', id }, code: 'mutationFailed', message: 'refused' });
      lists.forEach((live, index) => {
        assert.deepEqual(displayedRows(live), beforeText[index], `round ${round}: a refusal takes the effects back`);
        assert.equal(live.pendingCount, 0);
      });
      continue;
    }
    // The commit: each list's changes, then the answer naming their versions.
    lists.forEach((live, index) => {
      const shown = displayedRows(live);
      events[index].length = 0;
      socket.serve(changesOf(before[index], expected[index], index + 1, `${epoch}:1`, `${epoch}:2`));
      assert.deepEqual(displayedRows(live), expected[index].map(rowText), `round ${round}: the list after the commit`);
      if (exactLists.includes(index)) {
        // Nothing moves and nothing reloads: every row stays where it was, with its values.
        const { transition } = events[index].find((event) => event.type === 'changes');
        for (let position = 0; position < shown.length; position++) {
          assert.equal(transition.newPosition(position), position, `round ${round}: list ${index} row ${position} stays`);
          assert.equal(transition.oldPosition(position), position);
        }
        assert.equal(live.displayed.hasPending, false, 'the effects did nothing more: the server shows them');
      }
    });
    socket.serve({ type: 'mutated', client: 'oracle', id, versions: { 1: `${epoch}:2`, 2: `${epoch}:2` }, duplicate: false });
    lists.forEach((live, index) => {
      assert.equal(live.pendingCount, 0, `round ${round}: the effects go with the answer`);
      assert.deepEqual(displayedRows(live), expected[index].map(rowText));
      for (const event of events[index].filter((e) => e.type === 'pending')) {
        for (let position = 0; position < live.displayed.count; position++) assert.equal(event.transition.newPosition(position), position);
      }
    });
  }
  console.log(`derived effects oracle: ${JSON.stringify(stats)}`);
  // Enough of each kind to test something.
  assert.ok(stats.exactChanged >= stats.cases / 10, `${stats.exactChanged} lists changed exactly`);
  for (const kind of ['inserts', 'updates', 'deletes', 'fromOther', 'refused']) assert.ok(stats[kind] >= 5, `${kind}: ${stats[kind]}`);
  for (const reason of ['unknownColumn', 'unknownOperand', 'identityTaken', 'rowNotHeld']) assert.ok((stats.stopped[reason] ?? 0) >= 5, `${reason}: ${stats.stopped[reason]}`);
  mutator.stop();
  for (const live of lists) live.stop();
});

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));
