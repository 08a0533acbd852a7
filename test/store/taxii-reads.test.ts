import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, sql, SqliteDialect, type LogEvent } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SCORING } from '../../src/domain/intelligence/scores.ts';
import { TaxiiPublisher, type TaxiiPublicationStore } from '../../src/domain/intelligence/taxii-publication.ts';
import { SHARED_SCOPE } from '../../src/domain/visibility.ts';
import { openDatabase, type Database } from '../../src/store/database.ts';
import type { Schema } from '../../src/store/schema.ts';
import { SqlTaxiiRepository } from '../../src/store/repositories/taxii-repository.ts';
import { freshDatabase, TEST_STORE, type TestDatabase } from '../support/test-database.ts';

/**
 * The TAXII publisher's reads of the shared data set's changed rows, page by page, through the
 * log of their changes (migration 024). A rebuild of the aggregates stamps every row with one
 * changed_at: pages must still cut through those ties exactly once each, skip the entries of
 * rows changed again since, and (SQLite, whose plans we can read cheaply) seek through the log's
 * key instead of sorting the rows that share an instant before each page.
 */
const REBUILT = 1200;
const LATER = 300;
const STAMP = '2026-11-01T10:00:00.000Z';
const number = (i: number) => `+4670${String(i).padStart(7, '0')}`;

let store: TestDatabase;
let database: Database;

beforeAll(async () => {
  store = await freshDatabase();
  database = await openDatabase(store.url);
  const rows = [];
  for (let i = 0; i < REBUILT + LATER; i++) {
    const changedAt = i < REBUILT ? STAMP : new Date(Date.parse(STAMP) + 1000 + i).toISOString();
    for (const scope of [SHARED_SCOPE, 'account-a', 'account-b']) {
      rows.push({
        scope,
        number_key: number((i * 7919) % (REBUILT + LATER)),
        seen_count: 6,
        first_seen: '2026-10-30T00:00:00.000Z',
        last_seen: changedAt,
        source_ip_count: 3,
        sip_methods: '{"INVITE":6}',
        forms: '{}',
        nodes: '{}',
        published_at: '2026-10-30T00:00:00.000Z',
        changed_at: changedAt,
      });
    }
  }
  for (let at = 0; at < rows.length; at += 100) await database.db.insertInto('number_aggregates').values(rows.slice(at, at + 100)).execute();
  // The log as the writers leave it: an entry per change of a shared row, and for the rows
  // changed after the rebuild, their entry of that rebuild too, which they have moved past.
  const shared = rows.filter((row) => row.scope === SHARED_SCOPE);
  const entries = shared.map((row) => ({ aggregates: 'number_aggregates', changed: row.changed_at, key: row.number_key }));
  const moved = shared.filter((row) => row.changed_at !== STAMP).map((row) => ({ aggregates: 'number_aggregates', changed: STAMP, key: row.number_key }));
  const log = [...entries, ...moved];
  // Statistics taken while the log was a tenth of its size, as a rebuild or a burst may outgrow
  // them (PostgreSQL here runs without autovacuum; SQLite's come from PRAGMA optimize at start).
  const tenth = Math.ceil(log.length / 10);
  await database.db.insertInto('shared_changes').values(log.slice(0, tenth)).execute();
  if (database.caps.concurrentWriters) await sql`analyze shared_changes`.execute(database.db);
  for (let at = tenth; at < log.length; at += 100) await database.db.insertInto('shared_changes').values(log.slice(at, at + 100)).execute();
  await database.refreshPlannerStatistics?.();
});

afterAll(async () => {
  await database?.close();
  await store?.drop();
});

async function allPages(read: (page: string | undefined) => ReturnType<SqlTaxiiRepository['changedAfter']>) {
  const values: string[] = [];
  let page: string | undefined;
  let pages = 0;
  do {
    const got = await read(page);
    values.push(...got.candidates.map((c) => c.value));
    page = got.next;
    pages += 1;
  } while (page !== undefined && pages < 100);
  return values;
}

