import ScratchPostgres
import Testing

/// Every suite of this target that uses the throwaway cluster, one test after another. They would
/// take turns anyway (``PostgresCluster/exclusively(isolation:_:)``: a test that reads the WAL or
/// counts the server's work must see its own commits only); run as one serialized suite, a test
/// does not wait for its turn inside its own time limit, which on a slow machine ran out while
/// other suites' tests held the cluster.
@Suite(.serialized, .enabled(if: PostgresCluster.isPresent, "PostgreSQL's server binaries are not installed"))
enum PostgresDatabaseTests {}
