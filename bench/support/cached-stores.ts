import { copyFileSync, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { openDatabase } from '../../src/store/database.ts';
import { isPostgresUrl, keyFilePath, sqlitePath } from '../../src/store/store-files.ts';
import { generateEvents } from './generate-events.ts';
import { log, ROOT } from './support.ts';

/** Where generated stores are kept between runs (outside git). */
export const BENCH_DATA = join(ROOT, 'bench/.data');

/** Distinct numbers the generated events are spread over. */
export const POOL_NUMBERS = 200_000;

/**
 * A SQLite store holding `size` generated events, built once and reused by every bench tool:
 * the same seed, so every run and every tool measures the same data. Built under `.partial`
 * and renamed, so an interrupted build is never taken for a finished one.
 */
export async function cachedStore(size: number): Promise<string> {
  mkdirSync(BENCH_DATA, { recursive: true });
  const path = join(BENCH_DATA, `events-${size}.db`);
  if (existsSync(path)) return `sqlite:${path}`;
  log(`generating ${size.toLocaleString('en')} events into ${path} (cached for later runs; 10 million take about 25 minutes)`);
  rmSync(`${path}.partial`, { force: true });
  const database = await openDatabase(`sqlite:${path}.partial`);
  await generateEvents(database, { events: size, numbers: POOL_NUMBERS, addresses: 50_000, seed: 1, rebuild: true, log });
  await database.close();
  for (const suffix of ['-wal', '-shm']) rmSync(`${path}.partial${suffix}`, { force: true });
  renameSync(`${path}.partial`, path);
  return `sqlite:${path}`;
}

/**
 * The store a tool measures: the one named, which must exist (opening a missing SQLite file
 * would make an empty store there, which a later run would take for a built one), or a fresh
 * copy of the cached 10,000-event store. A copy, because these tools write (intake loads, and
 * every server's own rows): on the cached store itself each run measured a larger store than
 * the last (it had grown to 1.1 GB), and two sides of a comparison different stores.
 */
export async function measuredStore(database: string | undefined): Promise<string> {
  if (database === undefined) return storeCopy(await cachedStore(10_000), join(BENCH_DATA, 'measured.db'));
  if (!isPostgresUrl(database) && !existsSync(sqlitePath(database))) throw new Error(`${database}: no such store (leave out --database for the generated one)`);
  return database;
}

/**
 * A fresh copy of the SQLite store `url` at `path`, with its key file, replacing whatever was
 * there (its WAL too); without `url`, `path` emptied, for a new store.
 */
export function storeCopy(url: string | undefined, path: string): string {
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
  rmSync(keyFilePath(path), { force: true });
  if (!url) return `sqlite:${path}`;
  const source = sqlitePath(url);
  copyFileSync(source, path);
  if (existsSync(keyFilePath(source))) copyFileSync(keyFilePath(source), keyFilePath(path));
  return `sqlite:${path}`;
}
