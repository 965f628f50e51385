// connection.js — one WebSocket to a LiveList server, shared by a page's live queries and its
// mutator: the protocol multiplexes subscriptions and mutations on one connection
// (docs/PROTOCOL.md), so a page keeps one socket, one reconnect loop with backoff and one liveness
// watch, and a mutation's `mutated` names the versions of the lists on it.

/**
 * What a Connection needs of a WebSocket (the browser's, or one passed in under Node).
 * @typedef {object} SocketLike
 * @property {(data: string) => void} send
 * @property {(code?: number, reason?: string) => void} close
 * @property {((event?: any) => void) | null | undefined} [onopen]
 * @property {((event: {data: any}) => void) | null | undefined} [onmessage]
 * @property {((event: {code: number, reason?: string}) => void) | null | undefined} [onclose]
 * @property {((event?: any) => void) | null | undefined} [onerror]
 */

/** @typedef {new (url: string) => SocketLike} SocketConstructor */

/**
 * A Connection's options (a LiveQuery or a Mutator made without one passes its own).
 * @typedef {object} ConnectionOptions
 * @property {SocketConstructor} [WebSocket] the WebSocket class (default: the page's)
 * @property {string | null} [token] a bearer token, sent as `access_token`
 * @property {[base: number, cap: number]} [backoff] ms before connecting again: doubling from `base` to `cap`
 * @property {[quiet: number, answer: number] | null} [liveness] ms of quiet before a probe, then ms for a frame (null: no watch)
 * @property {number} [connectTimeout] ms for the opening handshake
 */

/**
 * What uses a connection (a LiveQuery's or a Mutator's side of it). `kind` orders them when a
 * socket opens: every list subscribes before any mutator sends what waits, so that the answers to
 * those mutations cover the lists (`mutated.versions`).
 * @typedef {object} ConnectionUser
 * @property {'list' | 'mutator'} kind
 * @property {() => void} opened the socket opened: subscribe, send what waits
 * @property {() => void} connecting a new socket is being opened
 * @property {(reason: string) => void} lost the socket is gone (a new one comes when someone wants it)
 * @property {() => boolean} wantsConnection whether a lost socket should be made again for it
 * @property {(message: any) => void} [receive] the messages without `sub` (a mutator's answers)
 * @property {import('./live-query.js').LiveQuery} [query] a list's LiveQuery (what `lists` gives)
 */

/**
 * Where the connection is: one value, each phase with what it owns.
 * @typedef {{name: 'idle'}
 *   | {name: 'connecting', socket: SocketLike, timer: ReturnType<typeof setTimeout>}
 *   | {name: 'open', socket: SocketLike}
 *   | {name: 'waiting', timer: ReturnType<typeof setTimeout>}} Phase
 */

/**
 * `url` with the bearer token as its `access_token` query parameter (none: as it is).
 * @param {string} url
 * @param {string | null} token
 */
function withToken(url, token) {
  return token ? url + (url.includes('?') ? '&' : '?') + 'access_token=' + encodeURIComponent(token) : url;
}

/**
 * The wait before connecting again after `attempt` failures: doubling from `base` to `cap`, plus up to a quarter at random.
 * @param {readonly [number, number]} backoff
 * @param {number} attempt
 */
function reconnectDelay([base, cap], attempt) {
  const delay = Math.min(cap, base * 2 ** Math.min(attempt - 1, 10));
  return delay + Math.random() * delay / 4;
}

/**
 * Under Node, a timer that does not keep the process alive (a forgotten client lets it exit).
 * @param {ReturnType<typeof setTimeout>} timer
 */
function unref(timer) {
  /** @type {{unref?: () => void}} */ (/** @type {unknown} */ (timer)).unref?.();
  return timer;
}

/**
 * Watches a connection a page cannot ping (a browser sends no WebSocket pings): after `quiet` ms
 * without a frame it calls `probe()`, which sends a message the server answers at once and
 * returns true, or returns false when none may go now; after `answer` ms more without a frame it
 * stops and calls `drop(silentFor)`. `heard()` tells it a frame came. `liveness` null (`[quiet,
 * answer]` otherwise) watches nothing.
 */
export class ConnectionWatch {
  /**
   * @param {readonly [number, number] | null} liveness
   * @param {{probe: () => boolean, drop: (silentFor: number) => void}} actions
   */
  constructor(liveness, { probe, drop }) {
    this.liveness = liveness;
    this.probe = probe;
    this.drop = drop;
    /** @type {ReturnType<typeof setInterval> | null} */
    this.timer = null;
    this.lastFrameAt = 0;
    /** @type {number | null} when the last probe went out, since the last frame */
    this.probedAt = null;
  }

