// libpq, PostgreSQL's C client library: LiveQueryPostgres reads a database's changes through its
// streaming replication protocol (a replication connection in CopyBoth mode), which postgres-nio
// does not speak. Debian: libpq-dev; Homebrew: libpq.
#include <libpq-fe.h>
