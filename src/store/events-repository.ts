import type { Kysely, Transaction } from 'kysely';
import type { EventFilter, EventPosition, EventsRepository, IngestOutcome, StoredEvent } from '../domain/events.ts';
import { EVENT_FIELDS, type HoneypotEvent } from '../domain/honeypot-event.ts';
import type { Schema } from './schema.ts';

/** Events of one owner to store together. */
export interface IngestGroup {
  owner: { accountId: string; scope: string };
  events: HoneypotEvent[];
}

/** What an owner reads back: the 13 fields as stored, the normalised instant, the commit time. */
const STORED_COLUMNS = [...EVENT_FIELDS, 'event_time', 'received_at'] as const;

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

  /**
   * Stores several owners' events in one transaction (one commit, one fsync), set-based: one
   * multi-row insert of the events, then one multi-row upsert per aggregate table with the
   * deltas summed here, whatever the number of events.
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

    // Every multi-row statement lists its keys in one global order, so that concurrent
    // transactions (PostgreSQL) take row locks in the same order and never deadlock.
    candidates.sort((a, b) => compare(identity(a.accountId, a.event.event_uuid), identity(b.accountId, b.event.event_uuid)));

    return this.db.transaction().execute(async (trx) => {
      const inserted = new Set<string>();
      for (const chunk of chunks(candidates, 500)) {
        const rows = await trx
          .insertInto('event_ids')
          .values(chunk.map(({ accountId, event }) => ({ account_id: accountId, event_uuid: event.event_uuid, content_hash: event.content_hash, event_time: event.event_time })))
          .onConflict((oc) => oc.columns(['account_id', 'event_uuid']).doNothing())
          .returning(['account_id', 'event_uuid'])
          .execute();
        for (const row of rows) inserted.add(identity(row.account_id, row.event_uuid));
      }
      const fresh = candidates.filter((c) => inserted.has(identity(c.accountId, c.event.event_uuid)));
      for (const chunk of chunks(fresh, 500)) {
        await trx.insertInto('events').values(chunk.map((item) => eventRow(item, receivedAt))).execute();
      }
      const storedHash = await existingHashes(trx, candidates.filter((c) => !inserted.has(identity(c.accountId, c.event.event_uuid))));
      for (const item of candidates) {
        const key = identity(item.accountId, item.event.event_uuid);
        if (inserted.has(key)) {
          storedHash.set(key, item.event.content_hash);
          outcomes[item.g]![item.e] = 'created';
        } else {
          outcomes[item.g]![item.e] = storedHash.get(key) === item.event.content_hash ? 'replayed' : 'conflict';
        }
      }
      for (const { item, of } of repeats) {
        const stored = storedHash.get(identity(of.accountId, of.event.event_uuid));
        outcomes[item.g]![item.e] = stored === item.event.content_hash ? 'replayed' : 'conflict';
      }
      await addToAggregates(trx, fresh);
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

/** Keys of a map in the global order (see ingestGroups). */
function sortedEntries<V>(map: Map<string, V>): Array<[string, V]> {
  return [...map].sort(([a], [b]) => compare(a, b));
}

/** Splits rows so that no statement exceeds the stores' bound-parameter limits. */
function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

function eventRow(item: Item, receivedAt: string) {
  const { event } = item;
  return {
    account_id: item.accountId,
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
  };
}

/** Content hashes of already stored events, by identity. */
async function existingHashes(trx: Transaction<Schema>, items: Item[]): Promise<Map<string, string>> {
  const hashes = new Map<string, string>();
  const byAccount = new Map<string, string[]>();
  for (const item of items) byAccount.set(item.accountId, [...(byAccount.get(item.accountId) ?? []), item.event.event_uuid]);
  for (const [accountId, uuids] of byAccount) {
    for (const chunk of chunks(uuids, 500)) {
      const rows = await trx
        .selectFrom('event_ids')
        .select(['event_uuid', 'content_hash'])
        .where('account_id', '=', accountId)
        .where('event_uuid', 'in', chunk)
        .execute();
      for (const row of rows) hashes.set(identity(accountId, row.event_uuid), row.content_hash);
    }
  }
  return hashes;
}

/** Per-key sums of a set of new events, ready to add to an aggregate row. */
interface Span {
  count: number;
  first: string;
  last: string;
  /** Members of the key's distinct set (source addresses, numbers) that are new to the store. */
  fresh: number;
}

