import { parentPort, workerData } from 'node:worker_threads';
import { openDatabase } from './database.ts';
import { SqlEventsRepository, type IngestGroup } from './events-repository.ts';

/**
 * The SQLite writer thread (see writer-thread.ts): one connection of its own that stores
 * ingest groups, so that the B-tree work, the WAL writes and the fsync of every commit happen
 * off the thread that answers HTTP. One request at a time, in arrival order.
 */
export interface IngestRequest {
  id: number;
  groups: IngestGroup[];
}

export type IngestReply =
  | { id: number; outcomes: Awaited<ReturnType<SqlEventsRepository['ingestGroups']>> }
  | { id: number; error: { message: string; code: string | undefined } };

const { databaseUrl, sqliteCacheMiB } = workerData as { databaseUrl: string; sqliteCacheMiB: number };
const port = parentPort!;

try {
  // The main thread has migrated the store already; this finds it up to date.
  const database = await openDatabase(databaseUrl, { waitMs: 0, sqliteCacheMiB });
  const repo = new SqlEventsRepository(database.db, database.ingestWrites);
  let queue = Promise.resolve();
  port.on('message', (message: IngestRequest | 'close') => {
    if (message === 'close') {
      queue = queue.then(() => database.close()).then(() => port.close());
      return;
    }
    queue = queue.then(async () => {
      let reply: IngestReply;
      try {
        reply = { id: message.id, outcomes: await repo.ingestGroups(message.groups) };
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

/** What crosses to the main thread of an error: structured cloning keeps no `code`. */
function describe(err: unknown): { message: string; code: string | undefined } {
  const { message, code } = err as { message?: unknown; code?: unknown };
  return { message: String(message ?? err), code: typeof code === 'string' ? code : undefined };
}
