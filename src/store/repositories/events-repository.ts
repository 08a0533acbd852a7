import { sql, type ExpressionBuilder, type Kysely, type Transaction } from 'kysely';
import type { EventDirection, EventFilter, EventPosition, EventsRepository, IngestOutcome, StoredEvent } from '../../domain/events/events.ts';
import { EVENT_FIELDS, eventFieldsOf } from '../../domain/events/event-fields.ts';
import type { HoneypotEvent } from '../../domain/events/honeypot-event.ts';
import { chunks, type EventRow, type IngestWrites } from '../fold/ingest-writes.ts';
import type { Schema } from '../schema.ts';

/** Events of one owner to store together. */
export interface IngestGroup {
  owner: { accountId: string; scope: string };
  events: HoneypotEvent[];
}

/** What an owner reads back: the 13 fields as stored, the normalised instant, the commit time. */
const STORED_COLUMNS = [...EVENT_FIELDS, 'event_time', 'received_at'] as const;

/**
 * Events in the SQL store. An ingest stores the events alone; their lookup aggregates are
 * derived data, folded in after the commit (src/store/fold/aggregate-fold.ts).
 */
export class SqlEventsRepository implements EventsRepository {
  private readonly db: Kysely<Schema>;
  private readonly writes: IngestWrites;

  constructor(db: Kysely<Schema>, writes: IngestWrites) {
    this.db = db;
    this.writes = writes;
  }

  async ingest(owner: { accountId: string; scope: string }, events: HoneypotEvent[]): Promise<IngestOutcome[]> {
    const [outcomes] = await this.ingestGroups([{ owner, events }]);
    return outcomes ?? [];
  }

