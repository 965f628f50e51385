// connection.js — what a live query's and a mutator's connections share: the bearer token in the
// URL, reconnecting with backoff, and the liveness watch of a connection a page cannot ping.

/**
 * What a live query or a mutator needs of a WebSocket (the browser's, or one passed in under Node).
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
 * `url` with the bearer token as its `access_token` query parameter (none: as it is).
 * @param {string} url
 * @param {string | null} token
 */
export function withToken(url, token) {
  return token ? url + (url.includes('?') ? '&' : '?') + 'access_token=' + encodeURIComponent(token) : url;
}

/**
 * The wait before connecting again after `attempt` failures: doubling from `base` to `cap`, plus up to a quarter at random.
 * @param {readonly [number, number]} backoff
 * @param {number} attempt
 */
export function reconnectDelay([base, cap], attempt) {
  const delay = Math.min(cap, base * 2 ** Math.min(attempt - 1, 10));
  return delay + Math.random() * delay / 4;
}

/**
 * Under Node, a timer that does not keep the process alive (a forgotten client lets it exit).
 * @param {ReturnType<typeof setTimeout>} timer
 */
export function unref(timer) {
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
