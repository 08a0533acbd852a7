import { statSync } from 'node:fs';
import type { Database } from '../database.ts';
import { isPostgresUrl, keyFilePath, storeFilePath } from '../store-files.ts';

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
