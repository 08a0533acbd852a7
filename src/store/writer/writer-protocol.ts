import type { FoldResult } from '../fold/aggregate-fold.ts';
import type { SqlAlertOutboxWrites, AlertWriteMethod } from '../repositories/alert-outbox-writes.ts';
import type { SqlAuditRows } from '../repositories/audit-trail.ts';
import type { SqlClientActivityRepository } from '../repositories/client-activity-repository.ts';
import type { IngestGroup, SqlEventsRepository } from '../repositories/events-repository.ts';
import type { SqlIngestUrlsRepository } from '../repositories/ingest-urls-repository.ts';
import type { SqlTaxiiRepository } from '../repositories/taxii-repository.ts';
import type { MaintenanceOnThisThread } from '../maintenance/maintenance.ts';

/**
 * What the main thread (writer-thread.ts) and the SQLite writer thread (writer-thread-worker.ts)
 * say to each other: requests in, one reply per request by its id.
 */
export type WriterRequest = { id: number; groups: IngestGroup[] } | { id: number; fold: number } | { id: number; write: StoreWrite };

/** One of a background writer's writing methods and its arguments, by the store it writes. */
export type StoreWrite =
  | Write<'taxii', SqlTaxiiRepository, 'claim' | 'release' | 'publish' | 'pruneBatch'>
  | Write<'alerts', SqlAlertOutboxWrites, AlertWriteMethod>
  | Write<'clients', SqlClientActivityRepository, 'recordUses'>
  | Write<'audit', SqlAuditRows, 'insertRow'>
  | Write<'ingestUrls', SqlIngestUrlsRepository, 'recordUse'>
  | Write<'maintenance', MaintenanceOnThisThread, 'runOnce' | 'pruneAudit'>;
/** For each of `Store`'s methods named in `M`: its name and its arguments, under the store's name. */
type Write<S extends string, Store, M extends keyof Store> = {
  [K in M]: { store: S; method: K; args: Store[K] extends (...args: infer A) => unknown ? A : never };
}[M];

export type WriterReply =
  | { id: number; outcomes: Awaited<ReturnType<SqlEventsRepository['ingestGroups']>> }
  | { id: number; folded: FoldResult }
  | { id: number; wrote: unknown }
  | { id: number; error: { message: string; code: string | undefined } };