  /**
   * Stores several owners' events in one transaction (one commit, one fsync), set-based: the
   * identities first (to tell new events from replays), then the new events.
   */
  async ingestGroups(groups: IngestGroup[]): Promise<IngestOutcome[][]> {
    const receivedAt = new Date().toISOString();
    const outcomes: IngestOutcome[][] = groups.map((g) => new Array<IngestOutcome>(g.events.length));
    // The first occurrence of an (account, uuid) is stored or compared with the store; later
    // occurrences in the same call are compared with whatever ends up stored.
    const first = new Map<string, Item>();
    const candidates: Item[] = [];
    const repeats: Array<{ item: Item; of: Item }> = [];
    groups.forEach((group, g) =>
      group.events.forEach((event, e) => {
        const item: Item = { g, e, accountId: group.owner.accountId, scope: group.owner.scope, event };
        const key = identity(item.accountId, event.event_uuid);
        const earlier = first.get(key);
        if (earlier) repeats.push({ item, of: earlier });
        else {
          first.set(key, item);
          candidates.push(item);
        }
      }),
    );

    // Every statement takes its keys in one global order, so that concurrent transactions
    // (PostgreSQL) take row locks in the same order and never deadlock.
    candidates.sort((a, b) => compare(identity(a.accountId, a.event.event_uuid), identity(b.accountId, b.event.event_uuid)));

    return this.db.transaction().execute(async (trx) => {
      await this.writes.beginIngest(trx);
      const isNew = await this.writes.storeNew(trx, candidates.map((item) => eventRow(item, receivedAt)));
      const storedHash = await existingHashes(trx, this.writes, candidates.filter((_, i) => !isNew[i]));
      candidates.forEach((item, i) => {
        const key = identity(item.accountId, item.event.event_uuid);
        if (isNew[i]) {
          storedHash.set(key, item.event.content_hash);
          outcomes[item.g]![item.e] = 'created';
        } else {
          outcomes[item.g]![item.e] = storedHash.get(key) === item.event.content_hash ? 'replayed' : 'conflict';
        }
      });
      for (const { item, of } of repeats) {
        const stored = storedHash.get(identity(of.accountId, of.event.event_uuid));
        outcomes[item.g]![item.e] = stored === item.event.content_hash ? 'replayed' : 'conflict';
      }
      return outcomes;
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
    direction: EventDirection = 'older',
  ): Promise<Array<{ event: StoredEvent; position: EventPosition }>> {
    let query = this.filtered(accountId, filter).select([...STORED_COLUMNS, 'id']);
    if (after) query = query.where((eb) => beyond(eb, after, direction === 'older' ? '<' : '>'));
    const order = direction === 'older' ? 'desc' : 'asc';
    const rows = await query.orderBy('event_time', order).orderBy('id', order).limit(limit).execute();
    return rows.map(({ id, ...event }) => ({ event, position: { eventTime: event.event_time, id: Number(id) } }));
  }

  async countUpTo(accountId: string, filter: EventFilter, cap: number, newerThan?: EventPosition): Promise<number> {
    // A count that stops at cap + 1 rows: it costs at most that many index entries, whatever the account holds.
    let matching = this.filtered(accountId, filter).select(sql<number>`1`.as('one'));
    if (newerThan) matching = matching.where((eb) => beyond(eb, newerThan, '>'));
    const row = await this.db.selectFrom(matching.limit(cap + 1).as('m')).select((eb) => eb.fn.countAll<number | string | bigint>().as('n')).executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async sourceAddresses(accountId: string, filter: EventFilter, cap: number, newerThan?: EventPosition): Promise<string[]> {
    let query = this.filtered(accountId, filter).select('source_ip');
    if (newerThan) query = query.where((eb) => beyond(eb, newerThan, '>'));
    return (await query.limit(cap).execute()).map((r) => r.source_ip);
  }

  /** The account's events the filter keeps. */
  private filtered(accountId: string, filter: EventFilter) {
    let query = this.db.selectFrom('events').where('account_id', '=', accountId);
    if (filter.since !== undefined) query = query.where('event_time', '>=', filter.since);
    if (filter.until !== undefined) query = query.where('event_time', '<', filter.until);
    if (filter.numberKey !== undefined) query = query.where('number_key', '=', filter.numberKey);
    // Such events have no key, so the account's number index narrows them to the keyless ones.
    if (filter.calledNumberUnkeyed !== undefined) {
      query = query.where('number_key', 'is', null).where('called_number', '=', filter.calledNumberUnkeyed);
    }
    if (filter.sourceIp !== undefined) query = query.where('source_ip', '=', filter.sourceIp);
    if (filter.sourceIpPrefix) query = query.where(sql<string>`substr(source_ip, 1, ${filter.sourceIpPrefix.length})`, '=', filter.sourceIpPrefix);
    if (filter.sipMethod !== undefined) query = query.where('sip_method', '=', filter.sipMethod);
    if (filter.nodeId !== undefined) query = query.where('created_by_node_id', '=', filter.nodeId);
    if (filter.collectedMethod !== undefined) query = query.where('collected_method', '=', filter.collectedMethod);
    if (filter.transportType !== undefined) query = query.where('transport_type', '=', filter.transportType);
    return query;
  }
}

/** Events past a position in (event_time, id) order: older (`<`) or newer (`>`). */
function beyond(eb: ExpressionBuilder<Schema, 'events'>, position: EventPosition, op: '<' | '>') {
  return eb.or([eb('event_time', op, position.eventTime), eb.and([eb('event_time', '=', position.eventTime), eb('id', op, position.id)])]);
}

/** One event on its way into the store, with where it came from in the call. */
interface Item {
  g: number;
  e: number;
  accountId: string;
  scope: string;
  event: HoneypotEvent;
}

const identity = (accountId: string, eventUuid: string) => `${accountId}\u0000${eventUuid}`;

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function eventRow(item: Item, receivedAt: string): EventRow {
  const { event } = item;
  return {
    account_id: item.accountId,
    ...eventFieldsOf(event),
    event_time: event.event_time,
    number_key: event.number_key,
    number_written: event.number_written,
    content_hash: event.content_hash,
    received_at: receivedAt,
  };
}

/** Content hashes of already stored events, by identity. */
async function existingHashes(trx: Transaction<Schema>, writes: IngestWrites, items: Item[]): Promise<Map<string, string>> {
  const hashes = new Map<string, string>();
  const byAccount = new Map<string, string[]>();
  for (const item of items) {
    // Appended in place: copying the list per item was quadratic, 20,000 replays of an import batch took seconds.
    const uuids = byAccount.get(item.accountId);
    if (uuids) uuids.push(item.event.event_uuid);
    else byAccount.set(item.accountId, [item.event.event_uuid]);
  }
  for (const [accountId, uuids] of byAccount) {
    for (const chunk of chunks(uuids)) {
      const rows = await writes.storedHashes(trx, accountId, chunk);
      for (const row of rows) hashes.set(identity(accountId, row.event_uuid), row.content_hash);
    }
  }
  return hashes;
}
