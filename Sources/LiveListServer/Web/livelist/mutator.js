// mutator.js — a client's mutations (docs/PROTOCOL.md, `mutate`): numbered under the client's
// name, kept until answered, sent again in order on a new connection, each applied once; and what
// each is expected to do, shown at once on the lists it names until they hold its commit.

import { PendingMutations } from './pending-mutations.js';
import { PendingEffect } from './pending-overlay.js';
import { ConnectionWatch, reconnectDelay, unref, withToken } from './connection.js';

/** @typedef {import('./connection.js').SocketLike} SocketLike */
/** @typedef {import('./connection.js').SocketConstructor} SocketConstructor */
/** @typedef {import('./live-query.js').LiveQuery} LiveQuery */
/** @typedef {import('./pending-overlay.js').EffectInput} EffectInput */
/** @typedef {import('./pending-mutations.js').Mutation} Mutation */

/**
 * An expected effect on a list, as `mutate` takes it: `{list, insert|update|delete}`.
 * @typedef {EffectInput & {list: LiveQuery}} ListEffect
 */

/**
 * A Mutator's options: where its numbering stands and what a previous page left pending; the
 * WebSocket class, a bearer token, the backoff (ms, doubling from `base` to `cap`), the wait
 * before sending again after a busy answer, the opening handshake's time limit and the liveness
 * watch (ms of quiet before a probe, then ms for a frame; null: none).
 * @typedef {object} MutatorOptions
 * @property {number} [nextId]
 * @property {Mutation[]} [pending]
 * @property {SocketConstructor} [WebSocket]
 * @property {string | null} [token]
 * @property {[base: number, cap: number]} [backoff]
 * @property {number} [resendDelay]
 * @property {number} [connectTimeout]
 * @property {[quiet: number, answer: number] | null} [liveness]
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
 * `mutate(name, args, {effects})` also shows what the mutation is expected to do, at once, in the
 * live queries it names — `[{list: live, insert: {id, values, placement}}, {list: live, update:
 * {id, values}}, {list: live, delete: {id}}]`, in that order (see PendingEffect). The mutator
 * keeps them by the mutation's number, not in the call: a mutation restored from a previous page
 * load (the option `pending`) is given its effects with `show(effects, id)`, and `effects(id)`
 * reads them back. Whenever a mutation is answered — a caller waiting for it or not — its rows
 * stay marked pending until each of its lists holds the commit (its `sync()` answers after
 * `mutated`), then the server's rows stand in their place; a refusal takes them back at once.
 * After `stop()` they stay shown, as their mutations stay pending.
 */
export class Mutator {
  static maximumPending = 1000;

  /**
   * @param {string} url the server's WebSocket endpoint (`ws://host/live`)
   * @param {string} client the client's name: 1–128 bytes, its own (a random UUID), kept across page loads
   * @param {MutatorOptions} options
   */
  constructor(url, client, { nextId = 1, pending = [], WebSocket: Socket = /** @type {SocketConstructor} */ (/** @type {unknown} */ (globalThis.WebSocket)),
    token = null, backoff = [100, 5000], resendDelay = 100, connectTimeout = 10_000, liveness = [20_000, 10_000] } = {}) {
    this.url = url;
    this.connectTimeout = connectTimeout;   // ms for the opening handshake: a server that never answers is given up, and tried again
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.openTimer = null;
    this.lastProbe = 0;   // the last probe's sync id
    /**
     * An open connection is checked as a LiveQuery's is: after `liveness[0]` ms without a frame
     * the mutator sends a `sync` for a subscription number it never opens (the server answers at
     * once with `unknownSubscription`, ignored), and after `liveness[1]` ms more without a frame
     * it drops the connection, connects again and sends its pending mutations again. A page
     * cannot send WebSocket pings; without this, a mutation sent on a connection that died
     * without a word would wait for the browser to notice (minutes). `null` turns it off.
     */
    this.watch = new ConnectionWatch(liveness, {
      // No subscription is ever opened on a mutator's connection: any number is one not open.
      probe: () => {
        if (!this.open || !this.socket) return false;
        this.lastProbe = this.lastProbe >= 0x7fffffff ? 1 : this.lastProbe + 1;
        this.socket.send(JSON.stringify({ type: 'sync', sub: 0, id: this.lastProbe }));
        return true;
      },
      drop: () => this.#drop(),
    });
    this.pending = new PendingMutations(client, nextId, pending);
    this.Socket = Socket;
    this.token = token;
    this.backoff = backoff;
    this.resendDelay = resendDelay;
    /** @type {SocketLike | null} */
    this.socket = null;
    this.open = false;
    this.attempt = 0;
    /** Answers `mutationUnavailable` in a row: what the wait before sending again doubles with. */
    this.busyAnswers = 0;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.timer = null;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.resendTimer = null;
    this.stopped = false;
    /** @type {Map<number, Array<{list: LiveQuery, effects: PendingEffect[]}>>} mutation number → effects shown, one entry a list */
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
  }

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

  /** Connects, and sends the mutations pending (restored ones included). */
  start() {
    this.stopped = false;
    if (this.open) return;
    this.#connect();
  }

