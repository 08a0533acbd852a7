import { createHash, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import SQLiteDatabase from 'better-sqlite3';
import { SHARED_SCOPE } from '../../src/domain/visibility.ts';
import { openDatabase } from '../../src/store/database.ts';
import { keepsPairsByAddress } from '../../src/store/fold/distinct-sets.ts';
import { ceilingRows } from '../probes/ceiling-rows.ts';
import { ROOT } from '../support/support.ts';

/**
 * `npx node bench/suites/store-ceiling.ts [--events 200000] [--per-commit 1000]`: what the store alone
 * can take on this machine, the ceiling under intake and import. A minimal program, no HTTP, no
 * validation: pre-built event rows of the benchmark's shape (random v4 uuids, 200,000 numbers,
 * 50,000 addresses as in bench/suites/import.ts, a 60-byte SIP message) inserted with one prepared
 * statement into a fresh store made by Tollwatch's own migrations, in transactions of `--per-commit`
 * rows, each committed with an fsync (`synchronous=FULL`), as intake commits. Run five ways:
 * the events table with every index intake keeps, and in the same transactions the lookup
 * aggregates' writes for those rows (what an import must do in all, with less work than the
 * fold: each key's counts added in SQL, no JSON maps merged), counted in an account's own scope
 * (intake) and in the shared data set (an import), which keeps its pairs by number alone
 * (src/store/fold/distinct-sets.ts); the events table alone; with only
 * its unique (account, uuid) index, then with the other four built after the load (as a bulk
 * import does); and the same rows into a table with no index at all.
 * Prints rows/s for each. `--per-commit 10000` is an import's transaction.
 */
const { values } = parseArgs({ options: { events: { type: 'string', default: '200000' }, 'per-commit': { type: 'string', default: '1000' } } });
const events = Number(values.events);
const perCommit = Number(values['per-commit']);

mkdirSync(join(ROOT, 'bench/.data'), { recursive: true });
const dir = mkdtempSync(join(ROOT, 'bench/.data/ceiling-'));
try {
  const path = join(dir, 'store.db');
  // The real schema, pragmas and page size, from the real migrations.
  const database = await openDatabase(`sqlite:${path}`);
  const accountId = randomUUID();
  await database.db.insertInto('accounts').values({ account_id: accountId, name: 'ceiling', plan: 'contributor', trusted: 0, disabled: 0, created_at: new Date().toISOString() }).execute();
  await database.close();

  const rows = ceilingRows(accountId, events);
  const columns = Object.keys(rows[0]!);

  const native = new SQLiteDatabase(path);
  native.pragma('journal_mode = WAL');
  native.pragma('synchronous = FULL');
  native.pragma('wal_autocheckpoint = 16384');
  // The fold's writes, keyed as the fold keys them: the distinct sets, each number's hash, and
  // one upsert per (scope, key) of the transaction, its counts coalesced in memory.
  const addSourceOfNumber = native.prepare('insert into number_sources (scope, number_key, source_ip) values (?, ?, ?) on conflict do nothing');
  const addNumberOfSource = native.prepare('insert into ip_numbers (scope, source_ip, number_key) values (?, ?, ?) on conflict do nothing');
  const addHash = native.prepare('insert into number_hashes (scope, number_hash, number_key) values (?, ?, ?) on conflict do nothing');
  const upsert = (table: string, key: string, distinct: string, counts: string[]) =>
    native.prepare(
      `insert into ${table} (scope, ${key}, seen_count, first_seen, last_seen, ${distinct}, ${counts.join(', ')}) values (?, ?, ?, ?, ?, ?, ?, ?, ?)
       on conflict (scope, ${key}) do update set seen_count = seen_count + excluded.seen_count, last_seen = max(last_seen, excluded.last_seen), ${distinct} = ${distinct} + excluded.${distinct}`,
    );
  const upsertNumber = upsert('number_aggregates', 'number_key', 'source_ip_count', ['sip_methods', 'forms', 'nodes']);
  const upsertAddress = upsert('ip_aggregates', 'source_ip', 'called_number_count', ['user_agents', 'transports', 'nodes']);
  const fold = (batch: typeof rows, scope: string) => {
    const numbers = new Map<string, { count: number; fresh: number; last: string }>();
    const addresses = new Map<string, { count: number; fresh: number; last: string }>();
    for (const row of batch) {
      const fresh = addSourceOfNumber.run(scope, row.number_key, row.source_ip).changes;
      // As the fold: only pairs new by number go by address, in the scopes that keep them so.
      if (fresh && keepsPairsByAddress(scope)) addNumberOfSource.run(scope, row.source_ip, row.number_key);
      for (const [map, key] of [[numbers, row.number_key], [addresses, row.source_ip]] as const) {
        const delta = map.get(key) ?? { count: 0, fresh: 0, last: row.event_time };
        delta.count += 1;
        delta.fresh += fresh;
        if (row.event_time > delta.last) delta.last = row.event_time;
        map.set(key, delta);
      }
    }
    for (const [key, d] of numbers) {
      addHash.run(scope, createHash('sha256').update(key).digest('hex'), key);
      upsertNumber.run(scope, key, d.count, d.last, d.last, d.fresh, '{"INVITE":1}', `{"${key}":1}`, '{"732e7f50-637d-4fde-81e0-5c32f1bb5a92":1}');
    }
    for (const [key, d] of addresses) upsertAddress.run(scope, key, d.count, d.last, d.last, d.fresh, '{"friendly-scanner":1}', '{"UDP":1}', '{"732e7f50-637d-4fde-81e0-5c32f1bb5a92":1}');
  };
  const run = (label: string, table: string, aggregatesScope?: string) => {
    const insert = native.prepare(`insert into ${table} (${columns.join(', ')}) values (${columns.map((c) => `@${c}`).join(', ')})`);
    const commit = native.transaction((batch: typeof rows) => {
      for (const row of batch) insert.run(row);
      if (aggregatesScope) fold(batch, aggregatesScope);
    });
    const started = performance.now();
    for (let i = 0; i < rows.length; i += perCommit) commit(rows.slice(i, i + perCommit));
    const seconds = (performance.now() - started) / 1000;
    report(label, seconds);
    return seconds;
  };
  const report = (label: string, seconds: number) => console.log(`${label.padEnd(66)} ${Math.round(rows.length / seconds).toLocaleString('en').padStart(9)} rows/s`);
  // Between runs: an empty store again, and new uuids so that no row is a replay.
  const reset = () => {
    native.exec('delete from events');
    for (const table of ['number_sources', 'ip_numbers', 'number_hashes', 'number_aggregates', 'ip_aggregates']) native.exec(`delete from ${table}`);
    for (const row of rows) row.event_uuid = randomUUID();
  };
  run('events with every index, their aggregates in an own scope', 'events', accountId);
  reset();
  run('events with every index, their aggregates in the shared data set', 'events', SHARED_SCOPE);
  reset();
  run('events, every index intake keeps', 'events');
  const secondary = native.prepare(`select name, sql from sqlite_master where type = 'index' and tbl_name = 'events' and sql is not null`).all() as Array<{ name: string; sql: string }>;
  for (const { name } of secondary) native.exec(`drop index ${name}`);
  reset();
  const loaded = run('events, only the unique (account, uuid) index', 'events');
  // What a bulk import does with them (`tollwatch import --bulk`): the same rows, then the
  // secondary indexes built again by sorting.
  const building = performance.now();
  for (const index of secondary) native.exec(index.sql);
  report('events, the unique index, then the others built after (--bulk)', loaded + (performance.now() - building) / 1000);
  native.exec(`create table bare as select * from events where 0`);
  run('the same rows, a table with no index', 'bare');
  native.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
