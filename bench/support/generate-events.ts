import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { normalisePhoneNumber } from '../../src/domain/phone-number.ts';
import { rebuildAggregates } from '../../src/store/fold/aggregates-rebuild.ts';
import { openDatabase, type Database } from '../../src/store/database.ts';

/** Deterministic pseudo-random numbers, so that every run builds the same data. */
function mulberry32(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const COUNTRY_CODES = ['44', '46', '39', '972', '1', '33', '49', '234', '53', '882'];
const METHODS = ['INVITE', 'INVITE', 'INVITE', 'OPTIONS', 'REGISTER'];
const AGENTS = ['friendly-scanner', 'sipvicious', 'VaxSIPUserAgent/3.1', 'NOT_FOUND', 'pplsip', ''];

/** The i-th number of the generator's pool, in its international (+) form. */
export function poolNumber(i: number): string {
  const cc = COUNTRY_CODES[i % COUNTRY_CODES.length]!;
  return `+${cc}${String(700_000_000 + i * 7919).slice(0, 10)}`;
}

export interface GenerateOptions {
  /** Events to add. */
  events: number;
  /** Distinct called numbers the events are spread over. */
  numbers: number;
  /** Distinct source addresses. */
  addresses: number;
  seed: number;
  /** Rebuild the aggregates afterwards (needed before lookups). */
  rebuild: boolean;
  log?: (line: string) => void;
}

/**
 * Fills a store fast: multi-row inserts in large transactions with durability relaxed for the
 * load (this is a benchmark fixture, not intake), then one aggregate rebuild in SQL. Events
 * belong to a trusted "fleet" account, so everyone's lookups see them.
 */
export async function generateEvents(database: Database, options: GenerateOptions): Promise<{ accountId: string }> {
  const { db } = database;
  const log = options.log ?? (() => {});
  const random = mulberry32(options.seed);
  let fleet = await db.selectFrom('accounts').select('account_id').where('name', '=', 'bench fleet').executeTakeFirst();
  if (!fleet) {
    fleet = { account_id: randomUUID() };
    await db
      .insertInto('accounts')
      .values({ account_id: fleet.account_id, name: 'bench fleet', plan: 'contributor', trusted: 1, disabled: 0, created_at: new Date().toISOString() })
      .execute();
  }
  if (database.caps.name === 'sqlite') {
    await sql`PRAGMA synchronous = OFF`.execute(db);
    await sql`PRAGMA cache_size = -2000000`.execute(db);
    await sql`PRAGMA temp_store = MEMORY`.execute(db);
  }
  // Secondary indexes are rebuilt once from sorted data after the load instead of taking
  // millions of random inserts; their definitions come from the store itself.
  const indexes = await secondaryIndexes(database);
  for (const index of indexes) await sql`drop index ${sql.ref(index.name)}`.execute(db);

  const started = Date.now();
  // 800 rows of 20 columns stay under SQLite's and PostgreSQL's bound-parameter limits.
  const perInsert = 800;
  const perTransaction = 50;
  let done = 0;
  const base = Date.UTC(2026, 7, 1);
  while (done < options.events) {
    await db.transaction().execute(async (trx) => {
      for (let t = 0; t < perTransaction && done < options.events; t++) {
        const rows = [];
        for (let r = 0; r < perInsert && done < options.events; r++, done++) {
          // Skewed towards low indices: a few numbers are hammered, most are probed rarely.
          const n = Math.floor(random() ** 2 * options.numbers);
          const international = poolNumber(n);
          const called = random() < 0.5 ? international : `00${international.slice(1)}`;
          const number = normalisePhoneNumber(called)!;
          const ip = `10.${(n * 31 + Math.floor(random() * options.addresses)) % 250}.${Math.floor(random() * 250)}.${Math.floor(random() * 250)}`;
          const ms = base + Math.floor(random() * 90 * 86_400_000);
          const iso = new Date(ms).toISOString();
          const eventTime = `${iso.slice(0, 19)}.${iso.slice(20, 23)}${String(Math.floor(random() * 1e6)).padStart(6, '0')}Z`;
          // Time-ordered (v7-like) ids keep the unique index append-only during the load.
          const uuid = `${(base + done).toString(16).padStart(12, '0').slice(-12).replace(/(.{8})(.{4})/, '$1-$2')}-7${randomUUID().slice(15)}`;
          rows.push({
            account_id: fleet.account_id,
            event_uuid: uuid,
            app_name: 'sentrypeer',
            app_version: '4.0.6',
            event_timestamp: eventTime.replace('T', ' ').slice(0, -1),
            created_by_node_id: '732e7f50-637d-4fde-81e0-5c32f1bb5a92',
            collected_method: 'responsive',
            transport_type: random() < 0.8 ? 'UDP' : 'TCP',
            source_ip: ip,
            destination_ip: '192.0.2.1',
            called_number: called,
            sip_method: METHODS[Math.floor(random() * METHODS.length)]!,
            sip_user_agent: AGENTS[Math.floor(random() * AGENTS.length)]!,
            sip_message: `INVITE sip:${called}@192.0.2.1 SIP/2.0\r\n\r\n`,
            event_time: eventTime,
            number_key: number.key,
            number_written: number.written,
            content_hash: createHash('sha1').update(uuid).digest('hex'),
            received_at: iso,
          });
        }
        await trx.insertInto('events').values(rows).execute();
        if (database.caps.partitionedEvents) await trx
          .insertInto('event_ids')
          .values(rows.map((r) => ({ account_id: r.account_id, event_uuid: r.event_uuid, content_hash: r.content_hash, event_time: r.event_time })))
          .execute();
      }
    });
    if (done % 500_000 < perInsert * perTransaction) log(`  ${done.toLocaleString('en')} events (${Math.round(done / ((Date.now() - started) / 1000)).toLocaleString('en')}/s)`);
  }
  const indexStarted = Date.now();
  for (const index of indexes) await sql.raw(index.definition).execute(db);
  log(`  indexes rebuilt in ${((Date.now() - indexStarted) / 1000).toFixed(1)} s`);
  if (options.rebuild) {
    const rebuildStarted = Date.now();
    await rebuildAggregates(db, database.caps);
    log(`  aggregates rebuilt in ${((Date.now() - rebuildStarted) / 1000).toFixed(1)} s`);
  }
  if (database.caps.name === 'sqlite') await sql`PRAGMA synchronous = FULL`.execute(db);
  return { accountId: fleet.account_id };
}

/** The events table's secondary indexes (not the unique constraint), with their definitions. */
async function secondaryIndexes(database: Database): Promise<Array<{ name: string; definition: string }>> {
  if (database.caps.name === 'sqlite') {
    const rows = await sql<{ name: string; sql: string | null }>`select name, sql from sqlite_master where type = 'index' and tbl_name = 'events'`.execute(database.db);
    return rows.rows.filter((r) => r.sql !== null).map((r) => ({ name: r.name, definition: r.sql! }));
  }
  const rows = await sql<{ indexname: string; indexdef: string }>`select indexname, indexdef from pg_indexes where tablename = 'events' and indexname like 'events_by_%'`.execute(database.db);
  return rows.rows.map((r) => ({ name: r.indexname, definition: r.indexdef }));
}

// As a command: node bench/support/generate-events.ts --database sqlite:./data/bench.db --events 1000000
if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      database: { type: 'string', default: process.env.DATABASE_URL ?? 'sqlite:./data/bench.db' },
      events: { type: 'string', default: '100000' },
      numbers: { type: 'string', default: '200000' },
      addresses: { type: 'string', default: '50000' },
      seed: { type: 'string', default: '1' },
    },
  });
  const database = await openDatabase(values.database);
  await generateEvents(database, {
    events: Number(values.events),
    numbers: Number(values.numbers),
    addresses: Number(values.addresses),
    seed: Number(values.seed),
    rebuild: true,
    log: (line) => console.log(line),
  });
  await database.close();
}
