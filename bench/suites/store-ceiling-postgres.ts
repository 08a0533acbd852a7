import { createHash, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openDatabase } from '../../src/store/database.ts';
import { ceilingRows, type CeilingRow } from '../probes/ceiling-rows.ts';
import { postgresBenchDatabase } from '../support/support.ts';

/**
 * `npx node bench/suites/store-ceiling-postgres.ts [--events 200000] [--per-commit 1000]
 * [--connections 4]`: what PostgreSQL alone takes on this machine, the ceiling under batch
 * intake there, as bench/suites/store-ceiling.ts measures it for SQLite. A minimal program, writing on
 * as many connections at once as the bench's batch intake has requests in flight: the same
 * pre-built rows, in a database the program creates with Tollwatch's own migrations (so the
 * real tables, partitions and indexes) and drops after, written in transactions of
 * `--per-commit` rows, each committed durably (`synchronous_commit` on, as intake commits). Each
 * table gets one statement per transaction, every row in arrays (`insert … select * from
 * unnest($1::text[], …)`, prepared once): the fewest round trips and the least parsing there is
 * without COPY. Run four ways: events, their uuids in `event_ids` and, in the same
 * transactions, the lookup aggregates' writes (the distinct sets, each number's hash, one
 * upsert per number and address of the transaction with its counts added in SQL: what intake
 * and its fold write, with less work than the fold does); events and `event_ids` alone; events
 * alone; and the same rows into a table with no index. Prints rows/s for each.
 */
const { values } = parseArgs({
  options: { events: { type: 'string', default: '200000' }, 'per-commit': { type: 'string', default: '1000' }, connections: { type: 'string', default: '4' } },
});
const events = Number(values.events);
const perCommit = Number(values['per-commit']);
const connections = Number(values.connections);

