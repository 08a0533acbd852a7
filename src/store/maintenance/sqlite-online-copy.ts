import { rmSync, writeFileSync } from 'node:fs';
import type SQLiteDatabase from 'better-sqlite3';

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
