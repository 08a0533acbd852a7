import type { Insertable, Kysely } from 'kysely';
import type { ClientActivityRepository, ClientUses } from '../../domain/accounts/client-activity.ts';
import type { AuditRowWriter } from '../repositories/audit-trail.ts';
import { SqlIngestUrlsRepository } from '../repositories/ingest-urls-repository.ts';
import type { AuditLogTable, Schema } from '../schema.ts';
import type { WriterThread } from './writer-thread.ts';

/*
 * The main thread's small background writes on a SQLite file, sent to the writer thread (as the
 * alert outbox's are, outbox-on-writer.ts). None holds a request's answer, but on the main
 * thread's connection each would sleep that thread, and every request on it, until intake or a
 * fold step let go of SQLite's one write lock.
 */

/** The clients' last uses, flushed every 30 s. */
export class ClientActivityOnWriter implements ClientActivityRepository {
  private readonly writer: WriterThread;

  constructor(writer: WriterThread) {
    this.writer = writer;
  }

  async recordUses(uses: ClientUses[]): Promise<void> {
    await this.writer.write({ store: 'clients', method: 'recordUses', args: [uses] });
  }
}

/** Audit rows: a failed authentication writes one each, so a stream of bad credentials would stall lookups. */
export class AuditRowsOnWriter implements AuditRowWriter {
  private readonly writer: WriterThread;

  constructor(writer: WriterThread) {
    this.writer = writer;
  }

  async insertRow(row: Insertable<AuditLogTable>): Promise<void> {
    await this.writer.write({ store: 'audit', method: 'insertRow', args: [row] });
  }
}

/** Node ingest URLs, whose last use an ingest through one writes (at most once a resolution per URL); the rest as on any store. */
export class IngestUrlsOnWriter extends SqlIngestUrlsRepository {
  private readonly writer: WriterThread;

  constructor(db: Kysely<Schema>, writer: WriterThread) {
    super(db);
    this.writer = writer;
  }

  override async recordUse(id: string, at: string, notBefore: string): Promise<void> {
    await this.writer.write({ store: 'ingestUrls', method: 'recordUse', args: [id, at, notBefore] });
  }
}