  /**
   * Runs published mutation `name` with `args` once; resolves with its `mutated`. `effects` are
   * shown at once, marked pending, until the mutation is answered and its lists hold the commit
   * (see the class). Rejects with a TypeError, sending nothing, when an effect is not one. After
   * `stop()`, a call starts the mutator again.
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
      const mutation = this.pending.add(name, args, { resolve, reject });
      this.#show(byList, mutation.id);
      this.#pendingChanged();
      if (this.open && this.socket) this.socket.send(JSON.stringify(mutation)); else this.start();
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
   * The key a list holds mutation `id`'s effects under.
   * @param {number} id
   */
  #key(id) { return `${this.client}#${id}`; }

  /**
   * @param {Map<LiveQuery, PendingEffect[]>} byList
   * @param {number} id
   */
  #show(byList, id) {
    if (byList.size === 0) return;
    const shown = this.shownEffects.get(id) ?? [];
    for (const [list, effects] of byList) {
      let entry = shown.find((candidate) => candidate.list === list);
      if (!entry) {
        entry = { list, effects: [] };
        shown.push(entry);
      }
      entry.effects.push(...effects);
      list.addPending(this.#key(id), entry.effects);
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
   * Mutation `id` was answered: its effects go from each list once the list holds the commit (a
   * list whose sync fails, stopped or refused, lets them go then), at once when it was refused.
   * @param {number} id
   * @param {boolean} applied
   */
  #settle(id, applied) {
    const shown = this.shownEffects.get(id);
    if (!shown) return;
    if (!applied) {
      this.#withdraw(id);
      return;
    }
    for (const { list } of shown) list.sync().catch(() => {}).then(() => this.#withdraw(id, list));
  }

  /**
   * Closes the connection. Every caller still waiting is rejected with a MutationError `stopped`;
   * the mutations stay pending (`pendingMutations`), sent again when the mutator starts, and
   * their effects stay shown.
   */
  stop() {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    if (this.resendTimer !== null) clearTimeout(this.resendTimer);
    this.#clearOpenTimer();
    this.watch.stop();
    this.timer = null;
    this.resendTimer = null;
    const socket = this.socket;
    this.socket = null;
    this.open = false;
    if (socket) socket.close(1000);
    for (const waiter of this.pending.releaseWaiters()) waiter.reject(new MutationError('stopped', 'the mutator stopped; the mutation stays pending'));
  }

  #connect() {
    if (this.socket || this.timer || this.stopped) return;
    /** @type {SocketLike} */
    let socket;
    try {
      socket = new this.Socket(withToken(this.url, this.token));
    } catch {
      this.#lost();
      return;
    }
    this.socket = socket;
    this.#clearOpenTimer();
    this.openTimer = unref(setTimeout(() => {
      this.openTimer = null;
      if (this.socket === socket && !this.open) this.#drop();
    }, this.connectTimeout));
    socket.onopen = () => {
      if (this.socket !== socket) return;
      this.#clearOpenTimer();
      this.open = true;
      this.attempt = 0;
      this.watch.start();
      this.#sendAll();
    };
    socket.onmessage = (event) => {
      if (this.socket !== socket) return;
      this.watch.heard();
      let message;
      try {
        message = JSON.parse(String(event.data));
      } catch {
        this.#drop(1002, 'not JSON');
        return;
      }
      if (message !== null && typeof message === 'object') this.#receive(message);
    };
    socket.onclose = () => {
      if (this.socket !== socket) return;
      this.#clearOpenTimer();
      this.watch.stop();
      this.socket = null;
      this.open = false;
      this.#lost();
    };
    socket.onerror = () => {};
  }

  #clearOpenTimer() {
    if (this.openTimer !== null) clearTimeout(this.openTimer);
    this.openTimer = null;
  }

  /**
   * Gives the connection up and connects again, without waiting for a close that may never complete.
   * @param {number} [code]
   * @param {string} [reason]
   */
  #drop(code = 1000, reason = undefined) {
    const socket = this.socket;
    if (!socket) return;
    this.#clearOpenTimer();
    this.watch.stop();
    this.socket = null;
    this.open = false;
    try { socket.close(code, reason); } catch { /* closing already */ }
    this.#lost();
  }

  /** Sends every mutation waiting, in number order (a new connection, or after a busy answer). */
  #sendAll() {
    const socket = this.socket;
    if (!socket) return;
    for (const mutation of this.pending.toResend) socket.send(JSON.stringify(mutation));
  }

  /**
   * A message of the connection: `mutated`, or a mutation's `error` (others are ignored).
   * @param {any} message
   */
  #receive(message) {
    const decision = this.pending.receive(message);
    if (decision.action === 'finish') {
      this.#pendingChanged();
      // Its effects go whoever waits for it: a caller, or no one (restored, or its caller stopped waiting).
      const id = decision.entry.mutation.id;
      if (decision.error) {
        this.#settle(id, false);
        decision.entry.reject?.(new MutationError(decision.error.code, decision.error.message));
      } else {
        this.busyAnswers = 0;
        this.#settle(id, true);
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

  #lost() {
    if (this.stopped || this.pending.entries.length === 0) return;   // reconnects with the next mutation
    this.attempt += 1;
    this.timer = setTimeout(() => { this.timer = null; this.#connect(); }, reconnectDelay(this.backoff, this.attempt));
  }
}
