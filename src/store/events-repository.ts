import type { Kysely, Transaction } from 'kysely';
import type { EventFilter, EventPosition, EventsRepository, IngestOutcome, StoredEvent } from '../domain/events.ts';
import { EVENT_FIELDS, eventFieldsOf } from '../domain/event-fields.ts';
import type { HoneypotEvent } from '../domain/honeypot-event.ts';
import { userAgentKey } from '../domain/lookup-aggregates.ts';
import { chunks, type CountTable, type EventRow, type IngestWrites, type SetTable, type SpanTable } from './ingest-writes.ts';
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
   * identities first (to tell new events from replays), then the new events, then one delta
   * per aggregate key with the counts summed here, whatever the number of events.
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
      const isNew = await this.writes.claimIds(
        trx,
        candidates.map(({ accountId, event }) => ({ account_id: accountId, event_uuid: event.event_uuid, content_hash: event.content_hash, event_time: event.event_time })),
      );
      const fresh = candidates.filter((_, i) => isNew[i]);
      await this.writes.insertEvents(trx, fresh.map((item) => eventRow(item, receivedAt)));
      const storedHash = await existingHashes(trx, candidates.filter((_, i) => !isNew[i]));
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
      await addToAggregates(trx, this.writes, fresh);
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
async function existingHashes(trx: Transaction<Schema>, items: Item[]): Promise<Map<string, string>> {
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
 * learn which members are new), then one delta per key and table.
 */
async function addToAggregates(trx: Transaction<Schema>, writes: IngestWrites, items: Item[]): Promise<void> {
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
    tally(agents, `${ipKey}${SEP}${userAgentKey(event.sip_user_agent)}`);
    tally(transports, `${ipKey}${SEP}${event.transport_type}`);
    if (event.number_key === null) continue;
    const numberKey = `${scope}${SEP}${event.number_key}`;
    widen(numberSpans, numberKey, event.event_time);
    tally(methods, `${numberKey}${SEP}${event.sip_method}`);
    tally(forms, `${numberKey}${SEP}${event.number_written ?? event.number_key}`);
    numberSources.add(`${numberKey}${SEP}${event.source_ip}`);
    ipNumbers.add(`${ipKey}${SEP}${event.number_key}`);
  }

  await addMembers(trx, writes, 'number_sources', numberSources, numberSpans);
  await addMembers(trx, writes, 'ip_numbers', ipNumbers, ipSpans);
  await addSpans(trx, writes, 'number_stats', numberSpans);
  await addSpans(trx, writes, 'ip_stats', ipSpans);
  await addCounts(trx, writes, 'number_methods', methods);
  await addCounts(trx, writes, 'number_forms', forms);
  await addCounts(trx, writes, 'ip_user_agents', agents);
  await addCounts(trx, writes, 'ip_transports', transports);
}

/** Adds (scope, key, member) triples to a distinct set; each new one widens its key's distinct count. */
async function addMembers(trx: Transaction<Schema>, writes: IngestWrites, table: SetTable, members: Set<string>, spans: Map<string, Span>) {
  const rows = [...members].sort().map(split3);
  const added = await writes.addMembers(trx, table, rows);
  rows.forEach(([scope, key], i) => {
    if (added[i]) spans.get(`${scope}${SEP}${key}`)!.fresh += 1;
  });
}

/**
 * Adds per-key spans to a stats table: counts add up, the first sighting is the earlier one and
 * the last the later one, and the distinct count grows by the members new to the store.
 */
async function addSpans(trx: Transaction<Schema>, writes: IngestWrites, table: SpanTable, spans: Map<string, Span>) {
  const rows = sortedEntries(spans).map(([key, s]) => {
    const [scope, value] = split2(key);
    return { scope, key: value, count: s.count, first: s.first, last: s.last, fresh: s.fresh };
  });
  await writes.addSpans(trx, table, rows);
}

/** Adds summed counts to a (scope, key, name) counting table. */
async function addCounts(trx: Transaction<Schema>, writes: IngestWrites, table: CountTable, counts: Map<string, number>) {
  const rows = sortedEntries(counts).map(([key, count]): [string, string, string, number] => [...split3(key), count]);
  await writes.addCounts(trx, table, rows);
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
