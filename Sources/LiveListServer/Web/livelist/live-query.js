// live-query.js — a published query followed live over a Connection: it subscribes, applies every
// changeset in order, asks for rows as the window moves, resumes from its version when the
// connection comes back, lays the client's pending effects over its list, and shows a list kept
// offline before the server answers.

import { ProtocolError, sameArguments, wireArguments } from './values.js';
import { ListModel } from './list-model.js';
import { serverPositionMapping } from './positions.js';
import { DisplayedTransition, PendingEffect, resolvePending } from './pending-overlay.js';
import { Connection } from './connection.js';

/** @typedef {import('./connection.js').ConnectionOptions} ConnectionOptions */
/** @typedef {import('./connection.js').ConnectionUser} ConnectionUser */
/** @typedef {import('./list-model.js').ModelOutput} ModelOutput */
/** @typedef {import('./list-model.js').HeldList} HeldList */
/** @typedef {import('./pending-overlay.js').DisplayedList} DisplayedList */
/** @typedef {import('./pending-overlay.js').EffectInput} EffectInput */
/** @typedef {import('./pending-overlay.js').PendingGroup} PendingGroup */

/**
 * A LiveQuery's options; without a Connection, also those of the one it makes for itself.
 * @typedef {ConnectionOptions & {args?: Record<string, unknown>, window?: [start: number, end: number], prefetch?: number}} LiveQueryOptions
 */

/** @typedef {'idle' | 'connecting' | 'live' | 'reconnecting' | 'refused' | 'stopped'} LiveState */

/** @typedef {{message: string, retry: () => void}} Failure */

/**
 * What happened to the list (`onEvent`, `observe`): a new first state, a transition of the list
 * shown (`transition` from the list shown before to the one now), rows of a moved window, pending
 * effects added or removed, the query's state, a failure and the recovery from it, the end of a
 * restored list's staleness.
 * @typedef {{type: 'reset', reason: string, restored?: boolean}
 *   | ({type: 'changes', transition: DisplayedTransition} & Omit<Extract<ModelOutput, {type: 'changes'}>, 'type'>)
 *   | ({type: 'rows', transition: DisplayedTransition} & Omit<Extract<ModelOutput, {type: 'rows'}>, 'type'>)
 *   | {type: 'pending', transition: DisplayedTransition}
 *   | {type: 'state', state: LiveState}
 *   | {type: 'failure', failure: Failure, refused: boolean}
 *   | {type: 'recovered'}
 *   | {type: 'stale', staleSince: null}} LiveEvent
 */

/**
 * A list kept to show again before the server is reached (`snapshot`, `restore`).
 * @typedef {{query: string, args: Record<string, unknown>, list: HeldList, savedAt: number}} Snapshot
 */

/**
 * A published query followed live: `start()` subscribes on its connection; every message becomes
 * an event for `onEvent` — {type: 'reset'|'changes'|'rows'|'pending'|'failure'|'state', …} — after
 * the model applied it. `retry()` and reconnection with backoff resume from the version held.
 *
 * The connection: `new LiveQuery(connection, query, options)` subscribes on a Connection shared
 * with the page's other lists and its Mutator — one socket, one reconnect loop, one liveness
 * watch, and a mutation's `mutated` names this list's version (so its pending rows go without a
 * `sync`). `new LiveQuery(url, query, options)` makes a connection of its own from the options
 * (`WebSocket`, `token`, `backoff`, `liveness`, `connectTimeout`: see Connection).
 *
 * Two lists:
 * - `model` (a ListModel): the server's list at its version, as its messages made it.
 * - `displayed` (a DisplayedList): what to show — `model` with the pending effects of the
 *   client's own mutations laid over the rows held (`addPending(key, effects)`, removed by
 *   `removePending(key)`; a Mutator given `effects` does both). It reads as a ListModel (`count`,
 *   `sections`, `row(position)`, `positionOf(key)`, `version`, `columns`), and a row shown or
 *   changed by an effect has `pending: true`. It is recomputed after every message and every
 *   change of the effects; while none is pending it is the server's list. Views read `displayed`,
 *   not `model`.
 *
 * Events `changes`, `rows` and `pending` (effects added or removed) carry `transition`, a
 * DisplayedTransition from the displayed list before to the one now (`newPosition(old)`,
 * `oldPosition(new)`); a `reset` is a new first state. `showRows(start, end)` takes displayed
 * positions and keeps the server's window around them. `sync()` resolves once the list holds
 * every commit made before it was called (the protocol's `sync`).
 *
 * A server that says it is `behind` the version held drops the connection (every list and
 * mutator on it connects again, perhaps to another server behind a load balancer).
 *
 * Offline: `snapshot()` is the server's list as plain JSON (the `reset` it would send), and
 * `restore(snapshot)` shows one before `start()` — `staleSince` (ms since 1970) says since when
 * it is stale, until the server's first message — and the query then resumes from its version.
 * An OfflineStore keeps them in IndexedDB.
 */
