// The derived effects oracle (Tests/LiveListServerTests/DerivedEffectsTests.swift) for the web
// client, against a real server: one Connection with two lists of the query `inbox` (folders inbox
// and archive, each held whole) and a Mutator; COUNT random mutations of the Swift oracle's kinds,
// called without effects, so that each list shows what it derives from its reset's `effects`.
// Each list's displayed list is read before the call, right after it (the derived effects are laid
// synchronously in `mutate`, before the send: nothing from the server can arrive before the event
// loop turns), and once the answer came and the list holds the commit with no effect pending. The
// pending list must be the list after (shown) or the list before (not shown), never anything else;
// and a list that showed the list after must take the commit without a move, an insert or a delete
// (every transition it reports meanwhile maps each position to itself).
//
// Prints one JSON line: per list, the lists the commit changed, shown and not shown, the
// violations (the first few with their step), and the lists at the end (to compare with the
// SELECT).
//
//   node --experimental-websocket Tests/Web/derived-oracle-client.mjs URL SEED COUNT [--no-nul]
//
// `--no-nul` (PostgreSQL, whose text holds no NUL): NUL is taken out of nineteen texts in twenty;
// the twentieth keeps it, and its mutation is refused. LIVELIST_ORACLE_NO_DERIVATION=1 turns the
// Mutator's `deriveEffects` off: nothing shows, and the test's "enough shown" must fail.
import { Connection, LiveQuery, MutationError, Mutator, Real } from '../../Web/livelist.js';
import { splitmix } from './support.mjs';

const [url, seedText, countText, ...flags] = process.argv.slice(2);
const { below } = splitmix(seedText);
const count = Number(countText);
const noNUL = flags.includes('--no-nul');

// WireFixture.alphabet: both normalization forms of é, NUL, emoji, plain letters.
const alphabet = ['e\u0301', '\u00e9', 'a', 'b', 'Z', '\0', '😀', ' ', 'ß', 'i\u0307', 'Ω'];
function text() {
  const made = Array.from({ length: below(6) + 1 }, () => alphabet[below(alphabet.length)]).join('');
  return noNUL && below(20) !== 0 ? made.replaceAll('\0', '') : made;
}

let nextID = 10_000;
/**
 * A call as DerivedEffectsTests.randomCall makes one: `ids`, the identities the lists hold.
 * @param {number[]} ids
 * @returns {[string, Record<string, unknown>]}
 */
function randomCall(ids) {
  const id = ids.length === 0 || below(8) === 0 ? 5_000 : ids[below(ids.length)];
  switch (below(9)) {
    case 0: case 1: {
      // Now and then an identity the table has: the database refuses it.
      nextID += below(6) === 0 ? 0 : 1;
      const args = { id: nextID, day: below(8), sender: text(), subject: text() };
      if (below(3) === 0) args.folder = 'archive';
      return ['add', args];
    }
    case 2: return ['archive', { id }];
    case 3: return ['restore', { id }];
    case 4: return ['edit', { id, day: below(8), subject: text() }];
    case 5: return ['rename', { id, sender: text(), after: below(8) }];
    case 6: return ['remove', { id }];
    case 7:
      nextID += 1;
      return ['draft', { id: nextID, day: below(8), subject: text() }];
    default: return ['later', { id }];
  }
}

/** A value in the wire's JSON form (exact: a BigInt, a Real, bytes stay what they are). */
function wire(value) {
  if (typeof value === 'bigint') return { i: String(value) };
  if (value instanceof Real) return { f: value.value === Infinity ? 'inf' : value.value === -Infinity ? '-inf' : value.value };
  if (value instanceof Uint8Array) return { b: Buffer.from(value).toString('base64') };
  return value;
}

/**
 * The list a LiveQuery shows: its sections (key, count) and each row's values (null: a row it
 * does not know), and how many of its rows are pending.
 * @param {LiveQuery} live
 */
function read(live) {
  const displayed = live.displayed;
  const rows = [];
  let pending = 0;
  for (let position = 0; position < displayed.count; position++) {
    const row = displayed.row(position);
    rows.push(row && row.values ? row.values.map(wire) : null);
    if (row?.pending) pending += 1;
  }
  const sections = displayed.sections.keys.map((key, index) => [wire(key), displayed.sections.counts[index]]);
  return { text: JSON.stringify({ sections, rows }), rows, sections, pending };
}

/**
 * Whether `transition` (a DisplayedTransition) keeps every row where it was: nothing moved,
 * inserted or deleted; null when it does, else the first position that did not stay.
 */
function moved(transition) {
  const { from, to } = transition;
  if (from.count !== to.count) return { count: [from.count, to.count] };
  for (let position = 0; position < from.count; position++) {
    if (transition.newPosition(position) !== position) return { from: position, to: transition.newPosition(position) };
    if (transition.oldPosition(position) !== position) return { to: position, from: transition.oldPosition(position) };
  }
  return null;
}

const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

/** Waits until `condition()` holds, for at most `ms`; throws naming `what` when it does not. */
async function until(what, condition, ms = 10_000) {
  for (let waited = 0; !condition(); waited += 5) {
    if (waited >= ms) throw new Error(`not within ${ms} ms: ${what}`);
    await sleep(5);
  }
}

const deadline = setTimeout(() => {
  console.log(JSON.stringify({ error: 'the oracle did not finish within 120 s' }));
  process.exit(1);
}, 120_000);

