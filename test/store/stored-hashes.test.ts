import { randomUUID } from 'node:crypto';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/store/database.ts';
import { ArrayIngestWrites } from '../../src/store/fold/ingest-writes.ts';
import type { Schema } from '../../src/store/schema.ts';
import { freshDatabase, TEST_STORE, type TestDatabase } from '../support/test-database.ts';

/**
 * How PostgreSQL tells a replay from a new event: the stored content hashes of a batch's uuids.
 * An import grows `event_ids` by hundreds of thousands of rows before it is analysed again,
 * and the read must probe the primary key per uuid all the same: with an IN list the planner,
 * going by the empty table's statistics, read every row of the account for each list (a re-run
 * of a 200,000-event import took 45 s in that statement, docs/performance.md "Import").
 */
const ROWS = 20_000;
const ACCOUNT = 'account-a';

let store: TestDatabase;
let database: Database;
const uuids = Array.from({ length: ROWS }, () => randomUUID());

beforeAll(async () => {
  if (TEST_STORE !== 'postgres') return;
  store = await freshDatabase();
  database = await openDatabase(store.url);
  // Analysed while empty, then filled, as an import fills it; autovacuum kept away so that it stays so.
  await sql`analyze event_ids`.execute(database.db);
  await sql`alter table event_ids set (autovacuum_enabled = false)`.execute(database.db);
  await sql`insert into event_ids (account_id, event_uuid, content_hash, event_time)
    select ${ACCOUNT}, u, 'hash-' || u, '2026-11-01T00:00:00.000000000Z' from unnest(cast(${uuids} as text[])) as u`.execute(database.db);
  await sql`insert into event_ids (account_id, event_uuid, content_hash, event_time) values ('account-b', ${uuids[0]}, 'other', '2026-11-01T00:00:00.000000000Z')`.execute(database.db);
});

afterAll(async () => {
  await database?.close();
  await store?.drop();
});

describe.runIf(TEST_STORE === 'postgres')('stored content hashes (PostgreSQL)', () => {
  it('are read by primary key per uuid, on statistics from before the rows came', async () => {
    const statements: Array<{ sql: string; parameters: readonly unknown[] }> = [];
    const pool = new pg.Pool({ connectionString: store.url, max: 1 });
    const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool }), log: (event) => void (event.level === 'query' && statements.push(event.query)) });
    try {
      const asked = [...uuids.slice(0, 500), randomUUID()];
      const found = await db.transaction().execute((trx) => new ArrayIngestWrites().storedHashes(trx, ACCOUNT, asked));
      // The account's own rows only, one per stored uuid.
      expect(found).toHaveLength(500);
      expect(new Map(found.map((r) => [r.event_uuid, r.content_hash])).get(uuids[0]!)).toBe(`hash-${uuids[0]}`);

      const [statement] = statements.filter((s) => /event_ids/.test(s.sql));
      const plan = (await pool.query(`explain ${statement!.sql}`, statement!.parameters as unknown[])).rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
      expect(plan).toMatch(/Index Cond: .*event_uuid/);
    } finally {
      await db.destroy();
    }
  });
});
