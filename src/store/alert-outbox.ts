import { sql, type Kysely, type SelectQueryBuilder, type Transaction } from 'kysely';
import { numberSubject, TEST_ALERT, type AnyAlertType, type NewAlert } from '../domain/alerts.ts';
import type { IntegrationKind } from '../domain/integrations.ts';
import type { KeySealer } from '../domain/key-sealing.ts';
import type { AttemptRecord, ClaimedAlert, DeliveryShare, DisabledIntegration, DueDelivery, OutboxStore } from '../domain/outbox.ts';
import { SHARED_SCOPE } from '../domain/visibility.ts';
import type { DialectCapabilities } from './dialect.ts';
import { chunks } from './ingest-writes.ts';
import { integrationSecretContext } from './integrations-repository.ts';
import type { Schema } from './schema.ts';

/** A number counted in a scope's aggregates by an ingest (or, later, a fold) transaction. */
export interface NumberSighting {
  /** The aggregate scope: an account id, or the shared data set (never alerted: it is no one account's). */
  scope: string;
  numberKey: string;
  /** The earliest event time of the number among the events being counted. */
  firstSeen: string;
}

/**
 * The table holding one row per scope and number: a number without a row in its account's
 * scope is new to that account. The one name to change if that table is reshaped.
 */
const NUMBER_AGGREGATES = 'number_aggregates';

/** Rows per first-seen statement: 7 parameters each, well inside both stores' limits. */
const SIGHTINGS_PER_STATEMENT = 200;

/**
 * `number.first_seen` (docs/api.md §12): call it in the transaction that adds events to the
 * aggregates, BEFORE the number rows are written, with every number those events carry (or
 * only those known to be new: the existence test then drops nothing). It enqueues, in that
 * same transaction, an alert for each number with no NUMBER_AGGREGATES row yet in its account's
 * scope, for accounts with an integration subscribed to the type. One
 * statement per 200 numbers whatever the number of accounts: the existence test, the
 * subscription test and the write are one `INSERT … SELECT`. A concurrent transaction that
 * sights the same new number collides on the outbox's unique key and writes nothing.
 */
export async function enqueueFirstSeen(trx: Transaction<Schema> | Kysely<Schema>, sightings: NumberSighting[]): Promise<void> {
  const scopes = [...new Set(sightings.map((s) => s.scope).filter((scope) => scope !== SHARED_SCOPE))];
  if (scopes.length === 0) return;
  // Most folds carry numbers of accounts with no such integration: one indexed read tells,
  // and spares them the statements below (measured: most of a fold step's SQL time).
  const subscribed = new Set(
    (
      await trx
        .selectFrom('integrations')
        .select('account_id')
        .where('account_id', 'in', scopes)
        .where('confirmed_at', 'is not', null)
        .where('disabled_at', 'is', null)
        .where('alert_types', 'like', '%number.first_seen%')
        .execute()
    ).map((r) => r.account_id),
  );
  const own = sightings.filter((s) => subscribed.has(s.scope));
  const createdAt = new Date().toISOString();
  for (const chunk of chunks(own, SIGHTINGS_PER_STATEMENT)) {
    const rows = chunk.map((s) => {
      const subject = numberSubject(s.numberKey);
      const data = JSON.stringify({ phone_number: s.numberKey, first_seen: s.firstSeen });
      // Casts name the parameters' types: PostgreSQL cannot infer them in a bare SELECT list.
      return sql`select cast(${`msg_${crypto.randomUUID()}`} as text) as id, cast(${s.scope} as text) as account_id, cast(${s.numberKey} as text) as number_key,
        cast(${subject} as text) as subject, cast(${`number.first_seen|${subject}`} as text) as dedup_key, cast(${data} as text) as data, cast(${createdAt} as text) as created_at`;
    });
    await sql`insert into alerts (id, account_id, type, subject, dedup_key, data, created_at, state)
      select v.id, v.account_id, 'number.first_seen', v.subject, v.dedup_key, v.data, v.created_at, 'new'
      from (${sql.join(rows, sql` union all `)}) as v
      where exists (select 1 from integrations i where i.account_id = v.account_id and i.confirmed_at is not null and i.disabled_at is null and i.alert_types like '%number.first_seen%')
        and not exists (select 1 from ${sql.table(NUMBER_AGGREGATES)} s where s.scope = v.account_id and s.number_key = v.number_key)
      on conflict (account_id, dedup_key) do nothing`.execute(trx);
  }
}

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
 * thread (src/store/outbox-on-writer.ts): on the main thread's connection each would wait for
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
