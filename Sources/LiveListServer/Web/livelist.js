// livelist.js — the LiveList wire protocol (docs/PROTOCOL.md) in the browser, without the DOM: the
// entry module apps and tests import. It re-exports the modules of `livelist/`, one concern each:
//
//   values.js            the protocol's values, held exactly; arguments compared; ProtocolError
//   order.js             the list's order, as the server orders it
//   positions.js         paths and positions across a transition; sections
//   list-model.js        the list a client keeps: counts, sections, the window's rows
//   effects.js           what mutations do to a list, as its reset states it
//   derived-effects.js   a mutation's pending effects computed from what the reset states
//   pending-overlay.js   the client's own mutations' expected effects laid over the list
//   connection.js        one WebSocket per page: reconnection with backoff, liveness
//   live-query.js        a published query followed live over a connection
//   pending-mutations.js the mutations not yet answered, and what each answer does (no I/O)
//   mutator.js           the client's mutations, each applied once, shown pending at once
//   stored-change.js     a pending effect as the offline store keeps it
//   offline-store.js     the last lists and pending mutations kept across page loads
//   list-layout.js       where livelist-view.js's rows go, positions to pixels
//   list-viewport.js     where livelist-view.js is scrolled to: rows in view, its anchor
//   list-drawing.js      livelist-view.js's DOM: rows, headers, state row, animations
//
// No dependencies, no build step: ES modules for browsers and Node (20+, where `WebSocket` is
// passed in). Their JSDoc types are checked by `tsc -p Web/jsconfig.json`.

export { Real, ProtocolError, decodeValue, displayText, identityKey, pendingValue, sameArguments } from './livelist/values.js';
export { compareRows, compareValues, parseOrder } from './livelist/order.js';
export { PathMapping, Sections, serverPositionMapping } from './livelist/positions.js';
export { ListModel, parseChanges } from './livelist/list-model.js';
export { parseEffects } from './livelist/effects.js';
export { deriveEffects } from './livelist/derived-effects.js';
export { DisplayedList, DisplayedTransition, PendingEffect, resolvePending } from './livelist/pending-overlay.js';
export { Connection } from './livelist/connection.js';
export { LiveQuery, RestoreError } from './livelist/live-query.js';
export { PendingMutations } from './livelist/pending-mutations.js';
export { MutationError, Mutator } from './livelist/mutator.js';
export { OfflineStore } from './livelist/offline-store.js';
