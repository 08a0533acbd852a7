import { chmodSync, closeSync, existsSync, linkSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';

/**
 * The files of an embedded store, created readable by their owner only: the store holds every
 * account's events and the keys that sign tokens, so no other local user may read it.
 */

/** Read and write for the owner, nothing for group and others. */
const OWNER_FILE = 0o600;
/** The directory a store is created in, when we create it. */
const OWNER_DIRECTORY = 0o700;

/** Whether a `DATABASE_URL` names a PostgreSQL server. */
export function isPostgresUrl(url: string): boolean {
  return url.startsWith('postgres://') || url.startsWith('postgresql://');
}

/** The path a `sqlite:` URL names (`:memory:` included). */
export function sqlitePath(url: string): string {
  if (!url.startsWith('sqlite:')) throw new Error('DATABASE_URL must start with sqlite: or postgres://');
  const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
  if (path.length === 0) throw new Error('DATABASE_URL sqlite: needs a file path');
  return path;
}

/** The store file a `DATABASE_URL` names, or undefined for PostgreSQL or an in-memory store. */
export function storeFilePath(url: string): string | undefined {
  if (isPostgresUrl(url)) return undefined;
  const path = sqlitePath(url);
  return path === ':memory:' ? undefined : path;
}

/** The key file beside a store: `data/tollwatch.db` has `data/tollwatch.key`. */
export function keyFilePath(storePath: string): string {
  return join(dirname(storePath), `${basename(storePath, extname(storePath))}.key`);
}

/**
 * Makes the store's directory (owner only) and file (owner read and write only) before SQLite
 * opens it: SQLite then creates `-wal` and `-shm` with the file's own permissions. A store made
 * by an earlier version (`-rw-r--r--`) loses group and other access, its `-wal` and `-shm` too.
 */
export function prepareStoreFile(path: string): void {
  if (!existsSync(dirname(path))) mkdirSync(dirname(path), { recursive: true, mode: OWNER_DIRECTORY });
  closeSync(openSync(path, 'a', OWNER_FILE));
  for (const file of [path, `${path}-wal`, `${path}-shm`]) restrictToOwner(file);
}

/**
 * Takes group and other access away from a file of ours, if it exists. A file another user owns
 * (an operator running the CLI as themselves on a group-writable store) is left as it is:
 * changing it would fail, and it is not ours to change.
 */
export function restrictToOwner(path: string): void {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    return;
  }
  if ((stat.mode & 0o077) === 0 || stat.uid !== process.getuid?.()) return;
  chmodSync(path, stat.mode & 0o700);
}

/** The text of a file, or undefined when there is none. */
export function readFileIfPresent(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * Writes a new file readable by its owner only, whole or not at all, unless one is already
 * there: the text goes to a temporary file first and is linked into place, which fails if
 * another process (a worker starting beside us) got there first. True when ours was written.
 */
export function createOwnerOnlyFile(path: string, text: string): boolean {
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, text, { mode: OWNER_FILE, flag: 'wx' });
  try {
    linkSync(temporary, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    unlinkSync(temporary);
  }
}
