import { sql, type Kysely } from 'kysely';
import type { KeySource, LookupKind } from '../domain/lookup-aggregates.ts';
import type { Schema } from './schema.ts';

/** Where each kind's keys are kept. */
const TABLES = {
  number: { table: 'number_aggregates', key: 'number_key' },
  ip: { table: 'ip_aggregates', key: 'source_ip' },
} as const;

/** Keys read per statement: a short hold of SQLite's connection, few round trips to PostgreSQL. */
const PAGE = 10_000;

/** The keys of the lookup aggregates, read in pages along their primary key (scope, key). */
export class SqlAggregateKeys implements KeySource {
  private readonly db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.db = db;
  }

  async count(kind: LookupKind): Promise<number> {
    const { table } = TABLES[kind];
    const { rows } = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)}`.execute(this.db);
    return Number(rows[0]?.n ?? 0);
  }

  async *keys(kind: LookupKind): AsyncIterable<string> {
    const { table, key } = TABLES[kind];
    let after: { scope: string; key: string } | undefined;
    for (;;) {
      const from = after ? sql`where (scope, ${sql.ref(key)}) > (${after.scope}, ${after.key})` : sql``;
      const { rows } = await sql<{ scope: string; key: string }>`select scope, ${sql.ref(key)} as key from ${sql.table(table)} ${from}
        order by scope, ${sql.ref(key)} limit ${PAGE}`.execute(this.db);
      for (const row of rows) yield row.key;
      if (rows.length < PAGE) return;
      after = rows.at(-1)!;
    }
  }
}
