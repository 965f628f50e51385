// mutator.js — a client's mutations (docs/PROTOCOL.md, `mutate`): numbered under the client's
// name, kept until answered, sent again in order on a new connection, each applied once; and what
// each is expected to do, shown at once on the lists it names (or, for a list the app describes no
// effect on, what the list's reset states) until they hold its commit.

import { PendingMutations } from './pending-mutations.js';
import { deriveEffects } from './derived-effects.js';
import { PendingEffect } from './pending-overlay.js';
import { Connection } from './connection.js';

/** @typedef {import('./connection.js').ConnectionOptions} ConnectionOptions */
/** @typedef {import('./connection.js').ConnectionUser} ConnectionUser */
/** @typedef {import('./live-query.js').LiveQuery} LiveQuery */
/** @typedef {import('./pending-overlay.js').EffectInput} EffectInput */
/** @typedef {import('./pending-mutations.js').Mutation} Mutation */

/**
 * An expected effect on a list, as `mutate` takes it: `{list, insert|update|delete}`.
 * @typedef {EffectInput & {list: LiveQuery}} ListEffect
 */

/**
 * A Mutator's options; without a Connection, also those of the one it makes for itself.
 * `deriveEffects` (default true): show the effects the lists' resets state for a mutation on the
 * lists the app gives no effect for.
 * @typedef {ConnectionOptions & {nextId?: number, pending?: Mutation[], resendDelay?: number, deriveEffects?: boolean}} MutatorOptions
 */

/** A mutation the server refused: `code` is the protocol's error code (`conflict`, `mutationFailed`…), or `stopped` and `tooManyPending` (the client's). */
export class MutationError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   */
  constructor(code, message) {
    super(`${code}: ${message}`);
    this.code = code;
  }
}

/**
 * Effects as `mutate` takes them (`{list, insert|update|delete}`), checked, by list; a TypeError for one that is not.
 * @param {Iterable<ListEffect>} effects
 * @returns {Map<LiveQuery, PendingEffect[]>}
 */
function effectsByList(effects) {
  const byList = new Map();
  for (const effect of effects) {
    const list = effect?.list;
    if (!list || typeof list.addPending !== 'function') throw new TypeError('an effect names its list: {list: liveQuery, …}');
    if (!byList.has(list)) byList.set(list, []);
    byList.get(list).push(new PendingEffect(effect));
  }
  return byList;
}

/**
 * A PendingEffect as `mutate` takes it, without its list: `{insert: {id, values, placement}}`, `{update: {id, values}}` or `{delete: {id}}`.
 * @param {PendingEffect} effect
 * @returns {EffectInput}
 */
export function effectForm(effect) {
  /** @type {Record<string, unknown>} */
  const body = { id: effect.id };
  if (effect.values) body.values = Object.fromEntries(effect.values);
  const placement = effect.placement;
  if (placement) body.placement = placement.edge === 'sorted' ? 'sorted' : { [placement.edge]: placement.section };
  return { [effect.kind]: body };
}