const database = await postgresBenchDatabase();
if (!database) throw new Error('PostgreSQL is not reachable (BENCH_POSTGRES_URL, default postgres://postgres@127.0.0.1:5432/postgres)');
const clients = Array.from({ length: connections }, () => new pg.Client({ connectionString: database.url }));
const client = clients[0]!;
try {
  // The real schema and partitions, from the real migrations.
  const store = await openDatabase(database.url);
  const accountId = randomUUID();
  await store.db.insertInto('accounts').values({ account_id: accountId, name: 'ceiling', plan: 'contributor', trusted: 0, disabled: 0, created_at: new Date().toISOString() }).execute();
  await store.close();
  for (const c of clients) await c.connect();

  const rows = ceilingRows(accountId, events);
  const eventColumns = Object.keys(rows[0]!) as Array<keyof CeilingRow>;

  const types = new Map<string, string>();
  for (const { table_name, column_name, udt_name } of (await client.query('select table_name, column_name, udt_name from information_schema.columns')).rows) {
    types.set(`${table_name}.${column_name}`, udt_name as string);
  }
  let statements = 0;
  /** One `insert … select * from unnest(…)` of `table`, each array cast to its column's type, prepared once per connection. */
  const unnestInsert = (table: string, columns: readonly string[], typesOf = table, tail = '') => {
    const name = `ceiling_${++statements}`;
    const arrays = columns.map((c, i) => `$${i + 1}::${types.get(`${typesOf}.${c}`)}[]`).join(', ');
    const text = `insert into ${table} (${columns.join(', ')}) select * from unnest(${arrays}) ${tail}`;
    return (on: pg.Client, columnValues: unknown[][]) => on.query({ name, text, values: columnValues });
  };
  const byColumn = <T>(batch: T[], columns: ReadonlyArray<keyof T>) => columns.map((c) => batch.map((row) => row[c]));

  const insertIds = unnestInsert('event_ids', ['account_id', 'event_uuid', 'content_hash', 'event_time']);
  const addSources = unnestInsert('number_sources', ['scope', 'number_key', 'source_ip'], 'number_sources', 'on conflict do nothing returning number_key');
  const addNumbers = unnestInsert('ip_numbers', ['scope', 'source_ip', 'number_key'], 'ip_numbers', 'on conflict do nothing returning source_ip');
  const addHashes = unnestInsert('number_hashes', ['scope', 'number_hash', 'number_key'], 'number_hashes', 'on conflict do nothing');
  const upsert = (table: string, key: string, distinct: string, counts: string[]) =>
    unnestInsert(
      table,
      ['scope', key, 'seen_count', 'first_seen', 'last_seen', distinct, ...counts],
      table,
      `on conflict (scope, ${key}) do update set seen_count = ${table}.seen_count + excluded.seen_count,
         last_seen = greatest(${table}.last_seen, excluded.last_seen), ${distinct} = ${table}.${distinct} + excluded.${distinct}`,
    );
  const upsertNumbers = upsert('number_aggregates', 'number_key', 'source_ip_count', ['sip_methods', 'forms', 'nodes']);
  const upsertAddresses = upsert('ip_aggregates', 'source_ip', 'called_number_count', ['user_agents', 'transports', 'nodes']);

  /**
   * The fold's writes for a transaction's rows, keyed as the fold keys them, in key order: the
   * same order on every connection, so that concurrent upserts do not deadlock.
   */
  const fold = async (on: pg.Client, batch: CeilingRow[]) => {
    const fresh = (result: pg.QueryResult, column: string) => {
      const counts = new Map<string, number>();
      for (const row of result.rows) counts.set(row[column], (counts.get(row[column]) ?? 0) + 1);
      return counts;
    };
    const scope = batch.map(() => accountId);
    const freshSources = fresh(await addSources(on, [scope, batch.map((r) => r.number_key), batch.map((r) => r.source_ip)]), 'number_key');
    const freshNumbers = fresh(await addNumbers(on, [scope, batch.map((r) => r.source_ip), batch.map((r) => r.number_key)]), 'source_ip');
    const deltas = (key: (row: CeilingRow) => string) => {
      const byKey = new Map<string, { count: number; last: string }>();
      for (const row of batch) {
        const delta = byKey.get(key(row)) ?? { count: 0, last: row.event_time };
        delta.count += 1;
        if (row.event_time > delta.last) delta.last = row.event_time;
        byKey.set(key(row), delta);
      }
      return [...byKey].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    };
    const numbers = deltas((r) => r.number_key);
    const addresses = deltas((r) => r.source_ip);
    await addHashes(on, [numbers.map(() => accountId), numbers.map(([key]) => createHash('sha256').update(key).digest('hex')), numbers.map(([key]) => key)]);
    const node = '{"732e7f50-637d-4fde-81e0-5c32f1bb5a92":1}';
    /** An upsert's arrays: scope, key, count, first and last seen, fresh members, three named counts. */
    const upserted = (keyed: typeof numbers, fresh: Map<string, number>, counts: Array<(key: string) => string>) => [
      keyed.map(() => accountId),
      keyed.map(([key]) => key),
      keyed.map(([, d]) => d.count),
      keyed.map(([, d]) => d.last),
      keyed.map(([, d]) => d.last),
      keyed.map(([key]) => fresh.get(key) ?? 0),
      ...counts.map((named) => keyed.map(([key]) => named(key))),
    ];
    await upsertNumbers(on, upserted(numbers, freshSources, [() => '{"INVITE":1}', (key) => `{"${key}":1}`, () => node]));
    await upsertAddresses(on, upserted(addresses, freshNumbers, [() => '{"friendly-scanner":1}', () => '{"UDP":1}', () => node]));
  };

  const run = async (label: string, table: string, options: { ids?: boolean; aggregates?: boolean } = {}) => {
    const insertEvents = unnestInsert(table, eventColumns, 'events');
    for (const row of rows) row.event_uuid = randomUUID();
    const started = performance.now();
    let next = 0;
    // Each connection takes the next transaction's rows until none are left.
    const writer = async (on: pg.Client) => {
      for (let i = next; i < rows.length; i = next) {
        next += perCommit;
        const batch = rows.slice(i, i + perCommit);
        await on.query('begin');
        if (options.ids) await insertIds(on, byColumn(batch, ['account_id', 'event_uuid', 'content_hash', 'event_time']));
        await insertEvents(on, byColumn(batch, eventColumns));
        if (options.aggregates) await fold(on, batch);
        await on.query('commit');
      }
    };
    await Promise.all(clients.map(writer));
    const seconds = (performance.now() - started) / 1000;
    console.log(`${label.padEnd(66)} ${Math.round(rows.length / seconds).toLocaleString('en').padStart(9)} rows/s`);
  };
  await run('events, event_ids and their aggregates (intake and its fold)', 'events', { ids: true, aggregates: true });
  await run('events and event_ids, every index intake keeps', 'events', { ids: true });
  await run('events alone, with their indexes', 'events');
  await client.query('create table bare as select * from events where false');
  await run('the same rows, a table with no index', 'bare');
} finally {
  for (const c of clients) await c.end().catch(() => {});
  await database.drop();
}
