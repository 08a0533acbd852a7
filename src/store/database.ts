import { ensureEventQueryIndexes } from './maintenance/event-indexes.ts';
import { migrateToLatest } from './migrate.ts';
import { isStoreUnavailable } from './store-errors.ts';
import { isPostgresUrl } from './store-files.ts';
import type { Database } from './database-interface.ts';
import { openPostgres, QUERY_TIMEOUT_MS } from './postgres-database.ts';
import { openSqlite } from './sqlite-database.ts';

export type { Database } from './database-interface.ts';
export { QUERY_TIMEOUT_MS } from './postgres-database.ts';

/**
 * Opens the store named by a `DATABASE_URL` and brings its schema up to date, the events'
 * query indexes included (`restoreEventIndexes`: a bulk import that stopped half-way dropped
 * them; src/store/maintenance/event-indexes.ts). A PostgreSQL server that is not up yet (instances starting
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