/**
 * Sends a client's mutations to a `livelist serve` server, each applied once: numbered under the
 * client's name, kept until answered, and sent again in order after a lost connection (to this
 * server or another over the same PostgreSQL database, which answers a mutation it applied
 * already with its first outcome). Keep `client`, `nextId` and `pendingMutations` (give them back
 * as the options `nextId` and `pending`) to keep the promise across page loads; give each tab a
 * client name of its own. `mutate` resolves with the server's `mutated` and rejects with a
 * MutationError.
 *
 * The connection: `new Mutator(connection, client, options)` sends on a Connection shared with the
 * page's live queries (one socket, one reconnect loop, one liveness watch); `new Mutator(url,
 * client, options)` makes one of its own from the options (`WebSocket`, `token`, `backoff`,
 * `liveness`, `connectTimeout`: see Connection). When a socket opens, the lists on it subscribe
 * first and the mutator then sends what waits. A connection of its own is made again after a loss
 * only while mutations wait (else with the next one).
 *
 * `mutate(name, args, {effects})` also shows what the mutation is expected to do, at once, in the
 * live queries it names — `[{list: live, insert: {id, values, placement}}, {list: live, update:
 * {id, values}}, {list: live, delete: {id}}]`, in that order (see PendingEffect). The mutator
 * keeps them by the mutation's number, not in the call: a mutation restored from a previous page
 * load (the option `pending`) is given its effects with `show(effects, id)`, and `effects(id)`
 * reads them back. Whenever a mutation is answered — a caller waiting for it or not — its rows
 * stay marked pending until each of its lists holds the commit, then the server's rows stand in
 * their place; a refusal takes them back at once. A list on the mutator's connection holds the
 * commit when the `mutated` comes (its `versions` name the list's version: nothing more is
 * sent); a list on another connection when its `sync()` answers after the `mutated`. After
 * `stop()` the effects stay shown, as their mutations stay pending.
 *
 * A list on the mutator's connection that the app gives no effect for shows the effect the
 * server states: when the list's last reset (or the `changes` that answered its new arguments)
 * stated `effects` naming the mutation, `mutate` computes from the rows the client holds what the
 * mutation's statements will do to the list (docs/PROTOCOL.md, "Effects the server states"; see
 * deriveEffects) — the rows it inserts into the list, changes, or takes out — and shows that as
 * the app's effects are shown, with the same lifetime (`effects(id)` reads them back; an
 * OfflineStore keeps them, and shows them again after a page load as the app's), but whole or not
 * at all: when one of them would not show as the commit will (an insert or a moved row whose place
 * is not among the rows held, a row held that the window lacks), none of them shows on that list
 * until the commit does. An update may bring in a row another list of the connection, or of the
 * call's `effects`, holds. A list whose app gives an effect shows only the app's; nothing known
 * (an argument missing, a column the lists do not show) shows nothing. The option
 * `deriveEffects: false` (or the property) turns it off.
 */
export class Mutator {
  static maximumPending = 1000;

