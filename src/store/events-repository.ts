import { type Kysely, type Transaction } from 'kysely';
import type { EventFilter, EventPosition, EventsRepository, IngestOutcome, StoredEvent } from '../domain/events.ts';
import type { HoneypotEvent } from '../domain/honeypot-event.ts';
import type { Schema } from './schema.ts';

/** Events of one owner to store together. */
export interface IngestGroup {
  owner: { accountId: string; scope: string };
  events: HoneypotEvent[];
}

const STORED_COLUMNS = [
  'app_name',
  'app_version',
  'event_timestamp',
  'event_uuid',
  'created_by_node_id',
  'collected_method',
  'transport_type',
  'source_ip',
  'destination_ip',
  'called_number',
  'sip_method',
  'sip_user_agent',
  'sip_message',
  'event_time',
  'received_at',
] as const;

/** Events and their lookup aggregates in the SQL store. */
export class SqlEventsRepository implements EventsRepository {
  private readonly db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.db = db;
  }

  async ingest(owner: { accountId: string; scope: string }, events: HoneypotEvent[]): Promise<IngestOutcome[]> {
    const [outcomes] = await this.ingestGroups([{ owner, events }]);
    return outcomes ?? [];
  }

  /** Stores several owners' events in one transaction (one commit, one fsync). */
  async ingestGroups(groups: IngestGroup[]): Promise<IngestOutcome[][]> {
    const receivedAt = new Date().toISOString();
    return this.db.transaction().execute(async (trx) => {
      const all: IngestOutcome[][] = [];
      for (const { owner, events } of groups) {
        const outcomes: IngestOutcome[] = [];
        for (const event of events) outcomes.push(await ingestOne(trx, owner, event, receivedAt));
        all.push(outcomes);
      }
      return all;
    });
  }

  async find(accountId: string, eventUuid: string): Promise<StoredEvent | undefined> {
    return this.db
      .selectFrom('events')
      .select(STORED_COLUMNS)
      .where('account_id', '=', accountId)
      .where('event_uuid', '=', eventUuid)
      .executeTakeFirst();
  }

  async list(
    accountId: string,
    filter: EventFilter,
    after: EventPosition | undefined,
    limit: number,
  ): Promise<Array<{ event: StoredEvent; position: EventPosition }>> {
    let query = this.db.selectFrom('events').select([...STORED_COLUMNS, 'id']).where('account_id', '=', accountId);
    if (filter.since !== undefined) query = query.where('event_time', '>=', filter.since);
    if (filter.until !== undefined) query = query.where('event_time', '<', filter.until);
    if (filter.numberKey !== undefined) query = query.where('number_key', '=', filter.numberKey);
    if (filter.sourceIp !== undefined) query = query.where('source_ip', '=', filter.sourceIp);
    if (filter.sipMethod !== undefined) query = query.where('sip_method', '=', filter.sipMethod);
    if (filter.nodeId !== undefined) query = query.where('created_by_node_id', '=', filter.nodeId);
    if (filter.collectedMethod !== undefined) query = query.where('collected_method', '=', filter.collectedMethod);
    if (filter.transportType !== undefined) query = query.where('transport_type', '=', filter.transportType);
    if (after) {
      query = query.where((eb) =>
        eb.or([
          eb('event_time', '<', after.eventTime),
          eb.and([eb('event_time', '=', after.eventTime), eb('id', '<', after.id)]),
        ]),
      );
    }
    const rows = await query.orderBy('event_time', 'desc').orderBy('id', 'desc').limit(limit).execute();
    return rows.map(({ id, ...event }) => ({ event, position: { eventTime: event.event_time, id: Number(id) } }));
  }
}

async function ingestOne(
  trx: Transaction<Schema>,
  owner: { accountId: string; scope: string },
  event: HoneypotEvent,
  receivedAt: string,
): Promise<IngestOutcome> {
  const inserted = await trx
    .insertInto('events')
    .values({
      account_id: owner.accountId,
      app_name: event.app_name,
      app_version: event.app_version,
      event_timestamp: event.event_timestamp,
      event_uuid: event.event_uuid,
      created_by_node_id: event.created_by_node_id,
      collected_method: event.collected_method,
      transport_type: event.transport_type,
      source_ip: event.source_ip,
      destination_ip: event.destination_ip,
      called_number: event.called_number,
      sip_method: event.sip_method,
      sip_user_agent: event.sip_user_agent,
      sip_message: event.sip_message,
      event_time: event.event_time,
      number_key: event.number_key,
      number_written: event.number_written,
      content_hash: event.content_hash,
      received_at: receivedAt,
    })
    .onConflict((oc) => oc.columns(['account_id', 'event_uuid']).doNothing())
    .returning('id')
    .executeTakeFirst();

  if (!inserted) {
    const existing = await trx
      .selectFrom('events')
      .select('content_hash')
      .where('account_id', '=', owner.accountId)
      .where('event_uuid', '=', event.event_uuid)
      .executeTakeFirstOrThrow();
    return existing.content_hash === event.content_hash ? 'replayed' : 'conflict';
  }

  await addToAggregates(trx, owner.scope, event);
  return 'created';
}

