import { sql, type Kysely } from 'kysely';
import type { AccountActivityRepository, ActivityColumn, CountedValue, NodeBreakdownRow, NodeTotals } from '../../domain/accounts/account-activity.ts';
import { ABSENT_MARKER } from '../../domain/events/event-fields.ts';
import type { Schema } from '../schema.ts';

/**
 * The dashboard's counts over one account's events. Each query is bounded by `account_id`
 * first, on the indexes that begin with it (migration 001); they read the account's events in
 * the period asked, so they cost what the account holds, never what the store holds.
 */
export class SqlAccountActivityRepository implements AccountActivityRepository {
  private readonly db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.db = db;
  }

  async nodeTotals(accountId: string): Promise<NodeTotals[]> {
    const rows = await this.db
      .selectFrom('events')
      .select((eb) => ['created_by_node_id', eb.fn.min('event_time').as('first_event'), eb.fn.max('event_time').as('last_event'), eb.fn.countAll().as('events')])
      .where('account_id', '=', accountId)
      .groupBy('created_by_node_id')
      .execute();
    return rows.map((r) => ({ node_id: r.created_by_node_id, first_event: String(r.first_event), last_event: String(r.last_event), events: Number(r.events) }));
  }

  async nodeBreakdown(accountId: string, column: 'sip_method' | 'transport_type'): Promise<NodeBreakdownRow[]> {
    const rows = await this.db
      .selectFrom('events')
      .select((eb) => ['created_by_node_id', eb.ref(column).as('value'), eb.fn.countAll().as('n')])
      .where('account_id', '=', accountId)
      .groupBy(['created_by_node_id', column])
      .orderBy('n', 'desc')
      .execute();
    return rows.map((r) => ({ node_id: r.created_by_node_id, value: String(r.value), count: Number(r.n) }));
  }

  async eventsOverTime(accountId: string, since: string, bucket: 'hour' | 'day'): Promise<CountedValue[]> {
    // event_time is `YYYY-MM-DDTHH:MM:SS…Z` text: its first 13 characters name the hour, 10 the day.
    const length = bucket === 'hour' ? 13 : 10;
    const slot = sql<string>`substr(event_time, 1, ${sql.lit(length)})`;
    const rows = await this.db
      .selectFrom('events')
      .select((eb) => [slot.as('slot'), eb.fn.countAll().as('n')])
      .where('account_id', '=', accountId)
      .where('event_time', '>=', since)
      .groupBy(slot)
      .orderBy(slot)
      .execute();
    return rows.map((r) => ({ value: r.slot, count: Number(r.n) }));
  }

  async nodeNames(accountId: string): Promise<Map<string, string>> {
    const rows = await this.db.selectFrom('node_names').select(['node_id', 'name']).where('account_id', '=', accountId).execute();
    return new Map(rows.map((r) => [r.node_id, r.name]));
  }

  async setNodeName(accountId: string, nodeId: string, name: string | null, at: string): Promise<void> {
    if (name === null) {
      await this.db.deleteFrom('node_names').where('account_id', '=', accountId).where('node_id', '=', nodeId).execute();
      return;
    }
    await this.db
      .insertInto('node_names')
      .values({ account_id: accountId, node_id: nodeId, name, named_at: at })
      .onConflict((oc) => oc.columns(['account_id', 'node_id']).doUpdateSet({ name, named_at: at }))
      .execute();
  }

  async top(accountId: string, since: string, column: ActivityColumn, limit: number): Promise<CountedValue[]> {
    let query = this.db
      .selectFrom('events')
      .select((eb) => [eb.ref(column).as('value'), eb.fn.countAll().as('n')])
      .where('account_id', '=', accountId)
      .where('event_time', '>=', since)
      .groupBy(column)
      .orderBy('n', 'desc')
      .orderBy(column)
      .limit(limit);
    // Events without a usable called number have no key; they belong to no number.
    if (column === 'number_key') query = query.where('number_key', 'is not', null);
    // Nor does an empty or NOT_FOUND user agent name a program (docs/api.md §5).
    if (column === 'sip_user_agent') query = query.where('sip_user_agent', 'not in', ['', ABSENT_MARKER]);
    return (await query.execute()).map((r) => ({ value: String(r.value), count: Number(r.n) }));
  }
}
