import SQLiteDatabase from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import type { AccessChangeNotices } from '../domain/access-changes.ts';
import { copySqliteOnline } from './backup.ts';
import { PostgresChangeNotices } from './change-notices.ts';
import { POSTGRES, SQLITE, type DialectCapabilities } from './dialect.ts';
import { ArrayIngestWrites, SqliteRowIngestWrites, type IngestWrites } from './ingest-writes.ts';
import { ensureEventQueryIndexes } from './event-indexes.ts';
import { migrateToLatest } from './migrate.ts';
import { executorStatements, type StatementRunner } from './prepared-query.ts';
import { isStoreUnavailable } from './store-errors.ts';
import { isPostgresUrl, prepareStoreFile, sqlitePath } from './store-files.ts';
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
   * A number that changes whenever another connection changes accounts, clients, plans or
   * signing keys in the store (SQLite: a counter kept by triggers, migration 021), so caches can
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
   * (src/store/backup.ts); undefined where the store's own tools do that (PostgreSQL).
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

/**
 * Opens the store named by a `DATABASE_URL` and brings its schema up to date, the events'
 * query indexes included (`restoreEventIndexes`: a bulk import that stopped half-way dropped
 * them; src/store/event-indexes.ts). A PostgreSQL server that is not up yet (instances starting
 * beside it) is waited for up to `waitMs`.
 */
export async function openDatabase(
  url: string,
  { waitMs = 30_000, sqliteCacheMiB = 64, restoreEventIndexes = true, queryTimeoutMs = QUERY_TIMEOUT_MS } = {},
): Promise<Database> {
  const database = isPostgresUrl(url) ? openPostgres(url, queryTimeoutMs) : openSqlite(url, sqliteCacheMiB);
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      await database.ping();
      break;
    } catch (err) {
      if (Date.now() >= deadline || !isStoreUnavailable(err)) {
        await database.close();
        throw err;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  await migrateWithRetry(database);
  if (restoreEventIndexes) {
    try {
      await ensureEventQueryIndexes(database.unhurried, database.caps);
    } catch (err) {
      await database.close();
      throw err;
    }
  }
  return database;
}

/**
 * Kysely locks migrations on PostgreSQL; on SQLite its lock is a no-op, so two processes
 * starting together on one file can collide. The loser fails harmlessly (each migration is one
 * transaction) and, retried, finds the winner's work done.
 */
async function migrateWithRetry(database: Database): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await migrateToLatest(database.unhurried, database.caps);
      return;
    } catch (err) {
      if (database.caps.advisoryLocks || attempt >= 5) {
        await database.close();
        throw err;
      }
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
    }
  }
}

/** Opens a read-only view for lookups (a replica), without migrating it. */
export function openReadDatabase(url: string, sqliteCacheMiB = 64): Database {
  return isPostgresUrl(url) ? openPostgres(url, QUERY_TIMEOUT_MS) : openSqlite(url, sqliteCacheMiB);
}

function openSqlite(url: string, cacheMiB: number): Database {
  const path = sqlitePath(url);
  if (path !== ':memory:') prepareStoreFile(path);
  const native = new SQLiteDatabase(path);
  // WAL lets lookups read while a write commits; synchronous=FULL fsyncs the WAL at every
  // commit, so an acknowledged event survives power loss as well as a process crash.
  // Set before the first table exists, so it applies to new stores only (docs/operations.md
  // says how to convert an older one). Measured here on fresh stores against 1 KiB pages, the
  // size of earlier versions: single-event intake 1.47 x, batch intake 1.81 x, import 1.75 x.
  // Each commit writes every page it dirtied to the WAL frame by frame, with system calls per
  // frame, and a larger page carries more of the events' rows and index entries per frame.
  native.pragma('page_size = 4096');
  native.pragma('journal_mode = WAL');
  // A checkpoint copies the WAL's pages home and fsyncs the file, on the connection whose commit
  // crossed the threshold: with SQLite's default (1,000 pages, 1 MiB at 1 KiB pages) that was
  // every other intake commit. At 16,384 pages (64 MiB at 4 KiB) a page rewritten by many commits
  // is copied home once.
  native.pragma('wal_autocheckpoint = 16384');
  native.pragma('synchronous = FULL');
  native.pragma('foreign_keys = ON');
  native.pragma('busy_timeout = 5000');
  // SQLite's own page cache (beyond the OS file cache). It fills up to this size as pages are
  // touched, so resident memory grows with the store until the cap, then stays.
  native.pragma(`cache_size = -${cacheMiB * 1024}`);
  native.pragma('temp_store = MEMORY');
  const db = new Kysely<Schema>({ dialect: new SqliteDialect({ database: withStatementCache(native) }) });
  const reads = path === ':memory:' ? undefined : new ReadConnection(path, cacheMiB);
  return {
    db,
    unhurried: db,
    caps: SQLITE,
    ping: async () => {
      native.prepare('SELECT 1').get();
    },
    externalChangeCounter: sampled(accessChangeCounter(native), 50),
    changeNotices: undefined,
    ingestWrites: new SqliteRowIngestWrites(native, db),
    intakeOnWriterThread: path !== ':memory:',
    statements: reads ?? executorStatements(db),
    onlineBackup: path === ':memory:' ? undefined : (destination) => copySqliteOnline(native, destination),
    refreshPlannerStatistics: async () => {
      // 0x10000: look at every table's size, not only those this connection has queried.
      native.pragma('optimize = 0x10002');
    },
    close: async () => {
      reads?.close();
      await db.destroy();
    },
  };
}