describe('the publisher reads changed rows', () => {
  it('a page at a time, each shared row once, in (changed_at, key) order, through a rebuild’s one instant', async () => {
    const repo = new SqlTaxiiRepository(database.db, database.caps);
    const since = new Date(Date.parse(STAMP) - 1).toISOString();
    const values = await allPages((page) => repo.changedAfter('phone-numbers', since, page, 100));
    expect(values).toHaveLength(REBUILT + LATER);
    expect(new Set(values).size).toBe(REBUILT + LATER);
    // The rebuilt rows first, by key; then the later ones, each with an instant of its own.
    const rebuilt = values.slice(0, REBUILT);
    expect(rebuilt).toEqual([...rebuilt].sort());
    expect(values.slice(REBUILT)).toEqual(Array.from({ length: LATER }, (_, k) => number(((REBUILT + k) * 7919) % (REBUILT + LATER))));
    // Strictly after: nothing at the rebuild's instant.
    expect(await allPages((page) => repo.changedAfter('phone-numbers', STAMP, page, 100))).toHaveLength(LATER);
    // The first pass's read, by last_seen, pages the same way.
    const seen = await allPages((page) => repo.seenSince('phone-numbers', STAMP, page, 100));
    expect(new Set(seen).size).toBe(REBUILT + LATER);
  });

  it('reads the log by its key and the rows by theirs, sorting nothing, on statistics older than the rows', async () => {
    // Statistics as a store may have them (beforeAll): on PostgreSQL, the log's taken when it was
    // a tenth of its size and the aggregates' never (no autovacuum here); on SQLite, PRAGMA
    // optimize's at start.
    const statements: Array<{ sql: string; parameters: readonly unknown[] }> = [];
    const capture = (event: LogEvent) => {
      if (event.level === 'query' && /shared_changes|number_aggregates/.test(event.query.sql)) statements.push({ sql: event.query.sql, parameters: event.query.parameters });
    };
    const path = store.url.startsWith('sqlite:') ? store.url.slice('sqlite:'.length) : undefined;
    const native = path ? new BetterSqlite3(path) : undefined;
    const pool = path ? undefined : new pg.Pool({ connectionString: store.url });
    const db = new Kysely<Schema>({ dialect: native ? new SqliteDialect({ database: native }) : new PostgresDialect({ pool: pool! }), log: capture });
    const plan = async (sql: string, parameters: readonly unknown[]) =>
      native
        ? native
            .prepare(`explain query plan ${sql}`)
            .all(...(parameters as unknown[]))
            .map((row) => (row as { detail: string }).detail)
            .join('; ')
        : (await pool!.query(`explain ${sql}`, parameters as unknown[])).rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('; ');
    try {
      const repo = new SqlTaxiiRepository(db, database.caps);
      const first = await repo.changedAfter('phone-numbers', STAMP, undefined, 100);
      await repo.changedAfter('phone-numbers', STAMP, first.next, 100);
      expect(statements).toHaveLength(4);
      for (const { sql, parameters } of statements) {
        const shown = await plan(sql, parameters);
        if (/from "shared_changes"/.test(sql)) expect(shown).toMatch(native ? /SEARCH shared_changes USING PRIMARY KEY \(aggregates=\? AND / : /Index (Only )?Scan using shared_changes_pk/);
        else expect(shown).toMatch(native ? /SEARCH number_aggregates USING INDEX sqlite_autoindex_number_aggregates_1 \(scope=\? AND number_key=\?\)/ : /Index Cond: \(\(scope = '\*shared\*'::text\) AND \(number_key = k\.value\)\)/);
        expect(shown).not.toMatch(/TEMP B-TREE|Sort|Seq Scan|Hash/);
      }
    } finally {
      await db.destroy();
    }
  });
});

describe('a first pass stopped part-way', () => {
  it('is taken up by the next process at the page it had reached, and publishes every value once', async () => {
    const repo = new SqlTaxiiRepository(database.db, database.caps);
    // Every row in the collection (threshold 0), scored an hour after the rows were stamped.
    const start = Date.parse(STAMP) + 3_600_000;
    const settings = { minScore: 0, scoring: DEFAULT_SCORING, retentionDays: 30 };
    let first: TaxiiPublisher | undefined;
    let stopped: Promise<void> | undefined;
    let pages = 0;
    // The first process is told to stop while it reads its second page of numbers.
    const stopping: TaxiiPublicationStore = Object.create(repo);
    stopping.seenSince = (kind, since, page, limit) => {
      if (kind === 'phone-numbers' && ++pages === 2) stopped = first!.stop();
      return repo.seenSince(kind, since, page, limit);
    };
    first = new TaxiiPublisher(stopping, { ...settings, now: () => new Date(start) });
    await first.publish();
    await stopped;
    const objects = () => database.db.selectFrom('taxii_objects').select((eb) => eb.fn.countAll<number>().as('n')).where('collection', '=', 'phone-numbers').executeTakeFirstOrThrow();
    expect(Number((await objects()).n)).toBe(1000);
    const left = await repo.stateOf('phone-numbers');
    expect(left?.changedThrough).toBeUndefined();
    expect(left?.firstPass).toMatchObject({ through: new Date(Date.parse(STAMP) + 1000 + REBUILT + LATER - 1).toISOString() });

    // The process replacing it (the first one gave up its lease as it stopped) reads on from the third page.
    const read: string[] = [];
    const counting: TaxiiPublicationStore = Object.create(repo);
    counting.seenSince = async (kind, since, page, limit) => {
      const got = await repo.seenSince(kind, since, page, limit);
      if (kind === 'phone-numbers') read.push(...got.candidates.map((c) => c.value));
      return got;
    };
    expect((await new TaxiiPublisher(counting, { ...settings, now: () => new Date(start + 1000) }).publish()).ran).toBe(true);
    expect(read).toHaveLength(REBUILT + LATER - 1000);
    expect(Number((await objects()).n)).toBe(REBUILT + LATER);
    const versions = await database.db.selectFrom('taxii_versions').select('object_id').where('collection', '=', 'phone-numbers').execute();
    expect(new Set(versions.map((v) => v.object_id)).size).toBe(REBUILT + LATER);
    expect(versions).toHaveLength(REBUILT + LATER);
    const done = await repo.stateOf('phone-numbers');
    expect(done).toEqual({ foldSeen: expect.any(String), changedThrough: left!.firstPass!.through, sweptHour: new Date(start).toISOString() });
  });
});
