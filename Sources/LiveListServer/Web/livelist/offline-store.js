// offline-store.js — a page's live lists and its mutator's state kept across page loads: the lists
// in IndexedDB, the mutator's name, next number, pending mutations and their expected effects in
// Web Storage, so that a page loaded without a network shows its last lists at once, and its
// mutations are sent once it is back, each applied once.

import { RestoreError } from './live-query.js';
import { Mutator, effectForm } from './mutator.js';
import { PendingEffect } from './pending-overlay.js';
import { readStoredChange, storedChange } from './stored-change.js';
import { Connection } from './connection.js';

/** @typedef {import('./live-query.js').LiveQuery} LiveQuery */
/** @typedef {import('./mutator.js').MutatorOptions} MutatorOptions */
/** @typedef {import('./mutator.js').ListEffect} ListEffect */

/**
 * A list as the store keeps it in IndexedDB: `snapshot` the JSON text of `live.snapshot()`.
 * @typedef {{key: string, query: string, savedAt: number, snapshot: string}} ListRecord
 */

/** A client name that is no other's: a random UUID (also where `crypto.randomUUID` is not offered, plain HTTP to another host). */
function randomClientName() {
  if (typeof globalThis.crypto?.randomUUID === 'function') return `web-${globalThis.crypto.randomUUID()}`;
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(16));
  return `web-${[...bytes].map((byte) => byte.toString(16).padStart(2, '0')).join('')}`;
}

/**
 * The outcome of an IndexedDB transaction: resolves when it commits, rejects when it fails or aborts.
 * @template T
 * @param {IDBTransaction} transaction
 * @param {() => T} result
 * @returns {Promise<T>}
 */
function committed(transaction, result) {
  return new Promise((resolve, reject) => {
    transaction.oncomplete = () => resolve(result());
    transaction.onerror = () => reject(transaction.error ?? new Error('an IndexedDB transaction failed'));
    transaction.onabort = () => reject(transaction.error ?? new Error('an IndexedDB transaction was aborted'));
  });
}

/**
 * Keeps a page's live lists and its mutator's state across page loads, so that a page loaded
 * without a network shows its last lists at once — stale, `live.staleSince` saying since when —
 * and, once the server is back, each list resumes from its version with one changeset, and the
 * mutations left pending are sent in order, each applied once.
 *
 * ```js
 * const store = new OfflineStore();
 * await store.open('livelist');
 * const outcome = await store.keep(live, 'inbox');   // {restored: savedAt} | {nothingSaved: true} | {notRestored: code}
 * const mutator = store.mutator(url);                // numbered where the last load stopped; its pending rows shown on the kept lists
 * new LiveListView(element, live, …);                // starts the query: it resumes from the snapshot
 * ```
 *
 * Where things are kept, and why:
 * - **Lists: IndexedDB** (`indexedDB`, or the one given to the constructor), database `name`,
 *   object store `lists`, one record per key: `{key, query, savedAt, snapshot}` — `snapshot` the
 *   JSON text of `live.snapshot()` (one string, cheap to clone; read as strictly as a server's
 *   reset). Bounded by the window: the counts, sections and the window's rows, never the whole
 *   list. A list is written `saveDelay` (500 ms) after it changes — later changes within it are
 *   written with it, as they stand then — one write at a time (changes during a write are written
 *   after it). IndexedDB is asynchronous: a page closed within that delay, or during the write,
 *   keeps the previous copy, which is still a list the server held (it resumes from its version).
 *   `saveNow()` writes at once (on `pagehide`, say). Shared by the origin's tabs: the last write
 *   of a key wins, which is a list the server held too.
 * - **A mutator's client name, next number and pending mutations: Web Storage** (`sessionStorage`,
 *   or the `storage` given), one item per URL written synchronously in `onPendingChange` —
 *   after a mutation is numbered and before it is sent, and after each answer. A Web Storage
 *   write is synchronous for the page: once `setItem` returns, every later page (this tab's next
 *   load, for `sessionStorage`) reads it, whatever becomes of this page. An IndexedDB write is
 *   not: it commits some time after the send went out, and a page closed or crashed in between
 *   would lose the number — the next load would number a new mutation as one the server applied,
 *   and be answered with that one's outcome. (The Swift store avoids it with a synchronous SQLite
 *   write; when either storage reaches the disk, against the whole browser crashing, is the
 *   browser's affair.) With `sessionStorage` each tab is one client, kept through reloads (two
 *   tabs must not share numbers); a closed tab's pending mutations are gone with it. Pass
 *   `localStorage` to keep them across closing, for a page open in one tab at a time. At most
 *   `Mutator.maximumPending` mutations (the Mutator refuses more); a write past the storage's
 *   quota is kept in `lastSaveError`, and the mutation is sent anyway.
 * - **The pending mutations' expected effects: in the same Web Storage item**, written with the
 *   mutation's number in the same `setItem`, on the lists kept here (by their keys), each change
 *   `{mutation, list, insert|update|delete}` with its values in the wire's JSON form — exactly:
 *   integers and reals apart (a real −0 too), integers beyond 2⁵³ as `{"i":…}`, blobs, text as
 *   it is — and gone with the mutation's answer. `mutator(url)` shows them again on the kept
 *   lists before anything is sent: keep the lists first (as above), so that the rows of the
 *   mutations left pending show, marked pending, in the first frame, and go when their mutations
 *   are answered and the lists hold the commits. A change that cannot be read back is skipped
 *   (`unreadableChanges`); its mutation is sent all the same.
 */