function tally(counts: Map<string, number>, key: string) {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

const SEP = '\u0000';

/**
 * Folds new events into the scope's number and address aggregates: distinct sets first (to
 * learn which members are new), then one upsert per table with every key's summed delta.
 */
async function addToAggregates(trx: Transaction<Schema>, items: Item[]): Promise<void> {
  if (items.length === 0) return;
  const numberSpans = new Map<string, Span>();
  const ipSpans = new Map<string, Span>();
  const methods = new Map<string, number>();
  const forms = new Map<string, number>();
  const agents = new Map<string, number>();
  const transports = new Map<string, number>();
  const numberSources = new Set<string>();
  const ipNumbers = new Set<string>();

  const widen = (spans: Map<string, Span>, key: string, time: string) => {
    const span = spans.get(key);
    if (!span) spans.set(key, { count: 1, first: time, last: time, fresh: 0 });
    else {
      span.count += 1;
      if (time < span.first) span.first = time;
      if (time > span.last) span.last = time;
    }
  };
  for (const { scope, event } of items) {
    const ipKey = `${scope}${SEP}${event.source_ip}`;
    widen(ipSpans, ipKey, event.event_time);
    tally(agents, `${ipKey}${SEP}${event.sip_user_agent}`);
    tally(transports, `${ipKey}${SEP}${event.transport_type}`);
    if (event.number_key === null) continue;
    const numberKey = `${scope}${SEP}${event.number_key}`;
    widen(numberSpans, numberKey, event.event_time);
    tally(methods, `${numberKey}${SEP}${event.sip_method}`);
    tally(forms, `${numberKey}${SEP}${event.number_written ?? event.number_key}`);
    numberSources.add(`${numberKey}${SEP}${event.source_ip}`);
    ipNumbers.add(`${ipKey}${SEP}${event.number_key}`);
  }

  for (const chunk of chunks([...numberSources].sort().map(split3), 500)) {
    const added = await trx
      .insertInto('number_sources')
      .values(chunk.map(([scope, number_key, source_ip]) => ({ scope, number_key, source_ip })))
      .onConflict((oc) => oc.doNothing())
      .returning(['scope', 'number_key'])
      .execute();
    for (const row of added) numberSpans.get(`${row.scope}${SEP}${row.number_key}`)!.fresh += 1;
  }
  for (const chunk of chunks([...ipNumbers].sort().map(split3), 500)) {
    const added = await trx
      .insertInto('ip_numbers')
      .values(chunk.map(([scope, source_ip, number_key]) => ({ scope, source_ip, number_key })))
      .onConflict((oc) => oc.doNothing())
      .returning(['scope', 'source_ip'])
      .execute();
    for (const row of added) ipSpans.get(`${row.scope}${SEP}${row.source_ip}`)!.fresh += 1;
  }

  await addSpans(trx, 'number_stats', 'number_key', 'source_ip_count', numberSpans);
  await addSpans(trx, 'ip_stats', 'source_ip', 'called_number_count', ipSpans);
  await addCounts(trx, 'number_methods', ['scope', 'number_key', 'sip_method'], methods);
  await addCounts(trx, 'number_forms', ['scope', 'number_key', 'written'], forms);
  await addCounts(trx, 'ip_user_agents', ['scope', 'source_ip', 'user_agent'], agents);
  await addCounts(trx, 'ip_transports', ['scope', 'source_ip', 'transport'], transports);
}

/**
 * Adds per-key spans to a stats table: counts add up, the first sighting is the earlier one and
 * the last the later one, and the distinct count grows by the members new to the store.
 */
async function addSpans(
  trx: Transaction<Schema>,
  table: 'number_stats' | 'ip_stats',
  keyColumn: 'number_key' | 'source_ip',
  distinctColumn: 'source_ip_count' | 'called_number_count',
  spans: Map<string, Span>,
) {
  // One builder for both tables; Kysely cannot type a table chosen at run time.
  const db = trx as unknown as Kysely<any>;
  for (const chunk of chunks(sortedEntries(spans), 500)) {
    await db
      .insertInto(table)
      .values(
        chunk.map(([key, s]) => {
          const [scope, value] = split2(key);
          return { scope, [keyColumn]: value, seen_count: s.count, first_seen: s.first, last_seen: s.last, [distinctColumn]: s.fresh };
        }),
      )
      .onConflict((oc) =>
        oc.columns(['scope', keyColumn]).doUpdateSet((eb) => ({
          seen_count: eb(`${table}.seen_count`, '+', eb.ref('excluded.seen_count')),
          [distinctColumn]: eb(`${table}.${distinctColumn}`, '+', eb.ref(`excluded.${distinctColumn}`)),
          first_seen: eb.case().when('excluded.first_seen', '<', eb.ref(`${table}.first_seen`)).then(eb.ref('excluded.first_seen')).else(eb.ref(`${table}.first_seen`)).end(),
          last_seen: eb.case().when('excluded.last_seen', '>', eb.ref(`${table}.last_seen`)).then(eb.ref('excluded.last_seen')).else(eb.ref(`${table}.last_seen`)).end(),
        })),
      )
      .execute();
  }
}

type CountTable = 'number_methods' | 'number_forms' | 'ip_user_agents' | 'ip_transports';

/** Adds summed counts to a (scope, key, name) counting table. */
async function addCounts(trx: Transaction<Schema>, table: CountTable, columns: [string, string, string], counts: Map<string, number>) {
  for (const chunk of chunks(sortedEntries(counts), 500)) {
    const rows = chunk.map(([key, count]) => {
      const [a, b, c] = split3(key);
      return { [columns[0]]: a, [columns[1]]: b, [columns[2]]: c, count };
    });
    await trx
      .insertInto(table)
      .values(rows as never)
      .onConflict((oc) => oc.columns(columns as never).doUpdateSet((eb) => ({ count: eb(`${table}.count` as never, '+', eb.ref('excluded.count' as never)) }) as never))
      .execute();
  }
}

function split2(key: string): [string, string] {
  const i = key.indexOf(SEP);
  return [key.slice(0, i), key.slice(i + 1)];
}

/** Splits a three-part key; the last part may itself contain anything but the separator's first use. */
function split3(key: string): [string, string, string] {
  const i = key.indexOf(SEP);
  const j = key.indexOf(SEP, i + 1);
  return [key.slice(0, i), key.slice(i + 1, j), key.slice(j + 1)];
}