/**
 * What moves when another connection changes access (accounts, clients, plans, signing keys):
 * the counter migration 021's triggers keep, less this connection's own changes, which
 * temporary triggers count apart (this process drops its caches itself when it changes access,
 * at once). Not `PRAGMA data_version`, which moves with every other connection's commit, this
 * process's writer thread's included, so that each intake commit dropped the credentials and
 * plans kept in memory. That is the fallback for a store without the counter: before the
 * migrations have run, or an older store read as a replica.
 */
function accessChangeCounter(native: SQLiteDatabase.Database): () => number {
  const dataVersion = native.prepare('PRAGMA data_version').pluck();
  const othersChanges = 'select (select version from main.access_version where id = 1) - (select n from temp.own_access_changes)';
  let version: SQLiteDatabase.Statement | undefined;
  return () => {
    if (!version) {
      try {
        version = native.prepare(othersChanges).pluck();
      } catch {
        if (!native.prepare("select 1 from main.sqlite_master where name = 'access_version'").get()) return dataVersion.get() as number;
        native.exec('create temp table if not exists own_access_changes (n integer not null); insert into own_access_changes select 0 where not exists (select 1 from own_access_changes)');
        for (const table of ['accounts', 'clients', 'plans', 'signing_keys']) {
          for (const event of ['insert', 'update', 'delete']) {
            native.exec(`create temp trigger if not exists own_${table}_${event} after ${event} on main.${table} begin update own_access_changes set n = n + 1; end`);
          }
        }
        version = native.prepare(othersChanges).pluck();
      }
    }
    return version.get() as number;
  };
}

/**
 * Reads `read` at most once per `everyMs`: the change signal is asked on every request. The
 * first read waits for the first ask, after the store is migrated.
 */
function sampled(read: () => number, everyMs: number): () => number {
  let value: number | undefined;
  let readAt = 0;
  return () => {
    const now = Date.now();
    if (value === undefined || now - readAt >= everyMs) {
      value = read();
      readAt = now;
    }
    return value;
  };
}

/**
 * A reading connection of its own for the statements of the lookup path, run synchronously.
 * Its own, because a statement run straight on the main connection would see whatever a
 * transaction open there (an aggregate rebuild, say) had not committed yet; here each statement
 * reads the last committed state, and never waits behind such a transaction. It is opened on
 * first use, after the main connection has created and migrated the file.
 */
class ReadConnection implements StatementRunner {
  private readonly path: string;
  private readonly cacheMiB: number;
  private native: SQLiteDatabase.Database | undefined;

  constructor(path: string, cacheMiB: number) {
    this.path = path;
    this.cacheMiB = cacheMiB;
  }

  prepare<Row>(compiled: { sql: string }): (parameters: readonly unknown[]) => Row[] {
    let statement: SQLiteDatabase.Statement | undefined;
    return (parameters) => {
      statement ??= this.connection().prepare(compiled.sql);
      return statement.all(parameters as unknown[]) as Row[];
    };
  }