  /** Watches from now, as if a frame had just come. */
  start() {
    this.stop();
    if (!this.liveness) return;
    const [quiet, answer] = this.liveness;
    this.heard();
    this.timer = unref(setInterval(() => this.#check(), Math.max(10, Math.min(quiet, answer) / 4)));
  }

  stop() {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  heard() {
    this.lastFrameAt = Date.now();
    this.probedAt = null;
  }

  #check() {
    if (!this.liveness) return;
    const [quiet, answer] = this.liveness;
    const now = Date.now();
    if (now - this.lastFrameAt >= quiet + answer && (this.probedAt === null || now - this.probedAt >= answer)) {
      this.stop();
      this.drop(now - this.lastFrameAt);
    } else if (now - this.lastFrameAt >= quiet && this.probedAt === null && this.probe()) {
      this.probedAt = now;
    }
  }
}

/**
 * One WebSocket to a server for a page's live queries and mutators: give it to each of them, and
 * they subscribe and send their mutations on it.
 *
 * ```js
 * const connection = new Connection('wss://example.com/live', { token });
 * const inbox = new LiveQuery(connection, 'inbox');
 * const outbox = new LiveQuery(connection, 'outbox');
 * const mutator = new Mutator(connection, client);
 * ```
 *
 * It opens when the first of them starts and closes when the last stops. Each subscription takes
 * a number of the connection (`sub`), and messages go to the subscription they name; messages
 * without one (`mutated`, a mutation's `error`) go to the mutators. A lost socket — closed, a
 * handshake not answered within `connectTimeout` ms, quiet past `liveness` — is made again with
 * backoff while a list is started or a mutator has mutations waiting: every list then resumes from
 * its version and every mutator sends its pending mutations again, on the one new socket.
 *
 * Liveness: a page cannot send WebSocket pings, so after `liveness[0]` ms without a frame (default
 * 20 s) the connection sends a `sync` for subscription number 0, which it never opens (the server
 * answers at once with `unknownSubscription`), and after `liveness[1]` ms more without a frame
 * (default 10 s) it drops the socket and connects again, without waiting for a close that a hung
 * server or a network gone away may never complete. `liveness: null` turns it off.
 */
export class Connection {
  /**
   * @param {string} url the server's WebSocket endpoint (`ws://host/live`)
   * @param {ConnectionOptions} options
   */
  constructor(url, { WebSocket: Socket = /** @type {SocketConstructor} */ (/** @type {unknown} */ (globalThis.WebSocket)), token = null, backoff = [100, 5000], liveness = [20_000, 10_000],
    connectTimeout = 10_000 } = {}) {
    this.url = url;
    this.Socket = Socket;
    this.token = token;
    this.backoff = backoff;
    this.connectTimeout = connectTimeout;
    /** Sockets lost since the last one opened: what the backoff doubles with. */
    this.attempt = 0;
    /** @type {Phase} */
    this.phase = { name: 'idle' };
    /** @type {Set<ConnectionUser>} in the order they came */
    this.users = new Set();
    /** @type {Map<number, (message: any) => void>} subscription number → its receiver */
    this.subscriptions = new Map();
    this.lastSub = 0;
    this.watch = new ConnectionWatch(liveness, {
      // Subscription 0 is never opened: answered at once with `unknownSubscription` (ignored).
      probe: () => this.send({ type: 'sync', sub: 0, id: 1 }),
      drop: (silentFor) => this.drop(`no frame from the server for ${silentFor} ms`),
    });
  }

  /** `idle`, `connecting`, `open` or `waiting` (to connect again, after a backoff). */
  get state() { return this.phase.name; }

  get isOpen() { return this.phase.name === 'open'; }

  /** The socket open or opening, or null. */
  get socket() { return this.phase.name === 'open' || this.phase.name === 'connecting' ? this.phase.socket : null; }

  /**
   * The live queries on the connection (started, neither stopped nor refused), in the order they
   * started: the lists a mutator on it shows the server's stated effects on.
   * @returns {import('./live-query.js').LiveQuery[]}
   */
  get lists() {
    return [...this.users].flatMap((user) => (user.kind === 'list' && user.query ? [user.query] : []));
  }

  /**
   * Adds `user`; it is told when a socket opens or is lost until it is detached.
   * @param {ConnectionUser} user
   */
  attach(user) { this.users.add(user); }

  /**
   * Takes `user` away; the last one closes the socket (1000).
   * @param {ConnectionUser} user
   */
  detach(user) {
    this.users.delete(user);
    if (this.users.size > 0) return;
    this.#enter({ name: 'idle' }, 1000);
  }

  /** Opens a socket now when there is none and none is waiting for its backoff. */
  connect() {
    if (this.phase.name === 'idle') this.#open();
  }

  /** Opens a socket now, also before the end of a backoff (a failed row's retry). */
  retry() {
    if (this.phase.name === 'waiting' || this.phase.name === 'idle') this.#open();
  }

  /**
   * A number for a new subscription, whose messages go to `receive` until `release`.
   * @param {(message: any) => void} receive
   */
  subscribe(receive) {
    do {
      this.lastSub = this.lastSub >= 0x7fffffff ? 1 : this.lastSub + 1;
    } while (this.subscriptions.has(this.lastSub));
    this.subscriptions.set(this.lastSub, receive);
    return this.lastSub;
  }

  /**
   * Stops sending subscription `sub`'s messages to its receiver; with `unsubscribe`, tells the
   * server too (when the socket is open).
   * @param {number} sub
   * @param {{unsubscribe?: boolean}} options
   */
  release(sub, { unsubscribe = false } = {}) {
    if (!this.subscriptions.delete(sub)) return;
    if (unsubscribe) this.send({ type: 'unsubscribe', sub });
  }

  /**
   * Sends `message` (as JSON) on the open socket; false when none is open.
   * @param {object} message
   */
  send(message) {
    if (this.phase.name !== 'open') return false;
    this.phase.socket.send(JSON.stringify(message));
    return true;
  }

  /**
   * Gives the socket up and connects again with backoff, at once: its close handshake, which may
   * never complete, is not waited for, and whatever it still delivers is ignored.
   * @param {string} reason what the users are told
   * @param {number} [code]
   * @param {string} [closeReason]
   */
  drop(reason, code = 1000, closeReason = undefined) {
    if (this.phase.name !== 'open' && this.phase.name !== 'connecting') return;
    this.#lost(reason, code, closeReason);
  }

  #open() {
    /** @type {SocketLike} */
    let socket;
    try {
      socket = new this.Socket(withToken(this.url, this.token));
    } catch (error) {
      this.#enter({ name: 'idle' });
      for (const user of [...this.users]) user.connecting();
      this.#lost(String(error));
      return;
    }
    const timer = unref(setTimeout(() => {
      if (this.phase.name === 'connecting' && this.phase.socket === socket) this.drop(`no answer to the opening handshake within ${this.connectTimeout} ms`);
    }, this.connectTimeout));
    this.#enter({ name: 'connecting', socket, timer });
    for (const user of [...this.users]) user.connecting();
    socket.onopen = () => {
      if (this.socket !== socket) return;
      this.#enter({ name: 'open', socket });
      this.attempt = 0;
      this.watch.start();
      const users = [...this.users];
      for (const user of users) if (user.kind === 'list' && this.users.has(user)) user.opened();
      for (const user of users) if (user.kind !== 'list' && this.users.has(user)) user.opened();
    };
    socket.onmessage = (event) => {
      if (this.socket !== socket) return;
      this.watch.heard();
      this.#receive(event.data);
    };
    socket.onclose = (event) => {
      if (this.socket !== socket) return;
      this.#lost(`closed (${event.code}${event.reason ? ': ' + event.reason : ''})`, null);
    };
    socket.onerror = () => {};
  }

  /**
   * Leaves the phase (its socket closed with `closeCode` unless null, its timer cleared) for `next`.
   * @param {Phase} next
   * @param {number | null} [closeCode]
   * @param {string} [closeReason]
   */
  #enter(next, closeCode = null, closeReason = undefined) {
    const phase = this.phase;
    if (phase.name === 'connecting' || phase.name === 'waiting') clearTimeout(phase.timer);
    if (phase.name === 'open' && next.name !== 'open') this.watch.stop();
    this.phase = next;
    if ((phase.name === 'open' || phase.name === 'connecting') && (next.name === 'idle' || next.name === 'waiting') && closeCode !== null) {
      try { phase.socket.close(closeCode, closeReason); } catch { /* closing already */ }
    }
  }