export class OfflineStore {
  static saveDelay = 500;

  /**
   * @param {{indexedDB?: IDBFactory, storage?: Storage, saveDelay?: number}} options where to keep
   *   lists (IndexedDB) and the mutator's state (Web Storage: `sessionStorage`, or `localStorage`)
   */
  constructor({ indexedDB = globalThis.indexedDB, storage = globalThis.sessionStorage, saveDelay = OfflineStore.saveDelay } = {}) {
    this.indexedDB = indexedDB;
    this.storage = storage;
    this.saveDelay = saveDelay;
    this.name = 'livelist';
    /** @type {IDBDatabase | null} */
    this.database = null;
    /** @type {Promise<OfflineStore> | null} */
    this.opening = null;
    /** @type {Map<string, {live: LiveQuery, stop: () => void}>} key → the list kept, and how to stop hearing it */
    this.kept = new Map();
    /** @type {Set<string>} keys changed, not written yet */
    this.dirty = new Set();
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.timer = null;
    /** @type {Promise<void> | null} the write under way, or null */
    this.writing = null;
    /** @type {unknown} the last write's error (null: it succeeded) */
    this.lastSaveError = null;
    this.writes = 0;              // list writes done (committed or failed), for tests and diagnostics
    this.unreadableChanges = 0;   // kept pending changes the last `mutator` call could not read back (not shown)
  }

  /**
   * Opens (or creates) the IndexedDB database `name`; resolves with the store.
   * @param {string} [name]
   * @returns {Promise<OfflineStore>}
   */
  open(name = 'livelist') {
    if (this.opening) return this.opening;
    this.name = name;
    this.opening = new Promise((resolve, reject) => {
      if (!this.indexedDB) {
        reject(new Error('no IndexedDB here'));
        return;
      }
      const request = this.indexedDB.open(name, 1);
      request.onupgradeneeded = () => {
        const database = request.result;
        if (!database.objectStoreNames.contains('lists')) database.createObjectStore('lists', { keyPath: 'key' });
      };
      request.onsuccess = () => {
        const database = request.result;
        // Another page deletes or upgrades the database: let it (this page stops writing).
        database.onversionchange = () => {
          database.close();
          if (this.database === database) this.database = null;
        };
        this.database = database;
        resolve(this);
      };
      request.onerror = () => reject(request.error ?? new Error(`IndexedDB ${name} did not open`));
    });
    return this.opening;
  }

  /** Stops keeping lists and closes the database (what is saved stays). */
  close() {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    for (const key of [...this.kept.keys()]) this.forget(key);
    this.database?.close();
    this.database = null;
  }

