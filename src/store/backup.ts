import { rmSync, statSync, writeFileSync } from 'node:fs';
import type SQLiteDatabase from 'better-sqlite3';
import type { Database } from './database.ts';
import { isPostgresUrl, keyFilePath, storeFilePath } from './store-files.ts';

/** What a backup wrote. */
export interface BackupReport {
  file: string;
  pages: number;
  bytes: number;
  seconds: number;
  /**
   * What unseals the copy's keys and must be kept with it: `TOLLWATCH_KEY_SECRET`, or the path of
   * the key file beside the store.
   */
  key: string | null;
}

/** Pages per backup step: every page at once (SQLite's step takes at most 2^31 − 1). */
const ALL_PAGES = 0x7fffffff;

/**
 * Copies a SQLite store into a new file with SQLite's online backup, while other connections
 * (a running server) read and write it. The copy is made in one backup step, under one read
 * transaction: it is the store as of one commit, every transaction committed before that in it
 * whole, none after. In smaller steps a write by another connection between two steps restarts
 * the copy, and a store under steady intake might never finish. WAL mode lets the server go on
 * committing meanwhile; its WAL only grows until the copy is done. `native` is the process's
 * own connection to the store.
 */
export async function copySqliteOnline(native: SQLiteDatabase.Database, destination: string): Promise<{ pages: number }> {
  // Made here, empty and readable by its owner only, so the copy never exists more open than
  // the store; SQLite reads an empty file as an empty database and writes the copy into it.
  writeFileSync(destination, '', { mode: 0o600, flag: 'wx' });
  try {
    const { totalPages } = await native.backup(destination, { progress: () => ALL_PAGES });
    return { pages: totalPages };
  } catch (err) {
    for (const file of [destination, `${destination}-journal`]) rmSync(file, { force: true });
    throw err;
  }
}

const POSTGRES_BACKUP =
  'backup copies an embedded SQLite store; back up PostgreSQL with pg_dump (pg_dump --format=custom --file=tollwatch.dump "$DATABASE_URL") or with a base backup and WAL archiving for point-in-time recovery (docs/operations.md, Backups)';

/** Why the store a `DATABASE_URL` names cannot be backed up by us, before opening it; undefined when it can. */
export function backupRefusal(databaseUrl: string): string | undefined {
  return isPostgresUrl(databaseUrl) ? POSTGRES_BACKUP : undefined;
}

/**
 * Backs the store up into a new file while the service runs (docs/operations.md, Backups).
 * SQLite only: a PostgreSQL store is backed up with PostgreSQL's own tools.
 */
export async function backupStore(database: Database, destination: string, keySecretSet: boolean, databaseUrl: string): Promise<BackupReport> {
  if (!database.onlineBackup) throw new Error(!database.caps.embedded ? POSTGRES_BACKUP : 'an in-memory store has nothing to back up');
  const started = Date.now();
  let pages: number;
  try {
    ({ pages } = await database.onlineBackup(destination));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw new Error(`${destination} exists: backup writes a new file only`);
    if (code === 'ENOENT') throw new Error(`cannot create ${destination}: no such directory`);
    throw err;
  }
  const store = storeFilePath(databaseUrl);
  const key = keySecretSet ? 'TOLLWATCH_KEY_SECRET' : store ? keyFilePath(store) : null;
  return { file: destination, pages, bytes: statSync(destination).size, seconds: (Date.now() - started) / 1000, key };
}