  /**
   * The socket is gone: the users are told, and a new one comes after a backoff when one wants it.
   * @param {string} reason
   * @param {number | null} [closeCode] how to close the socket given up (null: it closed itself)
   * @param {string} [closeReason]
   */
  #lost(reason, closeCode = 1000, closeReason = undefined) {
    this.#enter({ name: 'idle' }, closeCode, closeReason);
    this.attempt += 1;
    for (const user of [...this.users]) if (this.users.has(user)) user.lost(reason);
    if (this.phase.name !== 'idle' || ![...this.users].some((user) => user.wantsConnection())) return;
    const timer = setTimeout(() => {
      if (this.phase.name === 'waiting' && this.phase.timer === timer) this.#open();
    }, reconnectDelay(this.backoff, this.attempt));
    this.#enter({ name: 'waiting', timer });
  }

  /** @param {unknown} text a frame's data */
  #receive(text) {
    let message;
    try {
      message = JSON.parse(String(text));
    } catch {
      this.drop('a frame that is not JSON', 1002, 'not JSON');
      return;
    }
    if (message === null || typeof message !== 'object') return;
    if (message.sub !== undefined) {
      this.subscriptions.get(message.sub)?.(message);   // none: a subscription given up, or the probe's
      return;
    }
    for (const user of [...this.users]) if (this.users.has(user)) user.receive?.(message);
  }
}