  /**
   * Shows the list saved under `key` in `live` (a LiveQuery not started yet: `live.restore`), and
   * from now on keeps `live`'s list there. Resolves with `{restored: savedAt}` (shown, stale
   * since then), `{nothingSaved: true}`, or `{notRestored: code}` — a RestoreError's code: the
   * query had started, the list saved is of another query or other arguments (it is replaced by
   * this one's at the next write), or is damaged. Call `open` first; call it before `start()`.
   * @param {LiveQuery} live
   * @param {string} key
   * @returns {Promise<{restored: number | null} | {nothingSaved: true} | {notRestored: string}>}
   */
  async keep(live, key) {
    if (!this.opening) throw new Error('open the store first');
    await this.opening;
    this.forget(key);
    const stop = live.observe((event) => {
      if ((event.type === 'reset' && !event.restored) || event.type === 'changes' || event.type === 'rows') this.#changed(key);
    });
    this.kept.set(key, { live, stop });
    const record = await this.#read(key);
    if (!record) return { nothingSaved: true };
    try {
      live.restore(record.snapshot);
    } catch (error) {
      if (!(error instanceof RestoreError)) throw error;
      return { notRestored: error.code };
    }
    return { restored: live.staleSince };
  }

  /**
   * Stops keeping the list saved under `key` (what is saved stays).
   * @param {string} key
   */
  forget(key) {
    const entry = this.kept.get(key);
    if (!entry) return;
    entry.stop();
    this.kept.delete(key);
    this.dirty.delete(key);
  }

  /**
   * Writes every kept list now, after the write under way if any; resolves once it is committed
   * (rejects with its error).
   */
  async saveNow() {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    while (this.writing) await this.writing;
    for (const key of this.kept.keys()) this.dirty.add(key);
    await this.#writeDirty();
    if (this.lastSaveError) throw this.lastSaveError;
  }

  /**
   * The snapshot saved under `key`, as saved (for tests and diagnostics), or null.
   * @param {string} key
   */
  async saved(key) {
    const record = await this.#read(key);
    return record ? JSON.parse(record.snapshot) : null;
  }

  /**
   * A Mutator for the server at `url` (its other options as Mutator's) under the client name kept
   * for that URL in `storage` (made and kept on the first call), numbering from where the last
   * load stopped, with the mutations it left pending — sent, in order, when it starts. Its name,
   * next number and pending mutations are written to `storage` synchronously whenever they change
   * (`onPendingChange`): before each mutation is sent, and after each answer. A kept state that
   * cannot be read is not used: the mutator takes a new name (never an old name's numbers again).
   *
   * Each new mutation's effects on the lists kept here (`keep`) are written in the same write as
   * its number, by the lists' keys, until it is answered; effects on other lists are not kept.
   * The effects of the mutations left pending are shown again at once (`mutator.show`) on the
   * lists kept under their keys: keep the lists first, then make the mutator. An effect that
   * cannot be read back is not shown, and counted in `unreadableChanges`; its mutation is sent
   * all the same.
   *
   * `connection` is a Connection the page's lists share (the mutator sends on it), or the server's
   * URL (the mutator makes a connection of its own); the state is kept by the server's URL.
   * @param {Connection | string} connection
   * @param {MutatorOptions} [options]
   * @returns {Mutator}
   */
  mutator(connection, options = {}) {
    const storage = this.storage;
    if (!storage) throw new Error('no storage for the mutator (pass sessionStorage or localStorage)');
    const url = connection instanceof Connection ? connection.url : connection;
    const item = `${this.name}.mutator ${url}`;
    /** @type {any} */
    let kept = null;
    try {
      kept = JSON.parse(storage.getItem(item) ?? 'null');
    } catch {
      kept = null;
    }
    const readable = kept !== null && typeof kept === 'object' && typeof kept.client === 'string' && kept.client.length > 0
      && Number.isSafeInteger(kept.nextId) && kept.nextId >= 1 && Array.isArray(kept.pending)
      && kept.pending.every((/** @type {any} */ mutation) => mutation !== null && typeof mutation === 'object' && mutation.type === 'mutate'
        && mutation.client === kept.client && Number.isSafeInteger(mutation.id) && mutation.id >= 1 && mutation.id < kept.nextId
        && typeof mutation.name === 'string');
    const client = readable ? kept.client : randomClientName();
    const mutator = new Mutator(connection, client, { ...options, nextId: readable ? kept.nextId : 1, pending: readable ? kept.pending.slice(-Mutator.maximumPending) : [] });
    // The kept changes of each pending mutation, as written (JSON texts): written again with every
    // write until the mutation is answered. Those of the restored ones as read (on lists kept here
    // or not), those of a new one from its effects on the lists kept here when it is first written.
    /** @type {Map<number, string[]>} */
    const changes = new Map(mutator.pendingMutations.map((mutation) => [mutation.id, []]));
    /** @type {Map<number, ListEffect[]>} mutation number → effects to show again */
    const restored = new Map();
    let unreadable = 0;
    if (readable && kept.effects !== undefined) {
      if (!Array.isArray(kept.effects)) unreadable += 1;
      for (const entry of Array.isArray(kept.effects) ? kept.effects : []) {
        const change = readStoredChange(entry);
        if (change === null) {
          unreadable += 1;
          continue;
        }
        const texts = changes.get(change.mutation);
        if (!texts) continue;   // its mutation is no longer pending
        texts.push(storedChange(change.mutation, change.key, change.effect));
        const list = this.kept.get(change.key)?.live;
        if (!list) continue;
        const effects = restored.get(change.mutation) ?? [];
        effects.push({ list, ...effectForm(change.effect) });
        restored.set(change.mutation, effects);
      }
    }
    this.unreadableChanges = unreadable;
    for (const [id, effects] of [...restored].sort(([a], [b]) => a - b)) mutator.show(effects, id);
    const write = () => {
      const pending = mutator.pendingMutations;
      const now = new Set(pending.map((mutation) => mutation.id));
      for (const id of changes.keys()) if (!now.has(id)) changes.delete(id);
      /** @type {Map<LiveQuery, string> | null} the key of each list kept here */
      let keys = null;
      for (const { id } of pending) {
        if (changes.has(id)) continue;
        if (keys === null) {
          keys = new Map();
          for (const [key, entry] of this.kept) if (!keys.has(entry.live)) keys.set(entry.live, key);
        }
        /** @type {string[]} */
        const texts = [];
        for (const { list, ...effect } of mutator.effects(id)) {
          const key = keys.get(list);
          if (key !== undefined) texts.push(storedChange(id, key, new PendingEffect(effect)));
        }
        changes.set(id, texts);
      }
      const texts = pending.flatMap(({ id }) => changes.get(id) ?? []);
      try {
        storage.setItem(item, `{"client":${JSON.stringify(client)},"nextId":${mutator.nextId},"pending":${JSON.stringify(pending)},"effects":[${texts.join(',')}]}`);
        this.lastSaveError = null;
      } catch (error) {
        this.lastSaveError = error;
      }
    };
    mutator.onPendingChange = write;
    write();   // the name, before anything is numbered under it
    return mutator;
  }

