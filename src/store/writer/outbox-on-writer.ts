import type { NewAlert } from '../../domain/alerts/alerts.ts';
import type { AttemptRecord, ClaimedAlert, DeliveryShare, DisabledIntegration } from '../../domain/alerts/outbox.ts';
import type { AlertOutboxWrites, AlertWriteMethod, AttemptedDelivery, SqlAlertOutboxWrites } from '../repositories/alert-outbox-writes.ts';
import type { WriterThread } from './writer-thread.ts';

/**
 * The alert outbox's writes on a SQLite file, sent to the writer thread (as the TAXII
 * publisher's are, taxii-on-writer.ts): there they take their turn with intake's groups and the
 * fold's steps, instead of sleeping the main thread, and every lookup on it, until those let go
 * of the write lock. Its reads stay on the main thread (SqlAlertOutbox): WAL readers take no lock.
 */
export class AlertOutboxWritesOnWriter implements AlertOutboxWrites {
  private readonly writer: WriterThread;

  constructor(writer: WriterThread) {
    this.writer = writer;
  }

  enqueueSubscribed(alerts: NewAlert[]): Promise<ReadonlySet<string>> {
    return this.call('enqueueSubscribed', [alerts]);
  }

  claimAlerts(limit: number, now: string, leaseUntil: string): Promise<ClaimedAlert[]> {
    return this.call('claimAlerts', [limit, now, leaseUntil]);
  }

  fanOut(alertId: string, integrationIds: string[], suppressed: boolean, now: string, data?: Record<string, unknown>): Promise<void> {
    return this.call('fanOut', [alertId, integrationIds, suppressed, now, data]);
  }

  leaseDeliveries(limit: number, now: string, leaseUntil: string, share?: DeliveryShare): Promise<string[]> {
    return this.call('leaseDeliveries', [limit, now, leaseUntil, share]);
  }

  recordAttempt(delivery: AttemptedDelivery, attempt: AttemptRecord): Promise<void> {
    return this.call('recordAttempt', [delivery, attempt]);
  }

  disableFailing(integrationId: string, since: string, reason: string, at: string): Promise<DisabledIntegration | undefined> {
    return this.call('disableFailing', [integrationId, since, reason, at]);
  }

  prune(before: string): Promise<void> {
    return this.call('prune', [before]);
  }

  private async call<M extends AlertWriteMethod>(method: M, args: Parameters<SqlAlertOutboxWrites[M]>): Promise<Awaited<ReturnType<SqlAlertOutboxWrites[M]>>> {
    return (await this.writer.write({ store: 'alerts', method, args } as Parameters<WriterThread['write']>[0])) as Awaited<ReturnType<SqlAlertOutboxWrites[M]>>;
  }
}
