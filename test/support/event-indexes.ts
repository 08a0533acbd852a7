import { sql, type Kysely } from 'kysely';
import type { Schema } from '../../src/store/schema.ts';
import { TEST_STORE } from './test-database.ts';

/** The events table's indexes as the store's catalogue defines them, by name. */
export async function eventIndexDefinitions(db: Kysely<Schema>): Promise<Record<string, string>> {
  const { rows } =
    TEST_STORE === 'sqlite'
      ? await sql<{ name: string; definition: string | null }>`select name, sql as definition from sqlite_master where type = 'index' and tbl_name = 'events'`.execute(db)
      : await sql<{ name: string; definition: string }>`select indexname as name, indexdef as definition from pg_indexes where schemaname = current_schema() and tablename = 'events'`.execute(db);
  return Object.fromEntries(rows.map((r) => [r.name, r.definition ?? '(implicit)']));
}
