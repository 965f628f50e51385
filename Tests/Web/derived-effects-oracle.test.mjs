// Derived pending rows (docs/PROTOCOL.md, "Effects the server states") against an independent
// oracle: a table simulated in JS, lists selected from it, mutations applied to it. Under Node's
// test runner: node --test Tests/Web/ (LIVELIST_SEED replays another seed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Connection, LiveQuery, Mutator, Real, deriveEffects } from '../../Web/livelist.js';
import { FakeSocket, generator, sectionChanges } from './support.mjs';

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

const tableColumns = ['id', 'c0', 'c1', 'c2', 'c3', 'day'];
const ops = ['=', '<>', '<', '<=', '>', '>=', 'isNull', 'notNull'];
const collations = ['binary', 'nocase', 'rtrim'];
/**
 * The values of `day`, a sectioned list's section column (as the server's `inbox` is sectioned by
 * its `day`): no two compare equal under `binary`, so that each sorts as its own section; no NULL,
 * since a list whose one section is keyed NULL reads as a list without sections.
 */
const days = [1, 2, 3, 'x', 'X', bytes(7)];
const valuesOfColumn = (column) => (column === 'day' ? days : pool);

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

/** A value's text (an identity, a section's key). */
const valueKey = (value) => JSON.stringify(wire(value));

/** The list's sections (`{key, rows}`): by its first order term's column when sectioned, else one keyed null. */
function sectionsOf(definition, rows) {
  if (!definition.sectioned) return [{ key: null, rows }];
  const column = definition.order[0].column;
  const sections = [];
  for (const row of rows) {
    if (sections.length === 0 || valueKey(sections.at(-1).key) !== valueKey(row.values[column])) sections.push({ key: row.values[column], rows: [] });
    sections.at(-1).rows.push(row);
  }
  return sections;
}

/** The rows of the list's window, as a message carries them. */
function windowRows(definition, rows) {
  const [start, count] = definition.window;
  return rows.map((row, position) => [position, row.id, row.values.map(wire)]).filter(([position]) => position >= start && position < start + count);
}

/** A reset of `rows` (the rows of the definition's window) with the definition's order and effects. */
function resetOf(definition, rows, sub, version, mutations) {
  const message = { sub, type: 'reset', version, reason: 'subscribed', columns: definition.columns.map((column) => column.name),
    sections: sectionsOf(definition, rows).map((section) => [wire(section.key), section.rows.length]), window: definition.window, rows: windowRows(definition, rows),
    effects: {
      table: 'message', identity: 'id', columns: definition.columns.map((column) => column.table),
      filter: definition.filter.map(({ column, op, value, collation }) => (op === 'isNull' || op === 'notNull' ? { column, op } : { column, op, operand: { value: wire(value) }, collation })),
      mutations,
    } };
  if (definition.order) message.order = definition.order.map(({ column, descending, nullsFirst, collation }) => ({ column, descending, nullsFirst, collation }));
  return message;
}

/** The `changes` from list `old` to `now`, with the rows of the window: what a server sends. */
function changesOf(definition, old, now, sub, from, to) {
  const { changes } = sectionChanges(sectionsOf(definition, old), sectionsOf(definition, now),
    { keyOf: valueKey, wireOf: wire, contentOf: (row) => JSON.stringify(row.values.map(wire)) });
  return { sub, type: 'changes', from, to, ...changes, rows: windowRows(definition, now) };
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
  const value = (operand, column) => {
    if (operand !== null && operand !== undefined) return decoded(resolve(operand).value);
    const values = valuesOfColumn(column);
    return values[random(values.length)];
  };
  const after = new Map([...table].map(([id, row]) => [id, new Map(row)]));
  const key = (id) => (typeof id === 'bigint' ? Number(id) : id);
  for (const statement of statements) {
    if (statement.insert) {
      const values = statement.insert.values;
      const row = new Map(tableColumns.map((column) => [column, column === 'id' && !values.id ? Math.max(0, ...after.keys()) + 1 : value(values[column], column)]));
      if (after.has(key(row.get('id')))) return null;
      after.set(key(row.get('id')), row);
      continue;
    }
    const body = statement.update ?? statement.delete;
    const id = key(value(body.key));
    const row = after.get(id);
    if (!row || !body.where.every((condition) => meets(row, { ...condition, collation: condition.collation }, value(condition.operand)))) continue;
    if (statement.delete) {
      after.delete(id);
      continue;
    }
    for (const [column, operand] of Object.entries(statement.update.set)) row.set(column, value(operand, column));
    // A new identity: the row is the new one's, unless another row has it.
    const newId = key(row.get('id'));
    if (newId === id) continue;
    if (after.has(newId) || newId === null) return null;
    after.delete(id);
    after.set(newId, row);
  }
  return after;
}

