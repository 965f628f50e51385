// A PostgreSQL live query's results, events, errors and row cache are LiveQueryCore's, shared
// with every engine: an app that imports LiveQueryPostgres sees them without importing the core.
@_exported import LiveQueryCore
