import { sql, type Kysely } from 'kysely';
import type { KeySource, LookupKind } from '../../domain/lookups/lookup-aggregates.ts';
import type { DialectCapabilities } from '../dialect.ts';
import type { Schema } from '../schema.ts';

/** Where each kind's keys are kept. */
const TABLES = {
  number: { table: 'number_aggregates', key: 'number_key' },
  ip: { table: 'ip_aggregates', key: 'source_ip' },
  range: { table: 'range_aggregates', key: 'range_prefix' },
} as const;

/** Keys read per statement: a short hold of SQLite's connection, few round trips to PostgreSQL. */
const PAGE = 10_000;

/** The keys of the lookup aggregates, read in pages along their primary key (scope, key). */
export class SqlAggregateKeys implements KeySource {
  private readonly db: Kysely<Schema>;
  private readonly caps: DialectCapabilities;
  private readonly pageSize: number;

  constructor(db: Kysely<Schema>, caps: DialectCapabilities, pageSize = PAGE) {
    this.db = db;
    this.caps = caps;
    this.pageSize = pageSize;
  }

  /**
   * On SQLite the largest rowid, which no row is above: what a filter is sized by need not be
   * exact, and counting a table of 5 million rows held the thread that answers requests for half
   * a second (SQLite runs in it); rows deleted since make it larger than the count. On PostgreSQL,
   * where the count is worked out by the server, the count.
   */
  async count(kind: LookupKind): Promise<number> {
    const { table } = TABLES[kind];
    const counted = this.caps.rowCountBound === 'max_rowid' ? sql`max(rowid)` : sql`count(*)`;
    const { rows } = await sql<{ n: number | string | null }>`select ${counted} as n from ${sql.table(table)}`.execute(this.db);
    return Number(rows[0]?.n ?? 0);
  }

  async *keys(kind: LookupKind): AsyncIterable<readonly string[]> {
    const { table, key } = TABLES[kind];
    let after: { scope: string; key: string } | undefined;
    for (;;) {
      const from = after ? sql`where (scope, ${sql.ref(key)}) > (${after.scope}, ${after.key})` : sql``;
      const { rows } = await sql<{ scope: string; key: string }>`select scope, ${sql.ref(key)} as key from ${sql.table(table)} ${from}
        order by scope, ${sql.ref(key)} limit ${this.pageSize}`.execute(this.db);
      yield rows.map((row) => row.key);
      if (rows.length < this.pageSize) return;
      after = rows.at(-1)!;
    }
  }
}