  close(): void {
    this.native?.close();
  }

  private connection(): SQLiteDatabase.Database {
    if (!this.native) {
      // Not opened read-only: a read-only connection cannot map the WAL index in shared memory
      // and rebuilds it from the WAL for every statement (measured: four times slower).
      // query_only keeps it from writing all the same.
      this.native = new SQLiteDatabase(this.path, { fileMustExist: true });
      this.native.pragma('query_only = ON');
      this.native.pragma('busy_timeout = 5000');
      this.native.pragma(`cache_size = -${this.cacheMiB * 1024}`);
    }
    return this.native;
  }
}

/** Most distinct SQL texts kept prepared; multi-row inserts of varying size would grow it. */
const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely's SQLite driver prepares every query it runs, and parsing SQL costs more than
 * running our small indexed queries. The same few texts recur, so keep them prepared.
 * Statements run synchronously one at a time on this one connection, so reuse is safe.
 */
function withStatementCache(native: SQLiteDatabase.Database) {
  const statements = new Map<string, SQLiteDatabase.Statement>();
  // SQLite ends a transaction itself on some errors (SQLITE_FULL: the disk is full); Kysely
  // then sends its `rollback` anyway, and "no transaction is active" would replace the error
  // that says what happened (and answers 503) with one that says nothing (a 500).
  const noRollback = native.prepare('select 1 where 0');
  return {
    close: () => native.close(),
    prepare(text: string) {
      if (text === 'rollback' && !native.inTransaction) return noRollback;
      // Every transaction here writes, and most read first. Begun deferred, one holds a snapshot
      // from its first read; if another connection (this process's writer thread, say) commits
      // before its first write, SQLite cannot upgrade that snapshot and fails the write at once
      // with SQLITE_BUSY, which no busy timeout waits out: a 503 for an owner rotating a secret
      // while events streamed in. Begun immediate, it takes the write lock first, waiting its
      // turn (the busy timeout) as any writer does, and what it reads cannot change under it.
      if (text === 'begin') text = 'begin immediate';
      let statement = statements.get(text);
      if (!statement) {
        if (statements.size >= STATEMENT_CACHE_SIZE) statements.clear();
        statement = native.prepare(text);
        statements.set(text, statement);
      }
      return statement;
    },
  };
}

function openPostgres(url: string, queryTimeoutMs: number): Database {
  // Fail fast while the server is away: requests answer 503 quickly instead of queueing.
  const pool = quiet(new pg.Pool({ connectionString: url, max: 10, connectionTimeoutMillis: 2000, query_timeout: queryTimeoutMs }));
  const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool }) });
  // No query timeout; TCP keepalives notice a server that is gone rather than slow.
  const unhurried = new Kysely<Schema>({ dialect: new PostgresDialect({ pool: quiet(new pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: 2000, keepAlive: true })) }) });
  return {
    db,
    unhurried,
    caps: POSTGRES,
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    externalChangeCounter: undefined,
    changeNotices: (log) => new PostgresChangeNotices(url, pool, log),
    ingestWrites: new ArrayIngestWrites(),
    intakeOnWriterThread: false,
    statements: namedStatements(pool),
    onlineBackup: undefined,
    refreshPlannerStatistics: undefined,
    close: async () => {
      await Promise.all([db.destroy(), unhurried.destroy()]);
    },
  };
}

/** How long a statement on `Database.db` may take on PostgreSQL before it fails (a 503 to a request). */
export const QUERY_TIMEOUT_MS = 15_000;

function quiet(pool: pg.Pool): pg.Pool {
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  // Nor one checked out between two statements (a transaction while its JavaScript runs): the
  // server's "terminating connection" then arrives with no query to fail, and a client with no
  // listener throws it. Its next statement fails instead, and the pool drops it on release.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/**
 * PostgreSQL: each statement is a named prepared statement, parsed and planned once per
 * connection instead of on every lookup, and sent straight to the pool.
 */
function namedStatements(pool: pg.Pool): StatementRunner {
  let count = 0;
  return {
    prepare<Row>(compiled: { sql: string }) {
      const name = `tollwatch_${++count}`;
      return async (parameters) => (await pool.query<Row & pg.QueryResultRow>({ name, text: compiled.sql, values: parameters as unknown[] })).rows;
    },
  };
}
