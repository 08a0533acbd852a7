import { sql, type Expression, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import { ABSENT_MARKER } from '../../domain/events/event-fields.ts';
import { KEPT_NAMES } from '../../domain/lookups/kept-counts.ts';
import { USER_AGENT_KEPT_CHARACTERS } from '../../domain/lookups/lookup-aggregates.ts';
import { numberHash } from '../../domain/lookups/number-hash.ts';
import { RANGE_DIGITS, RANGE_MAX_DIGITS, RANGE_MIN_DIGITS } from '../../domain/number-range.ts';
import { SHARED_SCOPE } from '../../domain/visibility.ts';
import { refoldAll, refoldSome } from './aggregate-fold.ts';
import type { DialectCapabilities } from '../dialect.ts';
import { chunks } from './ingest-writes.ts';
import type { Schema } from '../schema.ts';

/** Every table the lookup aggregates are kept in. */
export const AGGREGATE_TABLES = ['number_aggregates', 'number_sources', 'ip_aggregates', 'ip_numbers', 'number_hashes', 'range_aggregates', 'range_sources', 'range_nodes'] as const;

/**
 * The range of a `number_key` column in SQL, NULL for a key in none: rangeOfNumberKey
 * (src/domain/number-range.ts) in text both stores run alike (test/store/number-ranges.test.ts
 * holds the two to the same answers).
 */
export function rangeOfKeySql(key: RawBuilder<unknown>): RawBuilder<string | null> {
  return sql<string | null>`case when substr(${key}, 1, 1) = '+' and substr(${key}, 2, 1) <> '0'
    and length(${key}) between ${sql.lit(RANGE_MIN_DIGITS + 1)} and ${sql.lit(RANGE_MAX_DIGITS + 1)}
    and ltrim(substr(${key}, 2), '0123456789') = '' then substr(${key}, 1, length(${key}) - ${sql.lit(RANGE_DIGITS)}) end`;
}

/**
 * Recomputes every lookup aggregate from the stored events, in one transaction. Needed after
 * events are removed in bulk (retention), after a bulk load, or to move an account's past
 * events into or out of the shared data set after its `trusted` flag changed: each event
 * counts in the scope its account has now. The fold's position moves past every event counted;
 * on PostgreSQL intake waits for the rebuild to commit.
 *
 * A map of named counts keeps its KEPT_NAMES most seen names here, exactly counted; the fold
 * keeps them by the space-saving rule, which agrees whenever a key has at most that many names.
 */
export async function rebuildAggregates(db: Kysely<Schema>, caps: DialectCapabilities): Promise<void> {
  await db.transaction().execute((trx) =>
    refoldAll(trx, caps, async () => {
      await keepPublished(trx);
      for (const table of AGGREGATE_TABLES) await trx.deleteFrom(table).execute();
      const scoped = sql`(select case when a.trusted = 1 then ${SHARED_SCOPE} else e.account_id end as scope, e.*
        from events e join accounts a on a.account_id = e.account_id)`;
      await insertAggregates(trx, caps, scoped, scoped);
      await insertRanges(trx, scoped);
      const now = new Date().toISOString();
      await logSharedRanges(trx, now);
      await restorePublished(trx, now);
      await addNumberHashes(trx);
    }),
  );
}

/**
 * The two kinds of key a removal of events touches: the events' column naming it, the temporary
 * table listing the touched keys (one `k` column), and the one holding those keys' kept events,
 * each with the scope it counts in.
 */
const TOUCHED = {
  numbers: { column: 'number_key', keys: 'retired_numbers', events: 'kept_number_events' },
  addresses: { column: 'source_ip', keys: 'retired_addresses', events: 'kept_address_events' },
} as const;
const KINDS = ['numbers', 'addresses'] as const;

/** How many keys of each kind a removal of events touched, whose aggregates were recomputed. */
export interface KeysRecomputed {
  numbers: number;
  addresses: number;
}

/**
 * Removes events (`remove`) and recomputes, in the same transaction, the aggregates of only the
 * numbers and addresses they counted in: `removed` is a query selecting the `number_key` and
 * `source_ip` of the events about to go. A crash loses both or neither. The fold waits for it
 * (refoldSome), and so does intake once the fold lags (folder.ts holds it), but no longer than
 * the touched keys take: each is recomputed as a rebuild computes it, from the events kept that
 * the fold has counted, so a retention pass costs what those keys cost, not what the whole store
 * does (a rebuild of 10 million events took 18–36 minutes on PostgreSQL here, an hour's pass
 * 83–118 s: docs/operations.md, Retention).
 */
export async function removeEventsAndRecompute(
  trx: Transaction<Schema>,
  caps: DialectCapabilities,
  removed: RawBuilder<unknown>,
  remove: () => Promise<void>,
): Promise<KeysRecomputed> {
  const touched: KeysRecomputed = { numbers: 0, addresses: 0 };
  await refoldSome(trx, caps, async (through) => {
    for (const kind of KINDS) {
      const { column, keys } = TOUCHED[kind];
      const table = sql.table(keys);
      await sql`create temporary table ${table} (k text primary key)`.execute(trx);
      await sql`insert into ${table} (k) select distinct ${sql.ref(column)} from ${removed} r where ${sql.ref(column)} is not null`.execute(trx);
      touched[kind] = Number((await sql<{ n: number | string }>`select count(*) as n from ${table}`.execute(trx)).rows[0]?.n ?? 0);
      // PostgreSQL's planner knows nothing of a temporary table's size until it is analyzed.
      if (caps.concurrentWriters) await sql`analyze ${table}`.execute(trx);
    }
    // The ranges of the touched numbers, recomputed whole: a range's distinct counts are of
    // all its numbers' events, and only its own can say what is left once some are gone.
    await sql`create temporary table retired_ranges (k text primary key)`.execute(trx);
    await sql`insert into retired_ranges (k) select distinct r from (select ${rangeOfKeySql(sql`k`)} as r from ${sql.table(TOUCHED.numbers.keys)}) t where r is not null`.execute(trx);
    if (caps.concurrentWriters) await sql`analyze retired_ranges`.execute(trx);
    await remove();
    const retiredNumbers = sql<string>`(select k from ${sql.table(TOUCHED.numbers.keys)})`;
    const retiredAddresses = sql<string>`(select k from ${sql.table(TOUCHED.addresses.keys)})`;
    await keepPublished(trx, { numbers: retiredNumbers, addresses: retiredAddresses });
    await trx.deleteFrom('number_aggregates').where('number_key', 'in', retiredNumbers).execute();
    await trx.deleteFrom('number_sources').where('number_key', 'in', retiredNumbers).execute();
    await trx.deleteFrom('number_hashes').where('number_key', 'in', retiredNumbers).execute();
    await trx.deleteFrom('ip_aggregates').where('source_ip', 'in', retiredAddresses).execute();
    await trx.deleteFrom('ip_numbers').where('source_ip', 'in', retiredAddresses).execute();
    // The kept events of the touched keys, read once for each kind of key: the statements that
    // recompute them read these ten times over (at 10 million events on PostgreSQL, reading them
    // from the events each time took 118 s for an hour's pass). Through the events' (account,
    // number) and (account, address) indexes where the planner finds it cheaper: the keys first
    // (SQLite takes a CROSS JOIN's tables in the order written).
    for (const kind of KINDS) {
      const { column, keys, events } = TOUCHED[kind];
      await sql`create temporary table ${sql.table(events)} as
        select case when a.trusted = 1 then ${SHARED_SCOPE} else e.account_id end as scope, e.*
        from ${sql.table(keys)} r cross join accounts a
        join events e on e.account_id = a.account_id and e.${sql.ref(column)} = r.k
        where e.id <= ${through}`.execute(trx);
      if (caps.concurrentWriters) await sql`analyze ${sql.table(events)}`.execute(trx);
    }
    await insertAggregates(trx, caps, sql.table(TOUCHED.numbers.events), sql.table(TOUCHED.addresses.events));
    await restorePublished(trx, new Date().toISOString(), { numbers: retiredNumbers, addresses: retiredAddresses });
    await addNumberHashes(trx, retiredNumbers);
    await recomputeRanges(trx, caps, through);
    for (const { keys, events } of Object.values(TOUCHED)) for (const table of [keys, events]) await sql`drop table ${sql.table(table)}`.execute(trx);
  });
  return touched;
}

/**
 * Inserts the aggregate rows of the events `byNumber` gives (number rows and their distinct
 * sets) and of those `byAddress` gives (address rows and theirs): each a query of the events
 * with the `scope` they count in (a subquery or a table).
 */
async function insertAggregates(trx: Transaction<Schema>, caps: DialectCapabilities, byNumber: Expression<unknown>, byAddress: Expression<unknown>): Promise<void> {
  // Inlined, not bound: PostgreSQL matches the select list to GROUP BY by expression text.
  const agent = sql`substr(sip_user_agent, 1, ${sql.lit(USER_AGENT_KEPT_CHARACTERS)})`;
  const numbered = sql`${byNumber} s where number_key is not null`;
  const addressed = sql`${byAddress} s`;
  // An empty or NOT_FOUND user agent names no program (docs/api.md §5), as in the fold.
  const named = sql`${byAddress} s where sip_user_agent not in ('', ${sql.lit(ABSENT_MARKER)})`;
  const statements = [
    sql`insert into number_aggregates (scope, number_key, seen_count, first_seen, last_seen, source_ip_count, sip_methods, forms, nodes)
        select t.scope, t.k, t.n, t.first_seen, t.last_seen, t.d, m.counts, f.counts, o.counts
        from (select scope, number_key as k, count(*) as n, min(event_time) as first_seen, max(event_time) as last_seen, count(distinct source_ip) as d
              from ${numbered} group by scope, number_key) t
        join ${namedCounts(caps, numbered, sql`number_key`, sql`sip_method`)} m on m.scope = t.scope and m.k = t.k
        join ${namedCounts(caps, numbered, sql`number_key`, sql`coalesce(number_written, number_key)`)} f on f.scope = t.scope and f.k = t.k
        join ${namedCounts(caps, numbered, sql`number_key`, sql`created_by_node_id`)} o on o.scope = t.scope and o.k = t.k`,
    sql`insert into number_sources (scope, number_key, source_ip) select distinct scope, number_key, source_ip from ${numbered}`,
    sql`insert into ip_aggregates (scope, source_ip, seen_count, first_seen, last_seen, called_number_count, user_agents, transports, nodes)
        select t.scope, t.k, t.n, t.first_seen, t.last_seen, t.d, coalesce(u.counts, '{}'), r.counts, o.counts
        from (select scope, source_ip as k, count(*) as n, min(event_time) as first_seen, max(event_time) as last_seen, count(distinct number_key) as d
              from ${addressed} group by scope, source_ip) t
        left join ${namedCounts(caps, named, sql`source_ip`, agent)} u on u.scope = t.scope and u.k = t.k
        join ${namedCounts(caps, addressed, sql`source_ip`, sql`transport_type`)} r on r.scope = t.scope and r.k = t.k
        join ${namedCounts(caps, addressed, sql`source_ip`, sql`created_by_node_id`)} o on o.scope = t.scope and o.k = t.k`,
    // Only accounts' own scopes keep their pairs by address too (distinct-sets.ts).
    sql`insert into ip_numbers (scope, source_ip, number_key) select distinct scope, source_ip, number_key from ${byAddress} s where number_key is not null and scope <> ${SHARED_SCOPE}`,
  ];
  for (const statement of statements) await statement.execute(trx);
}

/**
 * Inserts the number ranges' rows and sets (migration 027) of the events `from` gives, each with
 * the `scope` it counts in: what the fold adds up, counted at once.
 */
async function insertRanges(trx: Transaction<Schema>, from: Expression<unknown>): Promise<void> {
  const ranged = sql`(select s.*, ${rangeOfKeySql(sql`s.number_key`)} as range_prefix from ${from} s where s.number_key is not null) r where range_prefix is not null`;
  await sql`insert into range_aggregates (scope, range_prefix, seen_count, first_seen, last_seen, number_count, source_ip_count, node_count, invite_count)
      select scope, range_prefix, count(*), min(event_time), max(event_time), count(distinct number_key), count(distinct source_ip),
        count(distinct created_by_node_id), sum(case when sip_method = 'INVITE' then 1 else 0 end)
      from ${ranged} group by scope, range_prefix`.execute(trx);
  await sql`insert into range_sources (scope, range_prefix, source_ip) select distinct scope, range_prefix, source_ip from ${ranged}`.execute(trx);
  await sql`insert into range_nodes (scope, range_prefix, node_id) select distinct scope, range_prefix, created_by_node_id from ${ranged}`.execute(trx);
}

/**
 * Recomputes the ranges in `retired_ranges` from the events kept that the fold has counted (up to
 * `through`). A range's numbers are its prefix and two digits: the 100 candidate keys of each are
 * looked up through the events' (account, number) index, as the touched numbers are, rather than
 * by reading every number row for those whose range it is.
 */
async function recomputeRanges(trx: Transaction<Schema>, caps: DialectCapabilities, through: number): Promise<void> {
  for (const table of ['range_aggregates', 'range_sources', 'range_nodes'] as const) {
    await trx.deleteFrom(table).where('range_prefix', 'in', sql<string>`(select k from retired_ranges)`).execute();
  }
  await sql`create temporary table range_digits (d text primary key)`.execute(trx);
  const digits = Array.from({ length: 10 ** RANGE_DIGITS }, (_, i) => String(i).padStart(RANGE_DIGITS, '0'));
  await sql`insert into range_digits (d) values ${sql.join(digits.map((d) => sql`(${d})`))}`.execute(trx);
  await sql`create temporary table range_candidates as select r.k || d.d as k from retired_ranges r cross join range_digits d`.execute(trx);
  if (caps.concurrentWriters) await sql`analyze range_candidates`.execute(trx);
  await sql`create temporary table kept_range_events as
    select case when a.trusted = 1 then ${SHARED_SCOPE} else e.account_id end as scope, e.*
    from range_candidates c cross join accounts a
    join events e on e.account_id = a.account_id and e.number_key = c.k
    where e.id <= ${through}`.execute(trx);
  await insertRanges(trx, sql.table('kept_range_events'));
  await logSharedRanges(trx, new Date().toISOString(), sql<string>`(select k from retired_ranges)`);
  for (const table of ['range_digits', 'range_candidates', 'kept_range_events', 'retired_ranges']) await sql`drop table ${sql.table(table)}`.execute(trx);
}

/**
 * Logs the shared ranges as changed now (migration 024), every one or those `only` selects, as
 * the fold logs the ranges it adds to: the publisher of the `number-ranges` TAXII collection reads
 * them. A range a removal emptied has no row left: the publisher's hourly sweep revokes its object.
 */
async function logSharedRanges(trx: Kysely<Schema>, now: string, only?: RawBuilder<string>): Promise<void> {
  const where = only ? sql`and range_prefix in ${only}` : sql``;
  await sql`insert into shared_changes (aggregates, changed, key)
      select 'range_aggregates', cast(${now} as text), range_prefix from range_aggregates where scope = ${SHARED_SCOPE} ${where}
      on conflict do nothing`.execute(trx);
}

/** Each aggregate table, with the column its key is in. */
const VERSIONED = [
  { table: 'number_aggregates', key: 'number_key', kept: 'published_numbers', only: 'numbers' },
  { table: 'ip_aggregates', key: 'source_ip', kept: 'published_addresses', only: 'addresses' },
] as const;

/** Queries of the keys (numbers, addresses) whose rows are recomputed; absent: every row. */
type OnlyKeys = Record<'numbers' | 'addresses', RawBuilder<string>> | undefined;

/**
 * Sets aside when each row was first published (migration 018; its first sighting for a row
 * older than that): a published STIX object's `created` must not change, rebuilt or not.
 */
async function keepPublished(trx: Kysely<Schema>, only?: OnlyKeys): Promise<void> {
  for (const { table, key, kept, only: kind } of VERSIONED) {
    const where = only ? sql`where ${sql.ref(key)} in ${only[kind]}` : sql``;
    await sql`create temporary table ${sql.table(kept)} as select scope, ${sql.ref(key)} as k, coalesce(published_at, first_seen) as published_at from ${sql.table(table)} ${where}`.execute(trx);
    // Each rebuilt row looks its time up here: by key, not by a scan per row.
    await sql`create index ${sql.raw(`${kept}_by_key`)} on ${sql.table(kept)} (scope, k)`.execute(trx);
  }
}

/**
 * Gives the rebuilt rows their publication times back (a key new to the aggregates is published
 * now), and marks every row changed now: a rebuild may change any of them (a trusted flag moved
 * an account's events), so consumers of versioned objects fetch each again, once.
 */
async function restorePublished(trx: Kysely<Schema>, now: string, only?: OnlyKeys): Promise<void> {
  for (const { table, key, kept, only: kind } of VERSIONED) {
    const where = only ? sql`where ${sql.ref(key)} in ${only[kind]}` : sql``;
    await sql`update ${sql.table(table)} set changed_at = ${now}, published_at = coalesce(
        (select p.published_at from ${sql.table(kept)} p where p.scope = ${sql.table(table)}.scope and p.k = ${sql.table(table)}.${sql.ref(key)}), ${now}) ${where}`.execute(trx);
    await sql`drop table ${sql.table(kept)}`.execute(trx);
    // The shared rows' changes, for the TAXII publisher (migration 024), as the fold logs its own.
    const shared = only ? sql`and ${sql.ref(key)} in ${only[kind]}` : sql``;
    await sql`insert into shared_changes (aggregates, changed, key)
        select cast(${table} as text), cast(${now} as text), ${sql.ref(key)} from ${sql.table(table)} where scope = ${SHARED_SCOPE} ${shared}
        on conflict do nothing`.execute(trx);
  }
}

/**
 * Per (scope, key): a JSON object of the KEPT_NAMES most seen values of `name` among `from`'s
 * rows, with their counts, as text (`counts`), beside `scope` and `k`.
 */
function namedCounts(caps: DialectCapabilities, from: RawBuilder<unknown>, key: RawBuilder<unknown>, name: RawBuilder<unknown>) {
  const agg = sql.raw(caps.jsonObjectAgg);
  return sql`(select scope, k, cast(${agg}(name, n) as text) as counts from (
      select scope, k, name, n, row_number() over (partition by scope, k order by n desc, name) as place
      from (select scope, ${key} as k, ${name} as name, count(*) as n from ${from} group by scope, ${key}, ${name}) c
    ) ranked where place <= ${sql.lit(KEPT_NAMES)} group by scope, k)`;
}

/**
 * One hash row per number row (range lookups, docs/api.md §13), of every row or of the numbers
 * `only` selects. SHA-256 is computed here, not in SQL: SQLite has no SHA-256 of its own, and the
 * fold computes it with the same function.
 */
async function addNumberHashes(db: Kysely<Schema>, only?: RawBuilder<string>): Promise<void> {
  let after: [string, string] | undefined;
  for (;;) {
    let page = db.selectFrom('number_aggregates').select(['scope', 'number_key']).orderBy('scope').orderBy('number_key').limit(HASH_PAGE);
    if (only) page = page.where('number_key', 'in', only);
    if (after) {
      const [scope, key] = after;
      page = page.where((eb) => eb.or([eb('scope', '>', scope), eb.and([eb('scope', '=', scope), eb('number_key', '>', key)])]));
    }
    const rows = await page.execute();
    for (const chunk of chunks(rows)) {
      await db
        .insertInto('number_hashes')
        .values(chunk.map((r) => ({ scope: r.scope, number_hash: numberHash(r.number_key), number_key: r.number_key })))
        .execute();
    }
    if (rows.length < HASH_PAGE) return;
    const last = rows.at(-1)!;
    after = [last.scope, last.number_key];
  }
}

/** Number rows read per step while their hashes are rebuilt: memory stays bounded on large stores. */
const HASH_PAGE = 10_000;