// ---------------------------------------------------------------------------------------------
// Random tables, lists and mutations

function randomCondition(random, withArguments) {
  const column = tableColumns[1 + random(tableColumns.length - 1)];
  const op = ops[random(ops.length)];
  if (op === 'isNull' || op === 'notNull') return { column, op };
  const values = valuesOfColumn(column);
  const value = values[random(values.length)];
  const collation = collations[random(3)];
  if (!withArguments) return { column, op, value, collation };
  return { column, op, operand: randomOperand(random, column), collation };
}

/** An operand for `column` (`day` takes its values, and its argument `d`). */
function randomOperand(random, column = null) {
  const values = valuesOfColumn(column);
  const choice = random(10);
  if (choice < 5) return { value: wire(values[random(values.length)]) };
  const operand = { arg: column === 'day' ? 'd' : ['a', 'b', 'c'][random(3)] };
  if (choice < 7) operand.default = wire(values[random(values.length)]);
  return operand;
}

/**
 * A list: its columns ({name, table}: table null for the expression), filter and order; one of
 * three sectioned by `day` (its first order term); its window is chosen with its rows.
 */
function randomList(random) {
  const wide = random(3) === 0;   // every column: a source for the other list's rows
  const sectioned = random(3) === 0;
  const shown = tableColumns.filter((column) => wide || random(4) !== 0 || (sectioned && column === 'day'));
  for (let i = shown.length - 1; i > 0; i--) { const j = random(i + 1); [shown[i], shown[j]] = [shown[j], shown[i]]; }
  const columns = shown.map((name) => ({ name, table: name }));
  if (random(4) === 0) columns.splice(random(columns.length + 1), 0, { name: 'x', table: null });
  const filter = [];
  for (let i = random(3); i > 0; i--) {
    // Mostly on a column the list shows, sometimes one it does not (known only when the filter holds it equal).
    const condition = randomCondition(random, false);
    const shownColumns = columns.filter((column) => column.table !== null && column.table !== 'id');
    if (random(3) !== 0 && shownColumns.length > 0) {
      condition.column = shownColumns[random(shownColumns.length)].table;
      if ('value' in condition) condition.value = valuesOfColumn(condition.column)[random(valuesOfColumn(condition.column).length)];
    }
    filter.push(condition);
  }
  let order = null;
  if (sectioned || random(8) !== 0) {
    order = [];
    if (sectioned) order.push({ column: columns.findIndex((column) => column.table === 'day'), descending: random(2) === 0, nullsFirst: random(2) === 0, collation: 'binary' });
    const orderable = columns.map((column, index) => ({ column, index })).filter(({ column }) => column.table !== null);
    for (let i = random(3); i > 0 && orderable.length > 0; i--) {
      order.push({ column: orderable[random(orderable.length)].index, descending: random(2) === 0, nullsFirst: random(2) === 0, collation: collations[random(3)] });
    }
    order.push({ column: null, descending: false, nullsFirst: true, collation: 'binary' });
  }
  return { columns, filter, order, sectioned, window: [0, 1000] };
}