const connection = new Connection(url);
const folders = ['inbox', 'archive'];
const lists = folders.map((folder) => new LiveQuery(connection, 'inbox', { args: { folder }, window: [0, 200], prefetch: 0 }));
const mutator = new Mutator(connection, `derived-oracle-js-${seedText}`);
if (process.env.LIVELIST_ORACLE_NO_DERIVATION) mutator.deriveEffects = false;   // to see the oracle fail
/** Per list, what it reports while a mutation is recorded: `{type, moved}` of each event that changes the list. */
const recorded = [[], []];
let recording = false;
lists.forEach((live, index) => {
  live.observe((event) => {
    if (!recording) return;
    if (event.type === 'reset') recorded[index].push({ type: 'reset', moved: { reset: event.reason } });
    else if ('transition' in event) recorded[index].push({ type: event.type, moved: moved(event.transition) });
  });
  live.start();
});
mutator.start();

try {
  await until('both lists\' first state, with effects', () => lists.every((live) => live.state === 'live' && live.model.version !== null && live.model.effects !== null));
  const stated = [...lists[0].model.effects.mutations.keys()].sort();

  const tally = folders.map(() => ({ changed: 0, shown: 0, notShown: 0, violations: 0, pendingRows: 0 }));
  let refused = 0, refusedShown = 0, unknownRows = 0;
  /** @type {string[]} the refused calls a list showed: list, name, error code */
  const refusedShownCalls = [];
  /** @type {Record<string, {changed: number, shown: number}>} per mutation, the lists it changed and those that showed it */
  const byName = {};
  const violations = [];
  for (let step = 0; step < count; step++) {
    const ids = [...new Set(lists.flatMap((live) => read(live).rows.filter(Boolean).map((row) => row[0])))];
    const [name, args] = randomCall(ids);
    const before = lists.map(read);
    for (const events of recorded) events.length = 0;
    const answer = mutator.mutate(name, args);
    // Laid synchronously in `mutate`, before the send: the lists show what they derived.
    const pending = lists.map(read);
    recording = true;
    let failed = null;
    try {
      await answer;
    } catch (error) {
      if (!(error instanceof MutationError)) throw error;
      failed = error.code;
      refused += 1;
    }
    // The commit is in each list once its sync answers; its effects go with the answer (the
    // `mutated` names the lists' versions), or after the sync.
    await Promise.all(lists.map((live) => live.sync()));
    await until(`step ${step}: no effect pending`, () => lists.every((live) => live.pendingCount === 0));
    recording = false;
    const after = lists.map(read);
    folders.forEach((folder, index) => {
      const [was, expected, now] = [before[index], pending[index], after[index]];
      const violation = (why, extra = {}) => {
        tally[index].violations += 1;
        if (violations.length < 4) {
          violations.push({ step, why, folder, name, args, failed, ...extra, before: was.rows, pending: expected.rows, after: now.rows,
            sections: { before: was.sections, pending: expected.sections, after: now.sections } });
        }
      };
      if (expected.rows.includes(null)) unknownRows += 1;
      // A refused mutation's effects went with its error (the lists are the SELECT: checked by the test).
      if (failed !== null) {
        if (expected.text !== was.text) {
          // The database refused what the derivation could not foresee (PostgreSQL's text holds no NUL).
          refusedShown += 1;
          refusedShownCalls.push(`${folder} ${name} ${failed}${Object.values(args).some((value) => typeof value === 'string' && value.includes('\0')) ? ' (NUL)' : ''}`);
        }
        if (now.text !== was.text) violation('refused, yet the list changed');
        return;
      }
      if (was.text !== now.text) {
        tally[index].changed += 1;
        byName[name] ??= { changed: 0, shown: 0 };
        byName[name].changed += 1;
        if (expected.text === now.text) {
          tally[index].shown += 1;
          byName[name].shown += 1;
          tally[index].pendingRows += expected.pending;
        } else if (expected.text === was.text) tally[index].notShown += 1;
        else violation('the pending list is neither the list before nor the one after');
      } else if (expected.text !== was.text) {
        violation('unchanged by the commit, yet showed a change');
      }
      // A list that showed the commit's list takes it in place: nothing moves, comes or goes.
      if (expected.text === now.text) {
        const bad = recorded[index].find((event) => event.moved !== null);
        if (bad) violation('the commit moved, inserted or deleted rows of a list that showed it', { event: bad, events: [...recorded[index]] });
      }
    });
  }
  clearTimeout(deadline);
  const final = lists.map((live) => read(live).rows);
  const total = (key) => tally.reduce((sum, list) => sum + list[key], 0);
  console.log(JSON.stringify({
    steps: count, stated, refused, refusedShown, refusedShownCalls, unknownRows,
    changed: total('changed'), shown: total('shown'), notShown: total('notShown'), violations: total('violations'), pendingRows: total('pendingRows'),
    lists: Object.fromEntries(folders.map((folder, index) => [folder, tally[index]])), byName,
    firstViolations: violations,
    final: Object.fromEntries(folders.map((folder, index) => [folder, final[index]])),
  }));
  mutator.stop();
  for (const live of lists) live.stop();
  process.exit(0);
} catch (error) {
  console.log(JSON.stringify({ error: String(error?.stack ?? error) }));
  process.exit(1);
}
