// pending-mutations.js — a client's mutations not yet answered and what each answer does to them:
// the Mutator's decisions, without I/O, tested without a socket.

/**
 * A mutation as the wire has it (docs/PROTOCOL.md, `mutate`).
 * @typedef {{type: 'mutate', client: string, id: number, name: string, arguments: Record<string, unknown>}} Mutation
 */

/**
 * A mutation kept until it is answered, with whoever waits for its answer (none: one restored
 * from a previous page, or whose caller stopped waiting).
 * @typedef {{mutation: Mutation, resolve?: (mutated: any) => void, reject?: (error: Error) => void}} PendingEntry
 */

/**
 * What an answer does: ends a mutation (applied, `mutated`; or refused, `error`), asks for every
 * mutation waiting to be sent again, or nothing.
 * @typedef {{action: 'finish', entry: PendingEntry, mutated: any, error?: undefined}
 *   | {action: 'finish', entry: PendingEntry, error: {code: string, message: string}, mutated?: undefined}
 *   | {action: 'resendAll'}
 *   | {action: 'ignore'}} Decision
 */

/**
 * A client's mutations not yet answered, in number order, and what each answer does to them: the
 * Mutator's decisions, apart from its socket. A mutation stays until the server answers it, whoever
 * waits for it (a caller, or no one: one restored from a previous page, or whose caller gave up),
 * so that numbers are never skipped. `receive(message)` returns {action: 'finish', entry, mutated |
 * error}, {action: 'resendAll'} or {action: 'ignore'}.
 */
export class PendingMutations {
  /**
   * @param {string} client
   * @param {number} [nextId]
   * @param {readonly Mutation[]} [restored] mutations left pending by a previous page (other clients' are left out)
   */
  constructor(client, nextId = 1, restored = []) {
    if (typeof client !== 'string' || client.length === 0) throw new TypeError('a client name of 1 to 128 bytes');
    this.client = client;
    this.nextId = nextId;
    /** @type {PendingEntry[]} */
    this.entries = [];
    for (const mutation of [...restored].sort((a, b) => a.id - b.id)) {
      if (mutation.client !== client) continue;
      this.entries.push({ mutation });
      this.nextId = Math.max(this.nextId, mutation.id + 1);
    }
  }

  /**
   * Numbers a new mutation and keeps it until it is answered.
   * @param {string} name
   * @param {Record<string, unknown>} args
   * @param {Omit<PendingEntry, 'mutation'>} [waiter]
   * @returns {Mutation}
   */
  add(name, args, waiter) {
    /** @type {Mutation} */
    const mutation = { type: 'mutate', client: this.client, id: this.nextId, name, arguments: args };
    this.nextId += 1;
    this.entries.push({ mutation, ...waiter });
    return mutation;
  }

  /** What a new connection sends: every mutation waiting, in number order. */
  get toResend() { return this.entries.map((entry) => entry.mutation); }

  /** Lets go of every waiter (the mutator stopped); the mutations stay, to be sent again. */
  releaseWaiters() {
    const waiters = [];
    for (const { resolve, reject } of this.entries) if (resolve && reject) waiters.push({ resolve, reject });
    this.entries = this.entries.map(({ mutation }) => ({ mutation }));
    return waiters;
  }

  /**
   * What `message` (a message without `sub`) does to the mutations waiting.
   * @param {any} message
   * @returns {Decision}
   */
  receive(message) {
    const named = message.type === 'mutated' ? message : message.type === 'error' ? message.mutation : null;
    if (!named || named.client !== this.client) return { action: 'ignore' };
    const index = this.entries.findIndex((entry) => entry.mutation.id === named.id);
    if (index < 0) return { action: 'ignore' };
    if (message.type === 'mutated') return { action: 'finish', entry: this.entries.splice(index, 1)[0], mutated: message };
    // Busy: it used no number, and the ones sent behind it were refused as out of order.
    if (message.code === 'mutationUnavailable') return { action: 'resendAll' };
    if (message.code === 'mutationOutOfOrder' && index > 0) return { action: 'ignore' };
    return { action: 'finish', entry: this.entries.splice(index, 1)[0], error: { code: String(message.code), message: String(message.message ?? '') } };
  }
}
