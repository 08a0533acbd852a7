import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { AccessChangeNotices } from '../domain/accounts/access-changes.ts';
import type { DialectCapabilities } from './dialect.ts';
import type { IngestWrites } from './fold/ingest-writes.ts';
import type { StatementRunner } from './prepared-query.ts';
import type { Schema } from './schema.ts';

/** An open store: the query builder, what its dialect can do, and its lifecycle. */
export interface Database {
  db: Kysely<Schema>;
  /**
   * For work whose statements may take far longer than a request's may: migrations, restoring
   * the events' indexes, rebuilding the aggregates, retention. On PostgreSQL a connection of its
   * own, opened on first use, without the query timeout `db` fails requests by while the server
   * is away (QUERY_TIMEOUT_MS): one statement of a rebuild over 10 million events takes minutes,
   * and timed out it failed the rebuild while the server went on running it. On SQLite, `db`.
   */
  unhurried: Kysely<Schema>;
  caps: DialectCapabilities;
  /** Resolves when the store answers a trivial query; rejects otherwise. */
  ping(): Promise<void>;
  /**
   * A number that changes whenever another connection changes accounts, clients, plans,
   * signing keys or allowlists in the store (SQLite: a counter kept by triggers, migrations 021
   * and 028), so caches can
   * notice changes made by the operator CLI. Undefined where the dialect has no such cheap signal.
   */
  externalChangeCounter: (() => number) | undefined;
  /**
   * Makes access-change notices between every process on this store (PostgreSQL's
   * LISTEN/NOTIFY); undefined where the store has none, and needs none (SQLite: one file, one
   * machine, and `externalChangeCounter` tells the other processes' changes). The caller closes
   * what it made.
   */
  changeNotices: ((log?: Logger) => AccessChangeNotices) | undefined;
  /** How an ingest transaction writes its rows, the fastest way for this store. */
  ingestWrites: IngestWrites;
  /**
   * Whether intake should write on a thread of its own: true for a SQLite file, whose
   * synchronous commits would otherwise hold up every request of this process.
   */
  intakeOnWriterThread: boolean;
  /** Where repeated reads (lookups) run their prepared statements. */
  statements: StatementRunner;
  /**
   * Copies the store, consistent as of one commit, into a new file while it serves
   * (src/store/maintenance/backup.ts); undefined where the store's own tools do that (PostgreSQL).
   */
  onlineBackup: ((destination: string) => Promise<{ pages: number }>) | undefined;
  /**
   * Brings the query planner's statistics up to date where nothing else does: SQLite's
   * `PRAGMA optimize`, which analyzes the tables whose size moved (each within SQLite's own
   * analysis limit, so it stays cheap on a large store). Undefined on PostgreSQL, whose
   * autovacuum analyzes. Without statistics SQLite read the TAXII publisher's changed rows
   * through the aggregates' key instead of migration 020's partial index: every shared row, on
   * this thread, each time (docs/performance.md, "TAXII collections"). SQLite's advice for a
   * connection that lives long is to run it at start and now and then: a server's
   * StoreMaintenance does, at start and hourly; short-lived processes (the CLI) need not.
   */
  refreshPlannerStatistics: (() => Promise<void>) | undefined;
  close(): Promise<void>;
}