/** Folds one new event into the scope's number and address aggregates. */
async function addToAggregates(trx: Transaction<Schema>, scope: string, event: HoneypotEvent): Promise<void> {
  const t = event.event_time;
  const key = event.number_key;

  if (key !== null) {
    const newSource = await trx
      .insertInto('number_sources')
      .values({ scope, number_key: key, source_ip: event.source_ip })
      .onConflict((oc) => oc.doNothing())
      .returning('scope')
      .executeTakeFirst();
    await trx
      .insertInto('number_stats')
      .values({ scope, number_key: key, seen_count: 1, first_seen: t, last_seen: t, source_ip_count: 1 })
      .onConflict((oc) =>
        oc.columns(['scope', 'number_key']).doUpdateSet((eb) => ({
          seen_count: eb('number_stats.seen_count', '+', 1),
          source_ip_count: eb('number_stats.source_ip_count', '+', newSource ? 1 : 0),
          first_seen: eb
            .case()
            .when('excluded.first_seen', '<', eb.ref('number_stats.first_seen'))
            .then(eb.ref('excluded.first_seen'))
            .else(eb.ref('number_stats.first_seen'))
            .end(),
          last_seen: eb
            .case()
            .when('excluded.last_seen', '>', eb.ref('number_stats.last_seen'))
            .then(eb.ref('excluded.last_seen'))
            .else(eb.ref('number_stats.last_seen'))
            .end(),
        })),
      )
      .execute();
    await trx
      .insertInto('number_methods')
      .values({ scope, number_key: key, sip_method: event.sip_method, count: 1 })
      .onConflict((oc) =>
        oc.columns(['scope', 'number_key', 'sip_method']).doUpdateSet((eb) => ({ count: eb('number_methods.count', '+', 1) })),
      )
      .execute();
    await trx
      .insertInto('number_forms')
      .values({ scope, number_key: key, written: event.number_written ?? key, count: 1 })
      .onConflict((oc) =>
        oc.columns(['scope', 'number_key', 'written']).doUpdateSet((eb) => ({ count: eb('number_forms.count', '+', 1) })),
      )
      .execute();
  }

  const newNumber =
    key !== null &&
    (await trx
      .insertInto('ip_numbers')
      .values({ scope, source_ip: event.source_ip, number_key: key })
      .onConflict((oc) => oc.doNothing())
      .returning('scope')
      .executeTakeFirst()) !== undefined;
  await trx
    .insertInto('ip_stats')
    .values({ scope, source_ip: event.source_ip, seen_count: 1, first_seen: t, last_seen: t, called_number_count: newNumber ? 1 : 0 })
    .onConflict((oc) =>
      oc.columns(['scope', 'source_ip']).doUpdateSet((eb) => ({
        seen_count: eb('ip_stats.seen_count', '+', 1),
        called_number_count: eb('ip_stats.called_number_count', '+', newNumber ? 1 : 0),
        first_seen: eb
          .case()
          .when('excluded.first_seen', '<', eb.ref('ip_stats.first_seen'))
          .then(eb.ref('excluded.first_seen'))
          .else(eb.ref('ip_stats.first_seen'))
          .end(),
        last_seen: eb
          .case()
          .when('excluded.last_seen', '>', eb.ref('ip_stats.last_seen'))
          .then(eb.ref('excluded.last_seen'))
          .else(eb.ref('ip_stats.last_seen'))
          .end(),
      })),
    )
    .execute();
  await trx
    .insertInto('ip_user_agents')
    .values({ scope, source_ip: event.source_ip, user_agent: event.sip_user_agent, count: 1 })
    .onConflict((oc) =>
      oc.columns(['scope', 'source_ip', 'user_agent']).doUpdateSet((eb) => ({ count: eb('ip_user_agents.count', '+', 1) })),
    )
    .execute();
  await trx
    .insertInto('ip_transports')
    .values({ scope, source_ip: event.source_ip, transport: event.transport_type, count: 1 })
    .onConflict((oc) =>
      oc.columns(['scope', 'source_ip', 'transport']).doUpdateSet((eb) => ({ count: eb('ip_transports.count', '+', 1) })),
    )
    .execute();
}
