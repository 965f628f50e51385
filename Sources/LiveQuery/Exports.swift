// A SQLite live query's results, events, errors and row cache are LiveQueryCore's, shared with
// every engine: an app that imports LiveQuery sees them without importing the core too.
@_exported import LiveQueryCore
