import type { Insertable } from 'kysely';
import type { AuditRowWriter } from './audit-trail.ts';
import type { AuditLogTable } from './schema.ts';
import type { WriterThread } from './writer-thread.ts';

/**
 * Audit rows on a SQLite file, written on the writer thread (as the alert outbox's writes are,
 * outbox-on-writer.ts). Requests write them without waiting for them, a failed authentication
 * included; on the main thread's connection each would still sleep that thread, and every
 * request on it, until intake or a fold step let go of SQLite's write lock: a stream of bad
 * credentials would stall lookups.
 */
export class AuditRowsOnWriter implements AuditRowWriter {
  private readonly writer: WriterThread;

  constructor(writer: WriterThread) {
    this.writer = writer;
  }

  async insertRow(row: Insertable<AuditLogTable>): Promise<void> {
    await this.writer.write({ store: 'audit', method: 'insertRow', args: [row] });
  }
}
