import type { Kysely } from 'kysely';
import { TEST_ALERT, type AnyAlertType, type NewAlert } from '../../domain/alerts/alerts.ts';
import type { IntegrationKind } from '../../domain/alerts/integrations.ts';
import type { KeySealer } from '../../domain/accounts/key-sealing.ts';
import type { AttemptRecord, ClaimedAlert, DeliveryShare, DisabledIntegration, DueDelivery, OutboxStore } from '../../domain/alerts/outbox.ts';
import type { DialectCapabilities } from '../dialect.ts';
import { integrationSecretContext } from './integrations-repository.ts';
import type { Schema } from '../schema.ts';
import { SqlAlertOutboxWrites, type AlertOutboxWrites } from './alert-outbox-writes.ts';

/**
 * The outbox in the SQL store as the delivery worker sees it: its reads here, its writes through
 * `writes` (on this connection unless given: the writer thread's, for a SQLite file).
 */
export class SqlAlertOutbox implements OutboxStore {
  private readonly db: Kysely<Schema>;
  private readonly sealer: KeySealer;
  private readonly writes: AlertOutboxWrites;

  constructor(db: Kysely<Schema>, caps: DialectCapabilities, sealer: KeySealer, writes: AlertOutboxWrites = new SqlAlertOutboxWrites(db, caps)) {
    this.db = db;
    this.sealer = sealer;
    this.writes = writes;
  }

  enqueueSubscribed(alerts: NewAlert[]): Promise<ReadonlySet<string>> {
    return this.writes.enqueueSubscribed(alerts);
  }

  claimAlerts(limit: number, now: string, leaseUntil: string): Promise<ClaimedAlert[]> {
    return this.writes.claimAlerts(limit, now, leaseUntil);
  }

  fanOut(alertId: string, integrationIds: string[], suppressed: boolean, now: string, data?: Record<string, unknown>): Promise<void> {
    return this.writes.fanOut(alertId, integrationIds, suppressed, now, data);
  }

  recordAttempt(delivery: DueDelivery, attempt: AttemptRecord): Promise<void> {
    return this.writes.recordAttempt({ id: delivery.id, attempts: delivery.attempts, integrationId: delivery.integration?.id }, attempt);
  }

  disableFailing(integrationId: string, since: string, reason: string, at: string): Promise<DisabledIntegration | undefined> {
    return this.writes.disableFailing(integrationId, since, reason, at);
  }

  prune(before: string): Promise<void> {
    return this.writes.prune(before);
  }

  async recipients(alert: ClaimedAlert, score?: number): Promise<string[]> {
    // A disabled account's alerts stop with its access (they stay suppressed after an enable),
    // and a disabled integration's (they are not held for it either).
    let query = this.db
      .selectFrom('integrations as i')
      .innerJoin('accounts as a', 'a.account_id', 'i.account_id')
      .select(['i.id', 'i.alert_types'])
      .where('i.account_id', '=', alert.accountId)
      .where('i.confirmed_at', 'is not', null)
      .where('a.disabled', '=', 0);
    if (alert.integrationId !== null) query = query.where('i.id', '=', alert.integrationId);
    else query = query.where('i.disabled_at', 'is', null);
    if (score !== undefined) query = query.where('i.min_score', '<=', score);
    const rows = await query.orderBy('i.id').execute();
    return rows.filter((r) => alert.type === TEST_ALERT || r.alert_types.split(' ').includes(alert.type)).map((r) => r.id);
  }

  async recentAlerts(accountId: string, subject: string | undefined, since: string): Promise<number> {
    const row = await this.db
      .selectFrom('alerts')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('account_id', '=', accountId)
      .$if(subject !== undefined, (q) => q.where('subject', '=', subject!))
      .where('created_at', '>=', since)
      .where('state', '=', 'fanned_out')
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async claimDeliveries(limit: number, now: string, leaseUntil: string, share?: DeliveryShare): Promise<DueDelivery[]> {
    const ids = await this.writes.leaseDeliveries(limit, now, leaseUntil, share);
    if (ids.length === 0) return [];
    const rows = await this.db
      .selectFrom('alert_deliveries as d')
      .innerJoin('alerts as a', 'a.id', 'd.alert_id')
      .leftJoin('integrations as i', 'i.id', 'd.integration_id')
      .select(['d.id', 'd.account_id', 'd.attempts', 'd.created_at as delivery_created_at', 'a.id as alert_id', 'a.type', 'a.created_at', 'a.data', 'i.id as integration_id', 'i.kind', 'i.target', 'i.secret'])
      .select(['i.previous_secret', 'i.previous_secret_until'])
      .where('d.id', 'in', ids)
      .execute();
    return rows.map((r) => ({
      id: r.id,
      accountId: r.account_id,
      attempts: Number(r.attempts),
      createdAt: r.delivery_created_at,
      alert: { id: r.alert_id, type: r.type as AnyAlertType, createdAt: r.created_at, data: JSON.parse(r.data) as Record<string, unknown> },
      integration:
        r.integration_id === null || r.kind === null || r.target === null
          ? undefined
          : {
              id: r.integration_id,
              kind: r.kind as IntegrationKind,
              target: r.target,
              secret: r.secret === null ? null : this.sealer.open(r.secret, integrationSecretContext(r.integration_id)),
              previousSecret:
                r.previous_secret === null || r.previous_secret_until === null || r.previous_secret_until <= now
                  ? null
                  : this.sealer.open(r.previous_secret, integrationSecretContext(r.integration_id)),
            },
    }));
  }

  async silentNodes(since: string, silentBefore: string): Promise<Array<{ accountId: string; nodeId: string; lastSeen: string }>> {
    const accounts = await this.db
      .selectFrom('integrations')
      .select('account_id')
      .distinct()
      .where('confirmed_at', 'is not', null)
      .where('disabled_at', 'is', null)
      .where('alert_types', 'like', '%node.silent%')
      .execute();
    const silent: Array<{ accountId: string; nodeId: string; lastSeen: string }> = [];
    for (const { account_id } of accounts) {
      // A range of one account's recent events, by events_by_time; nodes quiet for longer than
      // the look-back are forgotten rather than alerted forever.
      const rows = await this.db
        .selectFrom('events')
        .select(['created_by_node_id', (eb) => eb.fn.max('event_time').as('last_seen')])
        .where('account_id', '=', account_id)
        .where('event_time', '>=', since)
        .groupBy('created_by_node_id')
        .having((eb) => eb.fn.max('event_time'), '<', silentBefore)
        .execute();
      for (const row of rows) silent.push({ accountId: account_id, nodeId: row.created_by_node_id, lastSeen: String(row.last_seen) });
    }
    return silent;
  }
}
