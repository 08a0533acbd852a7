import { Worker } from 'node:worker_threads';
import { UnreadableItem } from '../../domain/events/event-intake.ts';
import { ServiceError } from '../../domain/errors.ts';
import type { ParseRequest } from './batch-parse-worker.ts';
import { readJsonBatch, readNdjsonBatch, type BatchText } from './batch-text.ts';

/**
 * Bodies up to this size are parsed where they arrive: a 256 KiB body parses in about a
 * millisecond, less than a trip to another thread. Larger ones (up to 16 MiB, where one object
 * of a million members took over a second) go to the parse thread, so other requests are
 * answered meanwhile.
 */
const INLINE_LIMIT = 256 * 1024;

/**
 * Reads batch bodies into their items (batch-text.ts), large ones on a thread of its own,
 * started on first use and shared by every request of this process.
 */
export class BatchParser {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, { resolve(result: BatchText): void; reject(error: Error): void }>();
  private nextId = 1;

  /** The items of a batch body, each that cannot be taken standing as an UnreadableItem; throws the body's one problem. */
  async read(text: string, ndjson: boolean, maxItems: number): Promise<unknown> {
    const result = text.length <= INLINE_LIMIT ? (ndjson ? readNdjsonBatch(text, maxItems) : readJsonBatch(text, maxItems)) : await this.onThread({ text, ndjson, maxItems });
    if (!result.ok) throw new ServiceError(result.code, result.detail);
    if (!Array.isArray(result.items)) return result.items;
    const items: unknown[] = result.items;
    for (const [index, reason] of result.unreadable) items[index] = new UnreadableItem(reason);
    return items;
  }

  /** Stops the parse thread; requests it held fail. */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  private onThread(request: Omit<ParseRequest, 'id'>): Promise<BatchText> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.thread().postMessage({ id, ...request } satisfies ParseRequest);
    });
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(new URL('./batch-parse-worker.ts', import.meta.url));
    // The thread never keeps the process alive: between requests it has nothing to do.
    worker.unref();
    worker.on('message', ({ id, result }: { id: number; result: BatchText }) => {
      this.pending.get(id)?.resolve(result);
      this.pending.delete(id);
    });
    // A thread that dies fails what it held (answered as a server fault); the next body starts another.
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = undefined;
      for (const { reject } of this.pending.values()) reject(new Error('the batch parse thread stopped'));
      this.pending.clear();
    });
    this.worker = worker;
    return worker;
  }
}