/** A statement; `hints`, the lists' filters' equalities, which an update's `set` often meets. */
function randomStatement(random, hints) {
  const kind = random(10);
  const set = () => {
    const values = {};
    for (let i = 1 + random(2); i > 0; i--) {
      const column = tableColumns[1 + random(5)];
      values[column] = random(7) === 0 ? null : randomOperand(random, column);
    }
    if (hints.length > 0 && random(2) === 0) {
      const hint = hints[random(hints.length)];
      values[hint.column] = { value: wire(hint.value) };
    }
    if (random(5) === 0) values.id = { arg: 'n' };   // a new identity: the old row goes, the new one comes
    return values;
  };
  // Mostly the row of `id`; sometimes another one's, `id2`.
  const key = () => ({ arg: random(4) === 0 ? 'id2' : 'id' });
  const where = () => Array.from({ length: random(2) }, () => randomCondition(random, true));
  if (kind < 3) {
    const values = {};
    const idChoice = random(20);
    if (idChoice === 0) values.id = null; else if (idChoice > 1) values.id = { arg: 'id' };
    for (const column of tableColumns.slice(1)) {
      const choice = random(7);
      if (choice < 5) values[column] = randomOperand(random, column); else if (choice === 5) values[column] = null;
    }
    return { insert: { values } };
  }
  if (kind < 8) return { update: { key: key(), where: where(), set: set() } };
  return { delete: { key: key(), where: where() } };
}

/** A row as the test compares it: its identity and values, exactly. */
const rowText = (row) => JSON.stringify([wire(row.id), row.values === null ? null : row.values.map(wire)]);

/** The list a LiveQuery shows, as text: its count, sections, and each row it knows (null: not known). */
function shownText(live) {
  const displayed = live.displayed;
  return JSON.stringify({ count: displayed.count, sections: displayed.sections.keys.map((key, index) => [wire(key), displayed.sections.counts[index]]),
    rows: Array.from({ length: displayed.count }, (_, position) => { const row = displayed.row(position); return row && JSON.parse(rowText(row)); }) });
}

/**
 * Whether `live` shows list `rows` of `definition`: its count, its sections and their counts,
 * and at each position whose row it knows, that row with its values.
 */
function shows(live, definition, rows) {
  const displayed = live.displayed;
  const sections = sectionsOf(definition, rows);
  if (displayed.count !== rows.length) return false;
  if (JSON.stringify(displayed.sections.keys.map(wire)) !== JSON.stringify(sections.map((section) => wire(section.key)))) return false;
  if (JSON.stringify(displayed.sections.counts) !== JSON.stringify(sections.map((section) => section.rows.length))) return false;
  for (let position = 0; position < displayed.count; position++) {
    const row = displayed.row(position);
    if (row === null) continue;
    if (row.values === null ? valueKey(row.id) !== valueKey(rows[position].id) : rowText(row) !== rowText(rows[position])) return false;
  }
  return true;
}