  /**
   * @param {Connection | string} connection a Connection to share, or the server's URL (`ws://host/live`)
   * @param {string} client the client's name: 1–128 bytes, its own (a random UUID), kept across page loads
   * @param {MutatorOptions} options
   */
  constructor(connection, client, { nextId = 1, pending = [], resendDelay = 100, deriveEffects = true, ...connectionOptions } = {}) {
    this.connection = connection instanceof Connection ? connection : new Connection(connection, connectionOptions);
    this.url = this.connection.url;
    this.pending = new PendingMutations(client, nextId, pending);
    this.resendDelay = resendDelay;
    /** Whether `mutate` shows the effects the lists' resets state on the lists the app gives none for. */
    this.deriveEffects = deriveEffects;
    /** Answers `mutationUnavailable` in a row: what the wait before sending again doubles with. */
    this.busyAnswers = 0;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.resendTimer = null;
    this.stopped = false;
    /** @type {Map<number, Array<{list: LiveQuery, effects: PendingEffect[], exact: boolean}>>} mutation number → effects shown, one entry a list (exact: derived) */
    this.shownEffects = new Map();
    /**
     * Called whenever `nextId` or `pendingMutations` change: synchronously after a mutation is
     * numbered (and its effects shown) and before it is sent, and after each answer. Keep them
     * there, synchronously (an OfflineStore's `mutator` does): a page closed after the send but
     * before they are kept would number its next mutation as one the server applied already, and
     * be answered with that one's outcome.
     * @type {(() => void) | null}
     */
    this.onPendingChange = null;
    /** @type {ConnectionUser} */
    this.#user = {
      kind: 'mutator',
      opened: () => this.#sendAll(),
      connecting: () => {},
      lost: () => {},
      wantsConnection: () => !this.stopped && this.pending.entries.length > 0,
      receive: (message) => this.#receive(message),
    };
  }

  /** @type {ConnectionUser} the mutator's side of the connection */
  #user;

  /** Whether the mutator uses its connection (started, not stopped). */
  #attached = false;

  /** Tells `onPendingChange`; a hook that throws is reported and stops nothing. */
  #pendingChanged() {
    try {
      this.onPendingChange?.();
    } catch (error) {
      queueMicrotask(() => { throw error; });
    }
  }

  get client() { return this.pending.client; }
  get nextId() { return this.pending.nextId; }
  get pendingCount() { return this.pending.entries.length; }
  /** The mutations not answered yet, in number order: what to keep for the next page load. */
  get pendingMutations() { return this.pending.toResend; }
  /** Whether mutations go out now: started, its connection open. */
  get open() { return this.#attached && this.connection.isOpen; }
  /** The connection's socket (open or opening), or null. */
  get socket() { return this.connection.socket; }
  /** Failed attempts to connect since the connection last opened. */
  get attempt() { return this.connection.attempt; }

  /** Connects (unless the connection is open, or waits for its backoff) and sends the mutations pending, restored ones included. */
  start() {
    this.stopped = false;
    if (!this.#attached) {
      this.#attached = true;
      this.connection.attach(this.#user);
      if (this.connection.isOpen) {
        this.#sendAll();
        return;
      }
    }
    this.connection.connect();
  }

  /**
   * Runs published mutation `name` with `args` once; resolves with its `mutated`. `effects` are
   * shown at once, marked pending, until the mutation is answered and its lists hold the commit
   * (see the class), and on the connection's other lists the effects their resets state for
   * `name`. Rejects with a TypeError, sending nothing, when an effect is not one. After `stop()`,
   * a call starts the mutator again.
   * @param {string} name
   * @param {Record<string, unknown>} [args]
   * @param {{effects?: ListEffect[]}} options
   * @returns {Promise<any>} the server's `mutated`
   */
  mutate(name, args = {}, { effects = [] } = {}) {
    return new Promise((resolve, reject) => {
      if (this.pending.entries.length >= Mutator.maximumPending) {
        reject(new MutationError('tooManyPending', `${Mutator.maximumPending} mutations wait for the server's answer already`));
        return;
      }
      // Checked before anything is numbered or sent (a TypeError rejects the call).
      const byList = effectsByList(effects);
      const derived = this.deriveEffects ? this.#derive(name, args, byList) : new Set();
      const mutation = this.pending.add(name, args, { resolve, reject });
      this.#show(byList, mutation.id, derived);
      this.#pendingChanged();
      if (this.open) this.connection.send(mutation); else this.start();
    });
  }

  /**
   * Shows `effects` (`[{list, insert|update|delete}]`, as `mutate` takes them) for pending
   * mutation `id` — one restored from a previous page load — until it is answered, as `mutate`
   * shows its own (after any shown for it already). Nothing happens when no mutation `id` is
   * pending. Throws a TypeError, showing none of them, for an effect that is not one.
   * @param {ListEffect[]} effects
   * @param {number} id
   */
  show(effects, id) {
    const byList = effectsByList(effects);
    if (!this.pending.entries.some((entry) => entry.mutation.id === id)) return;
    this.#show(byList, id);
  }

  /**
   * The effects shown for pending mutation `id` (none: `[]`), as `mutate` takes them: `{list,
   * insert: {id, values, placement}}`, `{list, update: {id, values}}` or `{list, delete: {id}}`,
   * values as the model holds them (see pendingValue). Grouped by list, in the order shown.
   * @param {number} id
   * @returns {ListEffect[]}
   */
  effects(id) {
    return (this.shownEffects.get(id) ?? []).flatMap(({ list, effects }) => effects.map((effect) => ({ list, ...effectForm(effect) })));
  }

  /**
   * Adds to `byList` the effects the resets of the connection's lists state for mutation `name`
   * with `args`, on each list the app gives no effect for: computed from the rows the lists hold
   * now (an update may bring in a row another of them, or a list of the app's effects, holds).
   * Returns the lists it added effects for: they show them whole or not at all (exact).
   * @param {string} name
   * @param {Record<string, unknown>} args
   * @param {Map<LiveQuery, PendingEffect[]>} byList
   * @returns {Set<LiveQuery>}
   */
  #derive(name, args, byList) {
    const lists = this.connection.lists;
    const models = [...new Set([...lists, ...byList.keys()])].map((list) => list.model);
    /** @type {Map<LiveQuery, PendingEffect[]>} */
    const derived = new Map();
    for (const list of lists) {
      if (byList.has(list) || !list.model.effects) continue;
      const { effects } = deriveEffects(list.model, name, args, models);
      if (effects.length > 0) derived.set(list, effects.map((effect) => new PendingEffect(effect)));
    }
    for (const [list, effects] of derived) byList.set(list, effects);
    return new Set(derived.keys());
  }

  /**
   * The key a list holds mutation `id`'s effects under.
   * @param {number} id
   */
  #key(id) { return `${this.client}#${id}`; }

  /**
   * Shows `byList` for mutation `id`, after what it shows already; the lists of `derived` show
   * theirs exactly (whole or not at all). The app's effects given later for a list that shows
   * derived ones take their place: a list the app gives an effect for shows only the app's.
   * @param {Map<LiveQuery, PendingEffect[]>} byList
   * @param {number} id
   * @param {ReadonlySet<LiveQuery>} [derived]
   */
  #show(byList, id, derived = new Set()) {
    if (byList.size === 0) return;
    const shown = this.shownEffects.get(id) ?? [];
    for (const [list, effects] of byList) {
      const exact = derived.has(list);
      let entry = shown.find((candidate) => candidate.list === list);
      if (!entry) {
        entry = { list, effects: [], exact };
        shown.push(entry);
      } else if (entry.exact && !exact) {
        entry.effects = [];
        entry.exact = false;
      }
      entry.effects.push(...effects);
      list.addPending(this.#key(id), entry.effects, { exact: entry.exact });
    }
    this.shownEffects.set(id, shown);
  }

  /**
   * Takes mutation `id`'s effects back from `list` (null: from every list).
   * @param {number} id
   * @param {LiveQuery | null} [list]
   */
  #withdraw(id, list = null) {
    const shown = this.shownEffects.get(id);
    if (!shown) return;
    const left = [];
    for (const entry of shown) {
      if (list === null || entry.list === list) entry.list.removePending(this.#key(id)); else left.push(entry);
    }
    if (left.length === 0) this.shownEffects.delete(id); else this.shownEffects.set(id, left);
  }

  /**
   * Mutation `id` was answered: its effects go from each list once the list holds the commit — at
   * once from a list on this connection whose version `mutated.versions` names, after the list's
   * `sync()` from any other (a list whose sync fails, stopped or refused, lets them go then) — and
   * from every list at once when it was refused (`mutated` null).
   * @param {number} id
   * @param {{versions?: unknown} | null} mutated
   */
  #settle(id, mutated) {
    const shown = this.shownEffects.get(id);
    if (!shown) return;
    if (mutated === null) {
      this.#withdraw(id);
      return;
    }
    for (const { list } of shown) {
      if (list.holdsVersions(this.connection, mutated.versions)) this.#withdraw(id, list);
      else list.sync().catch(() => {}).then(() => this.#withdraw(id, list));
    }
  }

  /**
   * Stops sending. Every caller still waiting is rejected with a MutationError `stopped`; the
   * mutations stay pending (`pendingMutations`), sent again when the mutator starts, and their
   * effects stay shown. The connection closes when nothing else uses it.
   */
  stop() {
    this.stopped = true;
    if (this.resendTimer !== null) clearTimeout(this.resendTimer);
    this.resendTimer = null;
    if (this.#attached) {
      this.#attached = false;
      this.connection.detach(this.#user);
    }
    for (const waiter of this.pending.releaseWaiters()) waiter.reject(new MutationError('stopped', 'the mutator stopped; the mutation stays pending'));
  }

  /** Sends every mutation waiting, in number order (a new connection, or after a busy answer). */
  #sendAll() {
    for (const mutation of this.pending.toResend) this.connection.send(mutation);
  }

  /**
   * A message without `sub` on the connection: `mutated`, or a mutation's `error`.
   * @param {any} message
   */
  #receive(message) {
    const decision = this.pending.receive(message);
    if (decision.action === 'finish') {
      this.#pendingChanged();
      // Its effects go whoever waits for it: a caller, or no one (restored, or its caller stopped waiting).
      const id = decision.entry.mutation.id;
      if (decision.error) {
        this.#settle(id, null);
        decision.entry.reject?.(new MutationError(decision.error.code, decision.error.message));
      } else {
        this.busyAnswers = 0;
        this.#settle(id, decision.mutated);
        decision.entry.resolve?.(decision.mutated);
      }
    } else if (decision.action === 'resendAll' && this.resendTimer === null) {
      this.busyAnswers += 1;
      const delay = Math.min(5000, this.resendDelay * 2 ** Math.min(this.busyAnswers - 1, 6));
      this.resendTimer = setTimeout(() => {
        this.resendTimer = null;
        if (this.open) this.#sendAll();
      }, delay);
    }
  }
}