  /** @param {string} key */
  #changed(key) {
    this.dirty.add(key);
    if (this.timer !== null || this.writing) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.#writeDirty();
    }, this.saveDelay);
  }

  /** Writes the lists changed, in one transaction; lists changed meanwhile are written after it. */
  #writeDirty() {
    if (this.writing || this.dirty.size === 0) return this.writing ?? Promise.resolve();
    /** @type {ListRecord[]} */
    const records = [];
    for (const key of this.dirty) {
      const snapshot = this.kept.get(key)?.live.snapshot();
      if (snapshot) records.push({ key, query: snapshot.query, savedAt: snapshot.savedAt, snapshot: JSON.stringify(snapshot) });
    }
    this.dirty.clear();
    const write = (async () => {
      try {
        if (records.length > 0) await this.#write(records);
        this.lastSaveError = null;
      } catch (error) {
        this.lastSaveError = error;
      }
    })();
    this.writing = write.then(() => {
      this.writing = null;
      if (records.length > 0) this.writes += 1;
      if (this.dirty.size > 0 && this.timer === null) {
        this.timer = setTimeout(() => {
          this.timer = null;
          this.#writeDirty();
        }, this.saveDelay);
      }
    });
    return this.writing;
  }

  /**
   * @param {string} key
   * @returns {Promise<ListRecord | null>}
   */
  async #read(key) {
    const database = this.database;
    if (!database) return null;
    const transaction = database.transaction('lists', 'readonly');
    const request = transaction.objectStore('lists').get(key);
    return committed(transaction, () => request.result ?? null);
  }

  /** @param {ListRecord[]} records */
  async #write(records) {
    const database = this.database;
    if (!database) throw new Error('the store is closed');
    const transaction = database.transaction('lists', 'readwrite');
    const lists = transaction.objectStore('lists');
    for (const record of records) lists.put(record);
    return committed(transaction, () => undefined);
  }
}