test('Random tables, lists (sectioned or not, windows or whole) and mutations: the pending list derived is the list the commit makes or the list before, and the commit replaces it without a move (seeded)', async () => {
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
  const stats = {
    cases: 0, lists: 0, sectioned: 0, windowed: 0, shown: 0, shownSectioned: 0, shownWindowed: 0, hidden: 0, hiddenWithOthers: 0, sectionsEmptied: 0,
    placesKnown: 0, inserts: 0, updates: 0, deletes: 0, fromOther: 0, refused: 0, stopped: {},
  };
  for (let round = 0; round < 1500; round++) {
    // The table: ids 1…14, hostile values (`day` its own); two lists over it.
    const table = new Map();
    for (let i = random(12); i > 0; i--) {
      const id = 1 + random(14);
      table.set(id, new Map(tableColumns.map((column) => [column, column === 'id' ? id : valuesOfColumn(column)[random(valuesOfColumn(column).length)]])));
    }
    const definitions = [randomList(random), randomList(random)];
    const hints = definitions.flatMap((definition) => definition.filter.filter((condition) => condition.op === '='));
    const statements = Array.from({ length: random(4) === 0 ? 2 : 1 }, () => randomStatement(random, hints));
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
    } else if (random(5) === 0) {
      // A replacement: a row goes and a new one comes, two effects that show together or not at all.
      const values = { id: { arg: 'n' } };
      for (const column of tableColumns.slice(1)) values[column] = randomOperand(random, column);
      statements.splice(0, statements.length, { delete: { key: { arg: 'id' }, where: [] } }, { insert: { values } });
    }
    const before = definitions.map((definition) => select(definition, table));
    // Half the lists held whole, the others through a window of 1…8 rows that may miss either end.
    definitions.forEach((definition, index) => { if (random(2) === 0) definition.window = [random(before[index].length + 1), 1 + random(8)]; });
    const epoch = `k${round}`;
    definitions.forEach((definition, index) => socket.serve(resetOf(definition, before[index], index + 1, `${epoch}:1`, { m: statements })));
    // The arguments: identities held by a list (mostly in its window), in the table only, new, or none.
    const args = {};
    const inTable = [...table.keys()];
    const inserts = statements.some((statement) => statement.insert?.values.id?.arg === 'id');
    for (const name of ['id', 'id2']) {
      const idChoice = random(20);
      const which = random(2), [start, count] = definitions[which].window;
      const heldIds = folder ?? before[which].filter((_, position) => random(3) === 0 || (position >= start && position < start + count)).map((row) => row.id);
      if (inserts && name === 'id' ? idChoice < 14 : idChoice >= 19) args[name] = 15 + random(5);
      else if (idChoice < 16 && heldIds.length > 0) args[name] = heldIds[random(heldIds.length)];
      else if (idChoice < 19 && inTable.length > 0) args[name] = inTable[random(inTable.length)];
    }
    if (random(12) !== 0) args.n = random(3) === 0 && inTable.length > 0 ? inTable[random(inTable.length)] : 20 + random(5);
    for (const name of ['a', 'b', 'c']) if (random(12) !== 0) args[name] = wire(pool[random(pool.length)]);
    if (random(12) !== 0) args.d = wire(days[random(days.length)]);

    const derivations = lists.map((live) => deriveEffects(live.model, 'm', args, lists.map((other) => other.model)));
    const after = apply(statements, args, table, random);
    const expected = after === null ? null : definitions.map((definition) => select(definition, after));
    const beforeText = lists.map(shownText);
    for (const list of events) list.length = 0;
    const answer = mutator.mutate('m', args);
    answer.catch(() => {});
    const id = mutator.nextId - 1;
    stats.cases += 1;
    if (after === null) stats.refused += 1;
    /** @type {boolean[]} per list, whether its pending list is the one the commit makes, with something to show */
    const shownWhole = [false, false];
    lists.forEach((live, index) => {
      const definition = definitions[index], derivation = derivations[index];
      const [start, count] = definition.window;
      const whole = start === 0 && start + count >= before[index].length;
      stats.lists += 1;
      if (definition.sectioned) stats.sectioned += 1;
      if (!whole) stats.windowed += 1;
      const context = () => JSON.stringify({ seed: String(seed), round, list: index, args, statements, definition, derivation, shown: JSON.parse(shownText(live)),
        before: before[index].map((row) => JSON.parse(rowText(row))), expected: expected?.[index].map((row) => JSON.parse(rowText(row))) },
      (key, value) => (typeof value === 'bigint' ? String(value) : value instanceof Uint8Array ? [...value] : value));
      // What was shown is what was derived (the mutator derives as deriveEffects does).
      assert.deepEqual(mutator.effects(id).filter((effect) => effect.list === live).length, derivation.effects.length, context());
      if (derivation.stopped) {
        stats.stopped[derivation.stopped] = (stats.stopped[derivation.stopped] ?? 0) + 1;
        assert.equal(shownText(live), beforeText[index], context());
        // Stopped for an argument missing, or an identity taken: the database refuses the mutation.
        if (derivation.stopped === 'unknownOperand' || derivation.stopped === 'identityTaken') assert.equal(after, null, context());
        else assert.ok(['unknownColumn', 'unknownIdentity', 'rowNotHeld'].includes(derivation.stopped), context());
        return;
      }
      if (after === null) return;   // a refused mutation's effects go with its error (below)
      // The pending list is the list the commit makes, or the list before: never anything else.
      const committed = shows(live, definition, expected[index]);
      const unchanged = shownText(live) === beforeText[index];
      assert.ok(committed || unchanged, `neither the list the commit makes nor the list before: ${context()}`);
      assert.ok(!unchanged || shows(live, definition, before[index]), context());
      // Held whole and ordered, with no section the commit opens, every place is known: it shows.
      const opened = sectionsOf(definition, expected[index]).some((section) => !sectionsOf(definition, before[index]).some((old) => valueKey(old.key) === valueKey(section.key)));
      if (whole && definition.order !== null && !opened) {
        stats.placesKnown += 1;
        assert.ok(committed, `every place known, and not shown: ${context()}`);
      }
      if (committed && !unchanged) {
        shownWhole[index] = true;
        stats.shown += 1;
        if (definition.sectioned) stats.shownSectioned += 1;
        if (!whole) stats.shownWindowed += 1;
        if (live.displayed.sections.length < live.model.sections.length) stats.sectionsEmptied += 1;
        for (const effect of derivation.effects) {
          if (effect.insert) {
            stats.inserts += 1;
            if (before[1 - index].some((row) => row.id === effect.insert.id)) stats.fromOther += 1;
          } else if (effect.update) stats.updates += 1;
          else stats.deletes += 1;
        }
      } else if (unchanged && !committed) {
        stats.hidden += 1;
        if (derivation.effects.length > 1) stats.hiddenWithOthers += 1;
      }
    });
    if (after === null) {
      socket.serve({ type: 'error', mutation: { client: 'oracle', id }, code: 'mutationFailed', message: 'refused' });
      lists.forEach((live, index) => {
        assert.equal(shownText(live), beforeText[index], `round ${round}: a refusal takes the effects back`);
        assert.equal(live.pendingCount, 0);
      });
      continue;
    }
    // The commit: each list's changes, then the answer naming their versions.
    lists.forEach((live, index) => {
      const definition = definitions[index];
      const count = live.displayed.count;
      events[index].length = 0;
      socket.serve(changesOf(definition, before[index], expected[index], index + 1, `${epoch}:1`, `${epoch}:2`));
      assert.ok(shows(live, definition, expected[index]), `round ${round}: list ${index} after the commit: ${shownText(live)}`);
      assert.equal(live.displayed.hasPending, false, `round ${round}: list ${index}: the effects do nothing more, the server shows them`);
      if (shownWhole[index]) {
        // Nothing moves: every row shown with its values stays where it was (a pending row the
        // window no longer holds goes, even where the list knows its identity without its values).
        const { transition } = events[index].find((event) => event.type === 'changes');
        for (let position = 0; position < count; position++) {
          if (live.displayed.row(position)?.values == null) continue;
          assert.equal(transition.newPosition(position), position, `round ${round}: list ${index} row ${position} stays`);
          assert.equal(transition.oldPosition(position), position);
        }
      }
    });
    socket.serve({ type: 'mutated', client: 'oracle', id, versions: { 1: `${epoch}:2`, 2: `${epoch}:2` }, duplicate: false });
    lists.forEach((live, index) => {
      assert.equal(live.pendingCount, 0, `round ${round}: the effects go with the answer`);
      assert.ok(shows(live, definitions[index], expected[index]));
      for (const event of events[index].filter((e) => e.type === 'pending')) {
        for (let position = 0; position < live.displayed.count; position++) assert.equal(event.transition.newPosition(position), position);
      }
    });
  }
  console.log(`derived effects oracle: ${JSON.stringify(stats)}`);
  // Enough of each kind to test something.
  assert.ok(stats.shown >= stats.cases / 10, `${stats.shown} lists showed the commit's list`);
  for (const kind of ['inserts', 'updates', 'deletes', 'fromOther', 'refused', 'shownSectioned', 'shownWindowed', 'hidden', 'hiddenWithOthers', 'sectionsEmptied']) {
    assert.ok(stats[kind] >= 5, `${kind}: ${stats[kind]}`);
  }
  for (const reason of ['unknownColumn', 'unknownOperand', 'identityTaken', 'rowNotHeld']) assert.ok((stats.stopped[reason] ?? 0) >= 5, `${reason}: ${stats.stopped[reason]}`);
  mutator.stop();
  for (const live of lists) live.stop();
});

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));