export class LiveQuery {
  /**
   * @param {Connection | string} connection a Connection to share, or the server's URL (`ws://host/live`)
   * @param {string} query a published query's name
   * @param {LiveQueryOptions} options
   */
  constructor(connection, query, { args = {}, window = [0, 100], prefetch = 40, ...connectionOptions } = {}) {
    this.connection = connection instanceof Connection ? connection : new Connection(connection, connectionOptions);
    this.url = this.connection.url;
    this.query = query;
    this.args = args;
    this.prefetch = prefetch;
    this.model = new ListModel();
    /** @type {LiveState} */
    this.state = 'idle';
    /** @type {Failure | null} while the list cannot follow */
    this.failure = null;
    /** @type {(event: LiveEvent) => void} */
    this.onEvent = () => {};
    this.resetsReceived = 0;
    this.messagesApplied = 0;
    this.framesReceived = 0;
    this.windowRequests = 0;
    /** @type {[start: number, end: number]} the server's window wanted */
    this.wanted = window;
    /** The subscription's number on the connection (0: none). */
    this.sub = 0;
    this.awaitingSubscription = false;
    /** @type {Record<string, unknown> | null} the arguments before new ones not answered yet */
    this.acceptedArgs = null;
    /** @type {Map<string, PendingGroup>} key → effects ({effects, exact}), in the order added */
    this.pendingEffects = new Map();
    /** @type {DisplayedList} */
    this.displayed = resolvePending(this.model, []);
    /** @type {Map<number, {resolve: (version: string | null) => void, reject: (error: Error) => void, sentOn: number | null}>} id → waiter, and the sub it was sent for */
    this.syncs = new Map();
    this.lastSync = 0;
    /** @type {number | null} ms since 1970: the list shown is a snapshot held then (restore) */
    this.staleSince = null;
    /** @type {Set<(event: LiveEvent) => void>} */
    this.observers = new Set();
    /** @type {Record<string, unknown> | null} the arguments of the list `model` holds (null: `args`) */
    this.listArgs = null;
    /** @type {Record<string, unknown> | null} the arguments of the last subscribe */
    this.subscribedArgs = null;
    /** @type {ConnectionUser} */
    this.#user = {
      kind: 'list',
      opened: () => this.#subscribe(),
      connecting: () => this.#connecting(),
      lost: (reason) => this.#lost(reason),
      wantsConnection: () => true,
      receive: undefined,
      query: this,
    };
  }

  /** @type {ConnectionUser} this list's side of the connection */
  #user;

  /** Whether the list uses its connection: started, neither stopped nor refused. */
  #attached = false;

  /** The connection's socket (open or opening), or null. */
  get socket() { return this.connection.socket; }

  /** Failed attempts to connect since the connection last opened. */
  get attempt() { return this.connection.attempt; }

  /**
   * Calls `listener` with every event, after `onEvent` (which a view takes for itself): how an
   * OfflineStore hears of changes. Returns a function that stops it.
   * @param {(event: LiveEvent) => void} listener
   * @returns {() => void}
   */
  observe(listener) {
    this.observers.add(listener);
    return () => { this.observers.delete(listener); };
  }

  /**
   * The list held, to show again before the server is reached (`restore`), as plain JSON:
   * `{query, args, list, savedAt}` — `args` the arguments of that list (the wire's JSON form),
   * `list` the `reset` the server would send for it at its version (sections and counts, the
   * window, the window's rows held with their values, the order), `savedAt` when it was held (ms
   * since 1970: now, or `staleSince` while the list is still a restored one). Built from `model`,
   * the server's list: pending effects are left out. Null before the first state.
   * O(w + s) for w positions of the window and s sections.
   * @returns {Snapshot | null}
   */
  snapshot() {
    const list = this.model.heldList();
    if (list === null) return null;
    return { query: this.query, args: wireArguments(this.listArgs ?? this.args), list, savedAt: this.staleSince ?? Date.now() };
  }

  /**
   * Shows `snapshot` (a `snapshot()`, or its JSON text) as the list's first state before
   * `start()`: `staleSince` is its `savedAt` until the first server message is applied, and a
   * `reset` event with `restored: true` lets a view draw it at once. Once started, the query
   * subscribes with `resume` from the snapshot's version and window, as after a lost connection:
   * the server answers with one `changes` (or a reset when it no longer has that version).
   *
   * Throws a RestoreError, and changes nothing, when the query has started or holds a list
   * (`started`), when the snapshot is of another query (`otherQuery`) or of other arguments —
   * compared value by value, exactly, as the protocol's values (`otherArguments`) — or when it is
   * not one (`damaged`: not JSON, a field missing, or a list that is not a reset the model takes).
   * O(w + s) for w rows held and s sections.
   * @param {Snapshot | string} given
   */
  restore(given) {
    if (this.state !== 'idle' || this.#attached || this.model.version !== null) throw new RestoreError('started', 'the query has started: a snapshot is shown before start()');
    /** @type {any} */
    let snapshot = given;
    if (typeof snapshot === 'string') {
      try {
        snapshot = JSON.parse(snapshot);
      } catch {
        throw new RestoreError('damaged', 'the snapshot is not JSON');
      }
    }
    if (snapshot === null || typeof snapshot !== 'object' || typeof snapshot.query !== 'string' || snapshot.args === null
      || typeof snapshot.args !== 'object' || Array.isArray(snapshot.args) || snapshot.list === null || typeof snapshot.list !== 'object') {
      throw new RestoreError('damaged', 'the snapshot lacks its query, arguments or list');
    }
    const savedAt = snapshot.savedAt instanceof Date ? snapshot.savedAt.getTime() : snapshot.savedAt;
    if (typeof savedAt !== 'number' || !Number.isFinite(savedAt)) throw new RestoreError('damaged', 'the snapshot lacks savedAt');
    if (snapshot.query !== this.query) throw new RestoreError('otherQuery', `the snapshot is of the query "${snapshot.query}"`);
    if (!sameArguments(snapshot.args, this.args)) throw new RestoreError('otherArguments', 'the snapshot is of the query with other arguments');
    if (snapshot.list.type !== 'reset') throw new RestoreError('damaged', 'the snapshot\'s list is not a reset');
    // The same strict reading as the server's reset; a list it refuses is not shown.
    const model = new ListModel();
    let output;
    try {
      output = model.receive(snapshot.list);
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      throw new RestoreError('damaged', `the snapshot's list: ${error.message}`);
    }
    this.model = model;
    this.listArgs = this.args;
    if (model.window[1] > model.window[0]) this.wanted = [model.window[0], model.window[1]];
    this.staleSince = savedAt;
    this.#display(null);
    this.#emit({ type: 'reset', reason: output.type === 'reset' ? output.reason : 'subscribed', restored: true });
  }

  /**
   * Shows `effects` (`{insert}`, `{update}`, `{delete}`: see PendingEffect) at once over the list,
   * marked pending, after those added before, until `removePending(key)`. Throws a TypeError for
   * an effect that is not one (and shows none of them). With `exact` (the effects the server
   * states, derived), they show only when every one of them shows as stated — each insert and
   * updated row at its place, each row it changes or deletes among the rows held — else none.
   * @param {string} key
   * @param {ReadonlyArray<EffectInput | PendingEffect>} effects
   * @param {{exact?: boolean}} options
   */
  addPending(key, effects, { exact = false } = {}) {
    const checked = effects.map((effect) => new PendingEffect(effect));
    this.pendingEffects.set(key, { effects: checked, exact });
    this.#redisplay();
  }

  /**
   * Takes the effects `key` back; false when there were none.
   * @param {string} key
   */
  removePending(key) {
    if (!this.pendingEffects.delete(key)) return false;
    this.#redisplay();
    return true;
  }

  get pendingCount() { return this.pendingEffects.size; }

  /**
   * Resolves (with the version held) once every commit made before the call is in the list: the
   * protocol's `sync`, sent again after a reconnection until answered. Rejects when the live
   * query stops or is refused.
   * @returns {Promise<string | null>}
   */
  sync() {
    return new Promise((resolve, reject) => {
      if (this.state === 'stopped' || this.state === 'refused') {
        reject(new Error(`the live query is ${this.state}`));
        return;
      }
      this.lastSync = this.lastSync >= 0x7fffffff ? 1 : this.lastSync + 1;
      this.syncs.set(this.lastSync, { resolve, reject, sentOn: null });
      this.#sendSyncs();
    });
  }

  /**
   * Whether the list holds what a `mutated` received on `connection` says it holds — `versions`,
   * its versions by subscription number: the list subscribes on that connection, its
   * subscription answered, and holds the version named for it. Then the list holds the
   * mutation's commit (the server sends `mutated` after the commit's changes to the
   * connection's subscriptions); otherwise its `sync()` tells.
   * @param {Connection} connection
   * @param {unknown} versions
   */
  holdsVersions(connection, versions) {
    if (connection !== this.connection || !this.#attached || this.sub === 0 || this.awaitingSubscription) return false;
    if (versions === null || typeof versions !== 'object') return false;
    const version = /** @type {Record<string, unknown>} */ (versions)[String(this.sub)];
    return version !== undefined && version === this.model.version;
  }

  #sendSyncs() {
    if (!this.connection.isOpen || this.state !== 'live' || this.awaitingSubscription) return;
    for (const [id, entry] of this.syncs) {
      if (entry.sentOn === this.sub) continue;
      entry.sentOn = this.sub;
      this.connection.send({ type: 'sync', sub: this.sub, id });
    }
  }

  /** @param {string} reason */
  #rejectSyncs(reason) {
    const syncs = [...this.syncs.values()];
    this.syncs.clear();
    for (const entry of syncs) entry.reject(new Error(reason));
  }

  /**
   * Lays the effects over the server's list again; the transition from what was displayed.
   * @param {import('./positions.js').PositionMapping | null} server
   */
  #display(server) {
    const before = this.displayed;
    this.displayed = resolvePending(this.model, this.pendingEffects.values(), before);
    return new DisplayedTransition(before, this.displayed, server);
  }

  #redisplay() {
    this.#emit({ type: 'pending', transition: this.#display(null) });
  }

  /** Subscribes on the connection (which connects when it is not open). */
  start() {
    if (this.#attached) return;
    this.#attached = true;
    this.connection.attach(this.#user);
    this.state = this.connection.attempt === 0 ? 'connecting' : 'reconnecting';
    this.#emit({ type: 'state', state: this.state });
    if (this.connection.isOpen) this.#subscribe(); else this.connection.connect();
  }

  /** Ends the subscription; the connection closes when nothing else uses it. */
  stop() {
    this.#detach();
    this.state = 'stopped';
    this.#rejectSyncs('the live query stopped');
    this.#emit({ type: 'state', state: this.state });
  }

  /** Leaves the connection: its subscription ended (`unsubscribe` when the socket stays open). */
  #detach() {
    if (!this.#attached) return;
    this.#attached = false;
    this.connection.detach(this.#user);
    if (this.sub !== 0) this.connection.release(this.sub, { unsubscribe: true });
    this.awaitingSubscription = false;
  }

  /** Connects again now (the failed row's retry); subscribes again when refused or stopped. */
  retry() {
    if (!this.#attached) {
      this.start();
      return;
    }
    this.connection.retry();
  }

  /**
   * New arguments (a new filter or sort), one call: the server moves the subscription and sends
   * one changeset from the list shown to the new one (animated like any commit), or a reset when
   * they differ by more than a reset costs.
   * @param {Record<string, unknown>} args
   */
  setArguments(args) {
    if (JSON.stringify(args) === JSON.stringify(this.args)) return;
    this.acceptedArgs = this.acceptedArgs ?? this.args;
    this.args = args;
    if (this.state === 'live') this.connection.send({ type: 'arguments', sub: this.sub, arguments: args });
  }

  /**
   * Makes sure the displayed rows `start..<end` (and `prefetch` around them) are sent.
   * @param {number} start
   * @param {number} end
   */
  showRows(start, end) {
    // Displayed positions to the server's: pending rows shift positions within the window only.
    const first = this.displayed.serverPosition(start);
    end = end > start ? Math.max(first, this.displayed.serverPosition(end - 1) + 1) : first;
    start = first;
    const from = Math.max(0, start - this.prefetch);
    /** @type {[number, number]} */
    const wanted = [from, Math.max(from, end + this.prefetch)];
    const current = this.model.requestedWindow ?? this.model.window;
    const needed = [Math.min(wanted[0], this.model.count), Math.min(wanted[1], this.model.count)];
    if (needed[1] <= needed[0] || (current[0] <= needed[0] && needed[1] <= current[1])) return;
    this.wanted = wanted;
    if (this.state !== 'live' || !this.connection.isOpen) return;
    this.#requestWindow(wanted);
  }

  /** @param {[start: number, end: number]} wanted */
  #requestWindow(wanted) {
    this.model.didRequest(wanted);
    this.windowRequests += 1;
    this.connection.send({ type: 'window', sub: this.sub, window: [wanted[0], wanted[1] - wanted[0]] });
  }

  /** Subscribes (again) under a new number, resuming from the list held. */
  #subscribe() {
    if (this.sub !== 0) this.connection.release(this.sub);
    this.sub = this.connection.subscribe((message) => this.#receive(message));
    /** @type {Record<string, unknown>} */
    const message = { type: 'subscribe', sub: this.sub, query: this.query, arguments: this.args, window: [this.wanted[0], this.wanted[1] - this.wanted[0]] };
    const resume = this.model.resume;
    if (resume) message.resume = resume;
    this.model.didSubscribe(this.wanted);
    this.awaitingSubscription = true;
    this.acceptedArgs = null;
    this.subscribedArgs = this.args;
    this.connection.send(message);
  }

  /** A new socket is being opened for the list. */
  #connecting() {
    if (this.state === 'live' || this.state === 'connecting') return;
    this.state = 'reconnecting';
    this.#emit({ type: 'state', state: this.state });
  }

  /**
   * The connection is lost: the list waits for the next one, which resumes it.
   * @param {string} reason
   */
  #lost(reason) {
    if (this.sub !== 0) this.connection.release(this.sub);
    this.sub = 0;
    this.state = 'reconnecting';
    this.failure = { message: `connection lost: ${reason}`, retry: () => this.retry() };
    this.#emit({ type: 'failure', failure: this.failure, refused: false });
  }

  /**
   * A message of the subscription (the connection routes them by `sub`).
   * @param {any} message
   */
  #receive(message) {
    this.framesReceived += 1;
    if (message.type === 'synced') {
      const entry = this.syncs.get(message.id);
      if (entry) {
        this.syncs.delete(message.id);
        entry.resolve(message.version);
      }
      return;
    }
    /** @type {ModelOutput} */
    let output;
    try {
      output = this.model.receive(message);
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      // Start the subscription over: a gap resumes from the version held, a contradiction resets.
      if (error.kind !== 'versionGap') this.model = new ListModel();
      this.connection.release(this.sub, { unsubscribe: true });
      this.#subscribe();
      return;
    }
    this.messagesApplied += 1;
    if (output.type === 'error') {
      this.#failed(output.error);
      return;
    }
    if (this.state !== 'live') {
      this.state = 'live';
      this.#emit({ type: 'state', state: 'live' });
    }
    // The list held is of the arguments subscribed with (the answer to a subscribe), or of the
    // last ones sent (a reset, or changes to another live query's version, answer `arguments`).
    const movedQuery = output.type === 'changes' && output.changes.from.split(':')[0] !== output.changes.to.split(':')[0];
    if (output.type === 'reset' || output.type === 'changes') {
      if (this.awaitingSubscription) this.listArgs = this.subscribedArgs;
      else if (this.acceptedArgs && (output.type === 'reset' || movedQuery)) this.listArgs = this.args;
    }
    // The server answered: the list is live again, no longer the snapshot restored.
    if (this.staleSince !== null) {
      this.staleSince = null;
      this.#emit({ type: 'stale', staleSince: null });
    }
    if (this.failure && output.type !== 'none') {
      this.failure = null;
      this.#emit({ type: 'recovered' });
    }
    if (output.type === 'reset') {
      this.resetsReceived += 1;
      // A reset after dropped frames may have dropped a `synced` with them: ask again.
      for (const entry of this.syncs.values()) entry.sentOn = null;
    }
    if (output.type === 'reset' || output.type === 'changes') this.awaitingSubscription = false;
    // A reset, or changes from one live query's version to another's, answer new arguments.
    if (output.type === 'reset' || movedQuery) this.acceptedArgs = null;
    if (output.type === 'reset') {
      this.#display(null);
      this.#emit(output);
    } else if (output.type === 'changes') {
      const { type, ...changes } = output;
      this.#emit({ type, ...changes, transition: this.#display(serverPositionMapping(output.oldSections, this.model.sections, output.mapping)) });
    } else if (output.type === 'rows') {
      const { type, ...rows } = output;
      this.#emit({ type, ...rows, transition: this.#display(null) });
    }
    this.#sendSyncs();
    // A window asked for while another was in flight goes out once that one is answered.
    const requested = this.model.requestedWindow;
    if (requested === null && (this.wanted[0] !== this.model.window[0] || this.wanted[1] !== this.model.window[1]) && this.connection.isOpen) {
      this.#requestWindow(this.wanted);
    }
  }

  /**
   * The server's error for the subscription.
   * @param {{code: string, message: string}} error
   */
  #failed(error) {
    if (error.code === 'behind') {
      // This server has not reached the version the list holds (another showed it): connect
      // again, with backoff — behind a load balancer, perhaps to another one.
      this.connection.drop(`behind: ${error.message}`);
      return;
    }
    // Before the subscription's first answer an error refuses it; after, a refused request (new
    // arguments that do not fit, a bad window) leaves it going, with its old arguments.
    const refused = (this.awaitingSubscription && error.code !== 'queryFailed') || error.code === 'queryClosed';
    if (error.code === 'badArguments' && this.acceptedArgs) { this.args = this.acceptedArgs; this.acceptedArgs = null; }
    this.failure = { message: `${error.code}: ${error.message}`, retry: () => this.retry() };
    if (refused) {
      this.state = 'refused';
      this.connection.release(this.sub);   // the server holds no subscription to end
      this.sub = 0;
      this.#detach();
      this.#rejectSyncs(`the live query was refused: ${error.code}`);
    }
    // A sync whose look failed is answered by this error: ask again once the list goes on.
    if (error.code === 'queryFailed') for (const entry of this.syncs.values()) entry.sentOn = null;
    this.#emit({ type: 'failure', failure: this.failure, refused });
  }

  /** @param {LiveEvent} event */
  #emit(event) {
    this.onEvent(event);
    for (const listener of this.observers) {
      try {
        listener(event);
      } catch (error) {
        queueMicrotask(() => { throw error; });   // reported, without stopping the list
      }
    }
  }
}

/** Why `LiveQuery.restore` did not show a snapshot: `code` is `started`, `otherQuery`, `otherArguments` or `damaged`. */
export class RestoreError extends Error {
  /**
   * @param {'started' | 'otherQuery' | 'otherArguments' | 'damaged'} code
   * @param {string} message
   */
  constructor(code, message) {
    super(`${code}: ${message}`);
    this.name = 'RestoreError';
    this.code = code;
  }
}
