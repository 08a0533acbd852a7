import { sql, type Kysely } from 'kysely';
import type { DialectCapabilities } from '../dialect.ts';
import type { Schema } from '../schema.ts';

/**
 * The events table's secondary indexes: the own-event queries of docs/api.md §8, newest first
 * per account and by each filter. Named and keyed as the migrations made them; neither the
 * account-and-uuid uniqueness nor the fold's order (the id) depends on them. The first four are
 * migration 001's; the last is migration 032's.
 */
export const EVENT_QUERY_INDEXES = [
  { name: 'events_by_time', columns: ['account_id', 'event_time', 'id'] },
  { name: 'events_by_number', columns: ['account_id', 'number_key', 'event_time', 'id'] },
  { name: 'events_by_source', columns: ['account_id', 'source_ip', 'event_time', 'id'] },
  { name: 'events_by_node', columns: ['account_id', 'created_by_node_id', 'event_time', 'id'] },
  // The contributors' board (migration 032): events and distinct numbers per account, from the index alone.
  { name: 'events_by_account_time_number', columns: ['account_id', 'event_time', 'number_key'] },
] as const;

/**
 * Drops the secondary indexes for a bulk load (`tollwatch import --bulk`, docs/operations.md):
 * each event then writes one random-key B-tree on SQLite (its uniqueness; PostgreSQL keeps that
 * in `event_ids`) instead of six, and the indexes are built again afterwards by sorting. Event
 * queries scan the table meanwhile.
 */
export async function dropEventQueryIndexes(db: Kysely<Schema>): Promise<void> {
  for (const { name } of EVENT_QUERY_INDEXES) await db.schema.dropIndex(name).ifExists().execute();
}

/**
 * Builds whichever secondary index is missing: after a bulk load, and whenever the store is
 * opened, so that a bulk load that did not finish (a crash, ^C) leaves no store without them.
 * Costs one catalogue read per index when they are all there. Answers the indexes it built.
 */
export async function ensureEventQueryIndexes(db: Kysely<Schema>, caps: DialectCapabilities): Promise<string[]> {
  const built: string[] = [];
  for (const { name, columns } of EVENT_QUERY_INDEXES) {
    if (await indexExists(db, caps, name)) continue;
    try {
      await db.schema.createIndex(name).ifNotExists().on('events').columns([...columns]).execute();
    } catch (err) {
      // Two processes opening the store at once both found it missing, and the other built it
      // first (PostgreSQL can then refuse the second's name): what matters is that it exists.
      if (await indexExists(db, caps, name)) continue;
      throw err;
    }
    built.push(name);
  }
  return built;
}

/** Whether an index of this name exists, in either store's catalogue. */
async function indexExists(db: Kysely<Schema>, caps: DialectCapabilities, name: string): Promise<boolean> {
  const query =
    caps.indexCatalogue === 'sqlite_master'
      ? sql<{ found: number }>`select 1 as found from sqlite_master where type = 'index' and name = ${name}`
      : sql<{ found: number }>`select 1 as found from pg_indexes where schemaname = current_schema() and indexname = ${name}`;
  return (await query.execute(db)).rows.length > 0;
}
