/**
 * What differs between the stores, named once (capability flags, not `if (dialect)`
 * scattered through queries). `name` is for logs: code that branches on it instead of a flag
 * fails test/layers.test.ts.
 */
export interface DialectCapabilities {
  name: 'sqlite' | 'postgres';
  /** Column type of 64-bit counters. */
  counterType: 'integer' | 'bigint';
  /** Column type and constraint of the events' surrogate key. */
  serialType: 'integer' | 'bigserial';
  /**
   * Events are range-partitioned by month of `event_time` (declarative partitioning), so old
   * months are dropped whole and partitions must be created ahead of time.
   */
  partitionedEvents: boolean;
  /**
   * Several connections write events at once, each taking ids from a sequence before it
   * commits, so ids commit out of order: the aggregate fold waits for them to settle
   * (src/store/fold/aggregate-fold.ts). SQLite has one writer at a time, and its ids commit in order.
   */
  concurrentWriters: boolean;
  /** Tables keyed by a primary key alone may keep their rows in that key's B-tree (SQLite's WITHOUT ROWID). */
  withoutRowid: boolean;
  /** The aggregate function that makes a JSON object of name/value pairs, as text. */
  jsonObjectAgg: 'json_group_object' | 'json_object_agg';
  /**
   * Claims may skip rows another transaction has locked (`FOR UPDATE SKIP LOCKED`), so several
   * instances take disjoint rows of the outbox at once. Without it (SQLite) a claim is one
   * UPDATE under the store's single writer lock, which is just as exclusive.
   */
  skipLockedClaims: boolean;
  /** Where the catalogue names the indexes: SQLite's schema table, PostgreSQL's pg_indexes view. */
  indexCatalogue: 'sqlite_master' | 'pg_indexes';
  /**
   * Processes take turns through advisory locks (PostgreSQL): migrations run under Kysely's, and
   * the jobs store/advisory-locks.ts lists under ours, taken only through it. Without them
   * (SQLite, one writer at a time), work two processes may start together is idempotent,
   * retried, or serialised by the write lock.
   */
  advisoryLocks: boolean;
  /**
   * How the bytes of replaced secrets are made to leave the store's files: SQLite zeroes freed
   * space (`secure_delete`) and empties its WAL; PostgreSQL rewrites the tables (`VACUUM FULL`),
   * dropping the old row versions it keeps until then.
   */
  scrubFreedSpace: 'secure_delete' | 'vacuum_full';
  /** The store is a file this process opens (SQLite), so `tollwatch backup` can copy it. */
  embedded: boolean;
  /**
   * Processes learn of each other's changes of access from a counter that triggers keep
   * (SQLite, migration 021), read every 50 ms; PostgreSQL's servers hear of them by LISTEN/NOTIFY.
   */
  accessCounter: boolean;
  /**
   * A subquery may read the columns of the tables before it (`CROSS JOIN LATERAL`, PostgreSQL):
   * a lookup per key, which no statistics can turn into a scan. SQLite has no LATERAL, and plans
   * a key list on a primary key as a lookup per key anyway.
   */
  lateralJoins: boolean;
  /**
   * What a table's row count is bounded by, cheaply: SQLite's largest rowid (a count would walk
   * the table in the thread that answers requests), PostgreSQL's count (the server works it out).
   */
  rowCountBound: 'max_rowid' | 'count';
  /**
   * A read replica streams the store's WAL, and how far it has replayed can be read against the
   * primary's position (PostgreSQL streaming replication): lookups then know when it has caught
   * up with a fold. A SQLite replica is a file copied by other means, with no such position.
   */
  walReplicas: boolean;
}

export const SQLITE: DialectCapabilities = {
  name: 'sqlite',
  counterType: 'integer',
  serialType: 'integer',
  partitionedEvents: false,
  concurrentWriters: false,
  withoutRowid: true,
  jsonObjectAgg: 'json_group_object',
  skipLockedClaims: false,
  indexCatalogue: 'sqlite_master',
  advisoryLocks: false,
  scrubFreedSpace: 'secure_delete',
  embedded: true,
  accessCounter: true,
  lateralJoins: false,
  rowCountBound: 'max_rowid',
  walReplicas: false,
};

export const POSTGRES: DialectCapabilities = {
  name: 'postgres',
  counterType: 'bigint',
  serialType: 'bigserial',
  partitionedEvents: true,
  concurrentWriters: true,
  withoutRowid: false,
  jsonObjectAgg: 'json_object_agg',
  skipLockedClaims: true,
  indexCatalogue: 'pg_indexes',
  advisoryLocks: true,
  scrubFreedSpace: 'vacuum_full',
  embedded: false,
  accessCounter: false,
  lateralJoins: true,
  rowCountBound: 'count',
  walReplicas: true,
};
