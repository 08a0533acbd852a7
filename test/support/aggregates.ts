import type { Kysely } from 'kysely';
import { AGGREGATE_TABLES } from '../../src/store/fold/aggregates-rebuild.ts';
import type { Schema } from '../../src/store/schema.ts';

/**
 * Every lookup-aggregate row, in a form that compares across stores and across a rebuild
 * (`published_at` kept, as readers take it; `changed_at` left out):
 * PostgreSQL's 64-bit counters (strings) as numbers, and the JSON maps of named counts parsed
 * with their names in order (each store spells and orders a JSON object its own way).
 */
export async function aggregateSnapshot(db: Kysely<Schema>): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const table of AGGREGATE_TABLES) {
    const rows = (await db.selectFrom(table).selectAll().execute()) as Array<Record<string, unknown>>;
    // When a row last changed is when the fold or the rebuild last wrote it: not a count.
    // A row folded before migration 018 was published with its first sighting, as its readers take it.
    out[table] = rows
      .map((row) => ({ ...row, ...('published_at' in row ? { published_at: row.published_at ?? row.first_seen } : {}) }))
      .map((row) => JSON.stringify(Object.fromEntries(Object.entries(row).filter(([k]) => k !== 'changed_at').map(([k, v]) => [k, comparable(v)]))))
      .sort();
  }
  return out;
}

function comparable(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  if (/^\d+$/.test(value)) return Number(value);
  if (value.startsWith('{')) {
    const counts = JSON.parse(value) as Record<string, number>;
    return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }
  return value;
}
