import SQLiteDatabase from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { copySqliteOnline } from './maintenance/sqlite-online-copy.ts';
import { SQLITE } from './dialect.ts';
import { SqliteRowIngestWrites } from './fold/ingest-writes.ts';
import { executorStatements, type StatementRunner } from './prepared-query.ts';
import { prepareStoreFile, sqlitePath } from './store-files.ts';
import type { Schema } from './schema.ts';
import type { Database } from './database-interface.ts';

/** A SQLite store (`sqlite:<file>` or `sqlite::memory:`) as a `Database`: better-sqlite3 under Kysely, with the reads' prepared statements on a connection of their own. */
export function openSqlite(url: string, cacheMiB: number): Database {
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
 * What moves when another connection changes access (accounts, clients, plans, signing keys,
 * allowlists):
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
        // Allowlists (migration 028) are kept in memory too; a store read before that migration has none.
        const allowlists = native.prepare("select 1 from main.sqlite_master where name = 'allowlist_entries'").get() ? ['allowlist_entries'] : [];
        for (const table of ['accounts', 'clients', 'plans', 'signing_keys', ...allowlists]) {
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
