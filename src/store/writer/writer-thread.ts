import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { IngestOutcome } from '../../domain/events/events.ts';
import type { IngestGroup } from '../repositories/events-repository.ts';
import type { GroupWriter } from './group-commit.ts';
import type { StoreWrite, WriterReply, WriterRequest } from './writer-protocol.ts';
import type { FoldResult } from '../fold/aggregate-fold.ts';
import { WRITER_DOWN } from '../store-errors.ts';

interface Pending {
  resolve(reply: WriterReply): void;
  reject(error: Error): void;
}

/**
 * Stores ingest groups through a writer thread with its own SQLite connection. SQLite runs in
 * this process and better-sqlite3 is synchronous, so a commit (its WAL writes and fsync,
 * measured at 5–13 ms for a group of 32 events) would otherwise stop every other request,
 * lookups included, for as long as it takes. On the thread, lookups keep being answered while
 * events commit, and events arriving meanwhile form the next group.
 *
 * The thread starts on the first ingest (the CLI never needs it) and again after it dies;
 * requests it held are answered as a store outage (503), never as stored.
 */
export class WriterThread implements GroupWriter {
  private readonly databaseUrl: string;
  private readonly sqliteCacheMiB: number;
  private readonly log: Logger | undefined;
  private starting: Promise<Worker> | undefined;
  private closing = false;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;

  constructor(databaseUrl: string, sqliteCacheMiB: number, log?: Logger) {
    this.databaseUrl = databaseUrl;
    this.sqliteCacheMiB = sqliteCacheMiB;
    this.log = log;
  }

  async ingestGroups(groups: IngestGroup[]): Promise<IngestOutcome[][]> {
    const reply = await this.request((id) => ({ id, groups: groups.map(({ owner, events }) => ({ owner, events })) }));
    return 'outcomes' in reply ? reply.outcomes : [];
  }

  /** One step of the aggregate fold (at most `chunk` events), on the thread, after the ingests sent before it. */
  async foldStep(chunk: number): Promise<FoldResult> {
    const reply = await this.request((id) => ({ id, fold: chunk }));
    if (!('folded' in reply)) throw new Error('the writer thread answered a fold with something else');
    return reply.folded;
  }

  /** One of a background writer's writes (TAXII publisher, alert outbox), on the thread, in turn with intake and the fold. */
  async write(write: StoreWrite): Promise<unknown> {
    const reply = await this.request((id) => ({ id, write }));
    if (!('wrote' in reply)) throw new Error('the writer thread answered a write with something else');
    return reply.wrote;
  }

  private async request(message: (id: number) => WriterRequest): Promise<WriterReply> {
    const worker = await this.worker();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // Only while it holds requests may the thread keep the process alive.
      worker.ref();
      worker.postMessage(message(id));
    });
  }

  /** Lets the thread finish what it holds, close its connection and end. */
  async close(): Promise<void> {
    this.closing = true;
    const starting = this.starting;
    this.starting = undefined;
    const worker = await starting?.catch(() => undefined);
    if (!worker) return;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.postMessage('close');
    const timer = setTimeout(() => void worker.terminate(), 10_000);
    await exited;
    clearTimeout(timer);
  }

  private worker(): Promise<Worker> {
    this.starting ??= this.spawn();
    return this.starting;
  }

  private spawn(): Promise<Worker> {
    return new Promise((resolve, reject) => {
      const worker = new Worker(new URL('./writer-thread-worker.ts', import.meta.url), {
        workerData: { databaseUrl: this.databaseUrl, sqliteCacheMiB: this.sqliteCacheMiB },
      });
      worker.unref();
      let ready = false;
      worker.on('message', (message: WriterReply | 'ready' | { failed: { message: string } }) => {
        if (message === 'ready') {
          ready = true;
          resolve(worker);
        } else if ('failed' in message) {
          // The main thread opened this store, so the thread failing to is a passing fault.
          reject(storeError(`the writer thread could not open the store: ${message.failed.message}`, WRITER_DOWN));
        } else {
          this.settle(worker, message);
        }
      });
      worker.on('error', (err) => {
        // An uncaught error ends the thread; 'exit' follows and answers what it held.
        this.log?.error({ err }, 'the intake writer thread failed');
      });
      worker.on('exit', (code) => {
        if (!this.closing) this.log?.error({ code, held: this.pending.size }, 'the intake writer thread stopped; it starts again with the next submission');
        // One thread at a time: the next submission starts another.
        this.starting = undefined;
        if (!ready) reject(storeError('the writer thread did not start', WRITER_DOWN));
        for (const [id, pending] of this.pending) {
          this.pending.delete(id);
          pending.reject(storeError('the writer thread stopped', WRITER_DOWN));
        }
      });
    });
  }

  private settle(worker: Worker, reply: WriterReply) {
    const pending = this.pending.get(reply.id);
    if (!pending) return;
    this.pending.delete(reply.id);
    if (this.pending.size === 0) worker.unref();
    if ('error' in reply) pending.reject(storeError(reply.error.message, reply.error.code));
    else pending.resolve(reply);
  }
}

/** An Error as the store would have thrown it, code included, so it maps to the same answer. */
function storeError(message: string, code: string | undefined): Error {
  return Object.assign(new Error(message), code === undefined ? {} : { code });
}
