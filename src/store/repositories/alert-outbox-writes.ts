import { sql, type Kysely, type SelectQueryBuilder } from 'kysely';
import { TEST_ALERT, type AnyAlertType, type NewAlert } from '../../domain/alerts/alerts.ts';
import type { IntegrationKind } from '../../domain/alerts/integrations.ts';
import type { AttemptRecord, ClaimedAlert, DeliveryShare, DisabledIntegration } from '../../domain/alerts/outbox.ts';
import type { DialectCapabilities } from '../dialect.ts';
import { chunks } from '../fold/ingest-writes.ts';
import type { Schema } from '../schema.ts';

/** Rows per outbox insert: 9 columns each. */
const ALERTS_PER_STATEMENT = 300;

/** What recording an attempt needs of its delivery: no secret crosses to the writer thread. */
export interface AttemptedDelivery {
  id: string;
  attempts: number;
  /** Undefined when the integration was deleted since: the delivery is closed with no attempt row. */
  integrationId: string | undefined;
}

/** The outbox's writes, each of which takes the store's write lock. */
export type AlertWriteMethod = 'enqueueSubscribed' | 'claimAlerts' | 'fanOut' | 'leaseDeliveries' | 'recordAttempt' | 'disableFailing' | 'prune';
export type AlertOutboxWrites = Pick<SqlAlertOutboxWrites, AlertWriteMethod>;

/**
 * The outbox's writes in the SQL store (migration 012). On a SQLite file they run on the writer
 * thread (src/store/writer/outbox-on-writer.ts): on the main thread's connection each would wait for
 * SQLite's one write lock while intake or a fold step holds it, and better-sqlite3 waits by
 * sleeping the thread, lookups with it. The delivery worker claims every second: measured under
 * batch intake, 33 ms per claim on the main thread (docs/performance.md).
 */
export class SqlAlertOutboxWrites {
  private readonly db: Kysely<Schema>;
  private readonly caps: DialectCapabilities;

  constructor(db: Kysely<Schema>, caps: DialectCapabilities) {
    this.db = db;
    this.caps = caps;
  }

  async enqueueSubscribed(alerts: NewAlert[]): Promise<ReadonlySet<string>> {
    const subscribed = new Set<string>();
    if (alerts.length === 0) return subscribed;
    const accounts = [...new Set(alerts.map((a) => a.accountId))];
    for (const chunk of chunks(accounts)) {
      const rows = await this.db
        .selectFrom('integrations')
        .select(['account_id', 'alert_types'])
        .where('account_id', 'in', chunk)
        .where('confirmed_at', 'is not', null)
        .where('disabled_at', 'is', null)
        .execute();
      for (const row of rows) for (const type of row.alert_types.split(' ')) subscribed.add(`${row.account_id}|${type}`);
    }
    const wanted = alerts.filter((a) => a.type === TEST_ALERT || subscribed.has(`${a.accountId}|${a.type}`));
    for (const chunk of chunks(wanted, ALERTS_PER_STATEMENT)) {
      await this.db
        .insertInto('alerts')
        .values(
          chunk.map((a) => ({
            id: a.id,
            account_id: a.accountId,
            type: a.type,
            subject: a.subject,
            dedup_key: a.dedupKey,
            data: JSON.stringify(a.data),
            created_at: a.createdAt,
            integration_id: a.integrationId ?? null,
            state: 'new',
          })),
        )
        .onConflict((oc) => oc.columns(['account_id', 'dedup_key']).doNothing())
        .execute();
    }
    return subscribed;
  }

  async claimAlerts(limit: number, now: string, leaseUntil: string): Promise<ClaimedAlert[]> {
    const rows = await this.db
      .updateTable('alerts')
      .set({ claimed_until: leaseUntil })
      .where('id', 'in', this.inTurns(this.unleased('alerts', now).where('state', '=', 'new'), 'created_at', limit, limit))
      .returning(['id', 'account_id', 'type', 'subject', 'created_at', 'integration_id', 'data'])
      .execute();
    return rows.map((r) => ({
      id: r.id,
      accountId: r.account_id,
      type: r.type as AnyAlertType,
      subject: r.subject,
      createdAt: r.created_at,
      integrationId: r.integration_id,
      data: JSON.parse(r.data) as Record<string, unknown>,
    }));
  }

