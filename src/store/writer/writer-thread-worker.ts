import { parentPort, workerData } from 'node:worker_threads';
import { sql } from 'kysely';
import { foldStep } from '../fold/aggregate-fold.ts';
import { openDatabase, type Database } from '../database.ts';
import { FoldRowCache } from '../fold/fold-row-cache.ts';
import { SqlEventsRepository } from '../repositories/events-repository.ts';
import { SqlTaxiiRepository } from '../repositories/taxii-repository.ts';
import { SqlAlertOutboxWrites, type AlertWriteMethod } from '../repositories/alert-outbox-writes.ts';
import { SqlAuditRows } from '../repositories/audit-trail.ts';
import { SqlClientActivityRepository } from '../repositories/client-activity-repository.ts';
import { SqlIngestUrlsRepository } from '../repositories/ingest-urls-repository.ts';
import { MaintenanceOnThisThread } from '../maintenance/maintenance.ts';
import type { StoreWrite, WriterReply, WriterRequest } from './writer-protocol.ts';

/**
 * The SQLite writer thread (see writer-thread.ts): one connection of its own that stores
 * ingest groups, so that the B-tree work, the WAL writes and the fsync of every commit happen
 * off the thread that answers HTTP; and folds stored events into the lookup aggregates
 * (src/store/fold/aggregate-fold.ts) between ingests, as the store's one writer. One request at a
 * time, in arrival order: a fold asked for after an ingest was answered counts its events. The
 * background writers of the main thread come here too, for the same reason: the TAXII
 * publisher's (src/store/writer/taxii-on-writer.ts), the alert outbox's (src/store/writer/outbox-on-writer.ts),
 * the small ones: the clients' last uses, audit rows and ingest URLs' last uses
 * (src/store/writer/writes-on-writer.ts), and the hourly store maintenance (src/store/maintenance/maintenance.ts).
 */

const { databaseUrl, sqliteCacheMiB } = workerData as { databaseUrl: string; sqliteCacheMiB: number };
const port = parentPort!;

try {
  // The main thread has migrated the store already; this finds it up to date. It leaves the
  // events' query indexes to the main thread, which may have dropped them for a bulk import.
  const database = await openDatabase(databaseUrl, { waitMs: 0, sqliteCacheMiB, restoreEventIndexes: false });
  const repo = new SqlEventsRepository(database.db, database.ingestWrites);
  const stores = {
    taxii: new SqlTaxiiRepository(database.db, database.caps),
    alerts: new SqlAlertOutboxWrites(database.db, database.caps),
    clients: new SqlClientActivityRepository(database.db),
    audit: new SqlAuditRows(database.db),
    ingestUrls: new SqlIngestUrlsRepository(database.db),
    maintenance: new MaintenanceOnThisThread(database),
  };
  const foldRows = new FoldRowCache();
  let queue = Promise.resolve();
  port.on('message', (message: WriterRequest | 'close') => {
    if (message === 'close') {
      queue = queue.then(() => database.close()).then(() => port.close());
      return;
    }
    queue = queue.then(async () => {
      let reply: WriterReply;
      try {
        if ('fold' in message) reply = { id: message.id, folded: await relaxed(database, () => foldStep(database, message.fold, foldRows)) };
        else if ('write' in message) reply = { id: message.id, wrote: await write(stores, message.write) };
        else reply = { id: message.id, outcomes: await repo.ingestGroups(message.groups) };
      } catch (err) {
        reply = { id: message.id, error: describe(err) };
      }
      port.postMessage(reply);
    });
  });
  port.postMessage('ready');
} catch (err) {
  port.postMessage({ failed: describe(err) });
}

/**
 * Runs a fold step without an fsync of its own: its commit holds derived data only, and a
 * crash that loses it loses the fold's position with it, so the step is done again. The next
 * intake commit (synchronous=FULL) makes it durable with its own fsync; WAL frames are written
 * in order, so no later commit survives one lost before it.
 */
async function relaxed<T>(database: Database, fn: () => Promise<T>): Promise<T> {
  await sql`PRAGMA synchronous = NORMAL`.execute(database.db);
  try {
    return await fn();
  } finally {
    await sql`PRAGMA synchronous = FULL`.execute(database.db);
  }
}

/** Runs a background writer's write on this thread's connection. */
function write(stores: Record<StoreWrite['store'], object>, { store, method, args }: StoreWrite): Promise<unknown> {
  const target = stores[store] as Record<string, (...args: unknown[]) => Promise<unknown>>;
  return target[method]!.apply(target, args);
}

/** What crosses to the main thread of an error: structured cloning keeps no `code`. */
function describe(err: unknown): { message: string; code: string | undefined } {
  const { message, code } = err as { message?: unknown; code?: unknown };
  return { message: String(message ?? err), code: typeof code === 'string' ? code : undefined };
}
