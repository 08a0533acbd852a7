import type { ClientActivityRepository, ClientUses } from '../domain/client-activity.ts';
import type { WriterThread } from './writer-thread.ts';

/**
 * The clients' last uses on a SQLite file, written on the writer thread (as the alert outbox's
 * writes are, outbox-on-writer.ts): a flush on the main thread's connection would sleep it, and
 * every request on it, until intake or a fold step let go of SQLite's write lock.
 */
export class ClientActivityOnWriter implements ClientActivityRepository {
  private readonly writer: WriterThread;

  constructor(writer: WriterThread) {
    this.writer = writer;
  }

  async recordUses(uses: ClientUses[]): Promise<void> {
    await this.writer.write({ store: 'clients', method: 'recordUses', args: [uses] });
  }
}