  async fanOut(alertId: string, integrationIds: string[], suppressed: boolean, now: string, data?: Record<string, unknown>): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const closed = await trx
        .updateTable('alerts')
        .set({ state: suppressed ? 'suppressed' : 'fanned_out', claimed_until: null, ...(data ? { data: JSON.stringify(data) } : {}) })
        .where('id', '=', alertId)
        .where('state', '=', 'new')
        .executeTakeFirst();
      // Another worker took it after our lease ran out, and closed it: its deliveries stand.
      if (closed.numUpdatedRows === 0n || suppressed || integrationIds.length === 0) return;
      const row = await trx.selectFrom('alerts').select('account_id').where('id', '=', alertId).executeTakeFirstOrThrow();
      await trx
        .insertInto('alert_deliveries')
        .values(
          integrationIds.map((integrationId) => ({
            id: crypto.randomUUID(),
            alert_id: alertId,
            integration_id: integrationId,
            account_id: row.account_id,
            status: 'pending',
            attempts: 0,
            next_attempt_at: now,
            claimed_until: null,
            created_at: now,
          })),
        )
        .execute();
    });
  }

  async leaseDeliveries(limit: number, now: string, leaseUntil: string, share: DeliveryShare = { perAccount: limit, skip: [] }): Promise<string[]> {
    // A disabled integration's deliveries wait, unattempted, until it is enabled again; an
    // unconfirmed one's (an email address changed since they were queued) until the new
    // address is confirmed, so nothing reaches an address its owner has not proved.
    const candidates = this.unleased('alert_deliveries', now)
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', now)
      .$if(share.skip.length > 0, (q) => q.where('account_id', 'not in', share.skip))
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom('integrations as i')
              .select('i.id')
              .whereRef('i.id', '=', 'alert_deliveries.integration_id')
              .where((held) => held.or([held('i.disabled_at', 'is not', null), held('i.confirmed_at', 'is', null)])),
          ),
        ),
      );
    const due = this.inTurns(candidates, 'next_attempt_at', limit, share.perAccount);
    const claimed = await this.db.updateTable('alert_deliveries').set({ claimed_until: leaseUntil }).where('id', 'in', due).returning(['id']).execute();
    return claimed.map((c) => c.id);
  }

  async recordAttempt(delivery: AttemptedDelivery, attempt: AttemptRecord): Promise<void> {
    const status = attempt.outcome === 'retrying' ? 'pending' : attempt.outcome;
    await this.db.transaction().execute(async (trx) => {
      if (delivery.integrationId !== undefined) {
        await trx
          .insertInto('delivery_attempts')
          .values({
            delivery_id: delivery.id,
            integration_id: delivery.integrationId,
            attempt: delivery.attempts + 1,
            at: attempt.at,
            duration_ms: attempt.durationMs,
            status_code: attempt.statusCode,
            error: attempt.error,
            outcome: attempt.outcome,
          })
          .execute();
      }
      await trx
        .updateTable('alert_deliveries')
        .set({ status, attempts: delivery.attempts + 1, next_attempt_at: attempt.nextAttemptAt ?? attempt.at, claimed_until: null })
        .where('id', '=', delivery.id)
        .execute();
    });
  }

  async disableFailing(integrationId: string, since: string, reason: string, at: string): Promise<DisabledIntegration | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const delivered = await trx
        .selectFrom('delivery_attempts')
        .select('id')
        .where('integration_id', '=', integrationId)
        .where('outcome', '=', 'delivered')
        .where('at', '>=', since)
        .limit(1)
        .executeTakeFirst();
      if (delivered) return undefined;
      const disabled = await trx
        .updateTable('integrations')
        .set({ disabled_at: at, disabled_reason: reason })
        .where('id', '=', integrationId)
        .where('disabled_at', 'is', null)
        .returning(['id', 'account_id', 'name', 'kind'])
        .executeTakeFirst();
      return disabled && { id: disabled.id, accountId: disabled.account_id, name: disabled.name, kind: disabled.kind as IntegrationKind, reason };
    });
  }

  async prune(before: string): Promise<void> {
    await this.db.deleteFrom('delivery_attempts').where('at', '<', before).execute();
    await this.db.deleteFrom('alert_deliveries').where('status', '<>', 'pending').where('created_at', '<', before).execute();
    await this.db
      .deleteFrom('alerts')
      .where('state', '<>', 'new')
      .where('created_at', '<', before)
      .where(({ not, exists, selectFrom }) => not(exists(selectFrom('alert_deliveries as d').select('d.id').whereRef('d.alert_id', '=', 'alerts.id'))))
      .execute();
  }

  /**
   * The ids of up to `limit` rows no live lease holds, oldest first by `order`, for an UPDATE to
   * lease; the caller adds what makes a row ready. Rows another transaction is claiming are
   * skipped where the store can (PostgreSQL), instead of waited for.
   */
  /** Rows of `table` no live claim holds, locked on PostgreSQL (skipped if another claim has them). */
  private unleased(table: 'alerts' | 'alert_deliveries', now: string) {
    return (this.db as Kysely<any>)
      .selectFrom(table)
      .select(['id', 'account_id', table === 'alerts' ? 'created_at' : 'next_attempt_at'])
      .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
      .$if(this.caps.skipLockedClaims, (q) => q.forUpdate().skipLocked());
  }

  /**
   * The ids of up to `limit` of `candidates`, taking turns between accounts: every account's
   * oldest before anyone's second, at most `perAccount` of one. So one account's backlog, however
   * old, never keeps another's first alert waiting behind it (docs/guarantees.md §10). PostgreSQL
   * allows no row lock beside a window function: `unleased` locks the rows, the turns are
   * counted around them.
   */
  private inTurns(candidates: SelectQueryBuilder<any, any, any>, order: 'created_at' | 'next_attempt_at', limit: number, perAccount: number) {
    const turns = (this.db as Kysely<any>)
      .selectFrom(candidates.as('c'))
      .select(['c.id', `c.${order} as since`, sql<number>`row_number() over (partition by c.account_id order by ${sql.ref(`c.${order}`)}, c.id)`.as('turn')]);
    return (this.db as Kysely<any>)
      .selectFrom(turns.as('t'))
      .select('t.id')
      .where('t.turn', '<=', perAccount)
      .orderBy('t.turn')
      .orderBy('t.since')
      .limit(limit);
  }

}
