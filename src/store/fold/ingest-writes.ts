import type SQLiteDatabase from 'better-sqlite3';
import { sql, type Compilable, type Kysely, type Transaction } from 'kysely';
import { SHARED_SCOPE } from '../../domain/visibility.ts';
import { holdAdvisoryLock } from '../advisory-locks.ts';
import { POSTGRES } from '../dialect.ts';
import type { Schema } from '../schema.ts';

/** A row of `events`, as inserted. */
export type EventRow = Omit<Schema['events'], 'id'>;

/** Tables of distinct (scope, key, member) triples: for exact distinct counts, and numbers' hashes. */
export type SetTable = 'number_sources' | 'ip_numbers' | 'number_hashes' | 'range_sources' | 'range_nodes';
/** Tables of one wide row per scope and key: totals, first and last sighting, named counts. */
export type AggregateTable = 'number_aggregates' | 'ip_aggregates';

/** A wide aggregate row as kept; its three maps of named counts as JSON text. */
export interface AggregateRow {
  scope: string;
  key: string;
  seen_count: number;
  first_seen: string;
  last_seen: string;
  distinct_count: number;
  counts: [string, string, string];
  /** When the fold first made the row, and last changed it (migration 018; NULL on rows older than it). */
  published_at: string | null;
  changed_at: string | null;
}

/**
 * What a fold step adds to one number range's row (migration 027): every column is added to the
 * kept one, but the first and last sightings, which widen it. Added in SQL, not read and merged:
 * a range row has no map of named counts to merge, so a step writes it without reading it.
 */
export interface RangeAddition {
  scope: string;
  range_prefix: string;
  seen_count: number;
  first_seen: string;
  last_seen: string;
  /** Numbers of the range new to the scope (their number rows were made by this step). */
  number_count: number;
  /** Source addresses new to the range in the scope (range_sources). */
  source_ip_count: number;
  /** Honeypot nodes new to the range in the scope (range_nodes). */
  node_count: number;
  invite_count: number;
}

/** The columns of a RangeAddition, in the order the statements take them. */
const RANGE_COLUMNS = ['scope', 'range_prefix', 'seen_count', 'first_seen', 'last_seen', 'number_count', 'source_ip_count', 'node_count', 'invite_count'] as const;

/** How a kept range row takes an addition: counts add up, the sightings widen. Text both stores run alike. */
const RANGE_MERGE = {
  seen_count: sql`range_aggregates.seen_count + excluded.seen_count`,
  first_seen: sql`case when excluded.first_seen < range_aggregates.first_seen then excluded.first_seen else range_aggregates.first_seen end`,
  last_seen: sql`case when excluded.last_seen > range_aggregates.last_seen then excluded.last_seen else range_aggregates.last_seen end`,
  number_count: sql`range_aggregates.number_count + excluded.number_count`,
  source_ip_count: sql`range_aggregates.source_ip_count + excluded.source_ip_count`,
  node_count: sql`range_aggregates.node_count + excluded.node_count`,
  invite_count: sql`range_aggregates.invite_count + excluded.invite_count`,
};

/**
 * The writes of one ingest transaction. The stores differ in what is fast: SQLite runs
 * in-process, so one precompiled statement per row costs only the B-tree work, while
 * PostgreSQL pays a round trip per statement, so all the rows of a table travel together in
 * one statement, as arrays.
 */
export interface IngestWrites {
  /** Opens an ingest transaction: on PostgreSQL it holds the fold's barrier shared (src/store/fold/aggregate-fold.ts). */
  beginIngest(trx: Transaction<Schema>): Promise<void>;
  /** Stores the events not stored before (by account and uuid); per row, whether it was new. */
  storeNew(trx: Transaction<Schema>, rows: EventRow[]): Promise<boolean[]>;
  /** The content hashes of stored events of one account, by uuid. */
  storedHashes(trx: Transaction<Schema>, accountId: string, uuids: string[]): Promise<Array<{ event_uuid: string; content_hash: string }>>;
  /** Adds (scope, key, member) triples to a distinct set; per row, whether it was new. */
  addMembers(trx: Transaction<Schema>, table: SetTable, rows: Array<[string, string, string]>): Promise<boolean[]>;
  /** The kept rows of these (scope, key) pairs; pairs without a row are absent. */
  readAggregates(trx: Transaction<Schema>, table: AggregateTable, keys: Array<[string, string]>): Promise<AggregateRow[]>;
  /**
   * Writes whole rows, replacing those kept, and logs each shared row's change in
   * `shared_changes` (migration 024: what the TAXII publisher reads).
   */
  writeAggregates(trx: Transaction<Schema>, table: AggregateTable, rows: AggregateRow[]): Promise<void>;
  /**
   * Adds to the number ranges' rows, making those not kept; the fold names each (scope, range)
   * once per call. Each shared range's change is logged in `shared_changes` as of `changed`.
   */
  addToRanges(trx: Transaction<Schema>, rows: RangeAddition[], changed: string): Promise<void>;
}

type Db = Kysely<Schema>;
type Values = Record<string, unknown>;

/** Where each part of an AggregateRow lives in its table. */
const AGGREGATE_COLUMNS = {
  number_aggregates: { key: 'number_key', distinct: 'source_ip_count', counts: ['sip_methods', 'forms', 'nodes'] },
  ip_aggregates: { key: 'source_ip', distinct: 'called_number_count', counts: ['user_agents', 'transports', 'nodes'] },
} as const;

const SET_COLUMNS: Record<SetTable, [string, string, string]> = {
  number_sources: ['scope', 'number_key', 'source_ip'],
  ip_numbers: ['scope', 'source_ip', 'number_key'],
  number_hashes: ['scope', 'number_hash', 'number_key'],
  range_sources: ['scope', 'range_prefix', 'source_ip'],
  range_nodes: ['scope', 'range_prefix', 'node_id'],
};

const aggregateValues = (table: AggregateTable, r: AggregateRow): Values => {
  const { key, distinct, counts } = AGGREGATE_COLUMNS[table];
  return {
    scope: r.scope,
    [key]: r.key,
    seen_count: r.seen_count,
    first_seen: r.first_seen,
    last_seen: r.last_seen,
    [distinct]: r.distinct_count,
    [counts[0]]: r.counts[0],
    [counts[1]]: r.counts[1],
    [counts[2]]: r.counts[2],
    published_at: r.published_at,
    changed_at: r.changed_at,
  };
};
const aggregateRow = (table: AggregateTable, v: Values): AggregateRow => {
  const { key, distinct, counts } = AGGREGATE_COLUMNS[table];
  return {
    scope: v.scope as string,
    key: v[key] as string,
    seen_count: Number(v.seen_count),
    first_seen: v.first_seen as string,
    last_seen: v.last_seen as string,
    distinct_count: Number(v[distinct]),
    counts: [v[counts[0]] as string, v[counts[1]] as string, v[counts[2]] as string],
    published_at: (v.published_at as string | null | undefined) ?? null,
    changed_at: (v.changed_at as string | null | undefined) ?? null,
  };
};
const tripleValues = (columns: readonly string[], row: readonly unknown[]): Values => Object.fromEntries(columns.map((c, i) => [c, row[i]]));

/**
 * SQLite's statements of an ingest, built by Kysely and compiled once for one row (see
 * SqliteRowIngestWrites).
 */
const statements = {
  /** SQLite: the events table's own unique (account, uuid) index tells new from stored. */
  insertNewEvents: (db: Db, rows: Values[]) =>
    db
      .insertInto('events')
      .values(rows as never)
      .onConflict((oc) => oc.columns(['account_id', 'event_uuid']).doNothing()),
  addMembers: (table: SetTable) => (db: Db, rows: Values[]) => (db as Kysely<any>).insertInto(table).values(rows).onConflict((oc) => oc.doNothing()),
  writeAggregates: (table: AggregateTable) => (db: Db, rows: Values[]) => {
    const { key, distinct, counts } = AGGREGATE_COLUMNS[table];
    return (db as Kysely<any>)
      .insertInto(table)
      .values(rows)
      .onConflict((oc) =>
        oc.columns(['scope', key]).doUpdateSet((eb) => Object.fromEntries(['seen_count', 'first_seen', 'last_seen', distinct, ...counts, 'published_at', 'changed_at'].map((c) => [c, eb.ref(`excluded.${c}`)]))),
      );
  },
  addToRanges: (db: Db, rows: Values[]) =>
    db
      .insertInto('range_aggregates')
      .values(rows as never)
      .onConflict((oc) => oc.columns(['scope', 'range_prefix']).doUpdateSet(RANGE_MERGE as never)),
  logSharedChanges: (db: Db, rows: Values[]) => db.insertInto('shared_changes').values(rows as never).onConflict((oc) => oc.doNothing()),
  readAggregate: (table: AggregateTable) => (db: Db, [row]: Values[]) =>
    (db as Kysely<any>)
      .selectFrom(table)
      .selectAll()
      .where('scope', '=', row!.scope)
      .where(AGGREGATE_COLUMNS[table].key, '=', row![AGGREGATE_COLUMNS[table].key]),
};

/** Rows per multi-row statement: within both stores' bound-parameter limits for 20 columns. */
const ROWS_PER_STATEMENT = 500;

const identity = (...parts: unknown[]) => parts.join('\u0000');

/**
 * PostgreSQL: one statement per table and ingest, whatever the number of rows, each taking its
 * rows as one array per column (`insert … select * from unnest($1::text[], …)`) and answering
 * with the identities it inserted. Its text is the same for one row or ten thousand, so neither
 * Kysely nor PostgreSQL builds and parses a statement of thousands of parameters per ingest, as
 * multi-row VALUES lists of 500 rows did (bench/suites/store-ceiling-postgres.ts writes the same way).
 */
export class ArrayIngestWrites implements IngestWrites {
  /**
   * Holds the fold's barrier shared: the fold (aggregate-fold.ts) takes it exclusively for one
   * statement, which waits until no ingest is in flight, so every event id handed out by then
   * belongs to a transaction that has ended and the fold may pass them all. Without it, an id
   * handed out early but committed late would land behind the fold's position and never count.
   */
  async beginIngest(trx: Transaction<Schema>): Promise<void> {
    await holdAdvisoryLock(trx, POSTGRES, 'foldBarrier', 'shared');
  }

  /**
   * A partitioned table's unique keys must hold the partition column, so the identities live
   * in `event_ids` (unpartitioned, across all months): claimed first, then the new events stored.
   */
  async storeNew(trx: Transaction<Schema>, rows: EventRow[]): Promise<boolean[]> {
    if (rows.length === 0) return [];
    const claimed = await sql<{ account_id: string; event_uuid: string }>`
      ${insertArrays('event_ids', ['account_id', 'event_uuid', 'content_hash', 'event_time'], rows)}
      on conflict (account_id, event_uuid) do nothing
      returning account_id, event_uuid`.execute(trx);
    const inserted = new Set(claimed.rows.map((row) => identity(row.account_id, row.event_uuid)));
    const isNew = rows.map((row) => inserted.has(identity(row.account_id, row.event_uuid)));
    const fresh = rows.filter((_, i) => isNew[i]);
    if (fresh.length > 0) await insertArrays('events', Object.keys(fresh[0]!), fresh).execute(trx);
    return isNew;
  }

  /**
   * One probe of the primary key per uuid, whatever the statistics say. An import grows
   * `event_ids` faster than it is analysed, and on the statistics of a smaller table the
   * planner read every row of the account for each IN list or join (112 ms a call at 200,000
   * events: a re-run of a 200,000-event import spent 45 s here). A lateral subquery with a LIMIT
   * is not flattened into a join, so it stays a lookup per uuid.
   */
  async storedHashes(trx: Transaction<Schema>, accountId: string, uuids: string[]) {
    const { rows } = await sql<{ event_uuid: string; content_hash: string }>`select u.event_uuid, h.content_hash
      from unnest(cast(${uuids} as text[])) as u(event_uuid)
      cross join lateral (select e.content_hash from event_ids e where e.account_id = ${accountId} and e.event_uuid = u.event_uuid limit 1) as h`.execute(trx);
    return rows;
  }

  async addMembers(trx: Transaction<Schema>, table: SetTable, rows: Array<[string, string, string]>): Promise<boolean[]> {
    if (rows.length === 0) return [];
    const columns = SET_COLUMNS[table];
    const returned = await sql<Values>`
      ${insertArrays(table, columns, rows.map((row) => tripleValues(columns, row)))}
      on conflict do nothing
      returning ${columnList(columns)}`.execute(trx);
    const inserted = new Set(returned.rows.map((row) => identity(...columns.map((c) => row[c]))));
    return rows.map((row) => inserted.has(identity(...row)));
  }

  /**
   * One statement for all the keys, joined to two arrays: a row-value IN list of a few hundred
   * pairs took PostgreSQL seconds to plan (measured: a fold step of 2,000 events took 2 s,
   * nearly all of it in that statement).
   */
  async readAggregates(trx: Transaction<Schema>, table: AggregateTable, keys: Array<[string, string]>): Promise<AggregateRow[]> {
    if (keys.length === 0) return [];
    const { key } = AGGREGATE_COLUMNS[table];
    const { rows } = await sql<Values>`select t.* from ${sql.table(table)} t
      join unnest(cast(${keys.map(([scope]) => scope)} as text[]), cast(${keys.map(([, value]) => value)} as text[])) as k(scope, value)
        on t.scope = k.scope and t.${sql.ref(key)} = k.value`.execute(trx);
    return rows.map((row) => aggregateRow(table, row));
  }

  /** Whole rows, replacing those kept; the fold names each (scope, key) once per call. */
  async writeAggregates(trx: Transaction<Schema>, table: AggregateTable, rows: AggregateRow[]): Promise<void> {
    if (rows.length === 0) return;
    const { key } = AGGREGATE_COLUMNS[table];
    const values = rows.map((row) => aggregateValues(table, row));
    const columns = Object.keys(values[0]!);
    // Everything but the (scope, key) it is keyed by.
    const replaced = columns.filter((c) => c !== 'scope' && c !== key).map((c) => sql`${sql.ref(c)} = excluded.${sql.ref(c)}`);
    // The shared rows' changes logged by the same statement: one round trip, as before the log.
    await sql`
      with written as (
        ${insertArrays(table, columns, values)}
        on conflict (scope, ${sql.ref(key)}) do update set ${sql.join(replaced)}
        returning scope, ${sql.ref(key)} as key, changed_at)
      insert into shared_changes (aggregates, changed, key)
      select cast(${table} as text), changed_at, key from written where scope = ${SHARED_SCOPE} and changed_at is not null
      on conflict do nothing`.execute(trx);
  }

  async addToRanges(trx: Transaction<Schema>, rows: RangeAddition[], changed: string): Promise<void> {
    if (rows.length === 0) return;
    const merge = Object.entries(RANGE_MERGE).map(([column, value]) => sql`${sql.ref(column)} = ${value}`);
    const shared = rows.filter((row) => row.scope === SHARED_SCOPE).map((row) => row.range_prefix);
    await sql`${insertArrays('range_aggregates', RANGE_COLUMNS, rows)} on conflict (scope, range_prefix) do update set ${sql.join(merge)}`.execute(trx);
    if (shared.length === 0) return;
    await sql`insert into shared_changes (aggregates, changed, key)
      select 'range_aggregates', cast(${changed} as text), k from unnest(cast(${shared} as text[])) as t(k)
      on conflict do nothing`.execute(trx);
  }
}

/** Columns holding counts; every other column an ingest writes is text. */
const COUNT_COLUMNS = new Set(['seen_count', 'source_ip_count', 'called_number_count', 'number_count', 'node_count', 'invite_count']);

/**
 * `insert into table (columns) select * from unnest(…)`: the rows as one array per column, in
 * the order of `columns`, each cast to its column's type.
 */
function insertArrays(table: string, columns: readonly string[], rows: readonly object[]) {
  const arrays = columns.map((column) => {
    const values = rows.map((row) => (row as Values)[column] ?? null);
    return COUNT_COLUMNS.has(column) ? sql`cast(${values} as bigint[])` : sql`cast(${values} as text[])`;
  });
  return sql`insert into ${sql.table(table)} (${columnList(columns)}) select * from unnest(${sql.join(arrays)})`;
}

function columnList(columns: readonly string[]) {
  return sql.join(columns.map((c) => sql.ref(c)));
}

/** One statement compiled for a single row, and which column each of its parameters takes. */
interface RowStatement {
  statement: SQLiteDatabase.Statement;
  columns: string[];
}

/**
 * SQLite: each statement is compiled once by Kysely for one row and prepared on the
 * connection; an ingest runs it per row. Calls go straight to the connection, which is safe
 * because the caller's transaction holds it (SQLite has one connection, and Kysely's driver
 * lends it to one transaction at a time) and better-sqlite3 runs each call to completion.
 * Measured against Kysely-built multi-row statements on a 1,000-event batch: the building
 * and compiling of those statements cost more than SQLite's own work.
 */
export class SqliteRowIngestWrites implements IngestWrites {
  private readonly native: SQLiteDatabase.Database;
  private readonly db: Db;
  private readonly prepared = new Map<string, RowStatement>();

  constructor(native: SQLiteDatabase.Database, db: Db) {
    this.native = native;
    this.db = db;
  }

  async beginIngest(): Promise<void> {
    // One writer at a time: its ids commit in order, and the fold needs no barrier.
  }

  async storeNew(_trx: Transaction<Schema>, rows: EventRow[]): Promise<boolean[]> {
    if (rows.length === 0) return [];
    const { statement, columns } = this.rowStatement('insertNewEvents', Object.keys(rows[0]!), statements.insertNewEvents);
    return rows.map((row) => statement.run(columns.map((c) => row[c as keyof EventRow])).changes === 1);
  }

  async storedHashes(trx: Transaction<Schema>, accountId: string, uuids: string[]) {
    return trx.selectFrom('events').select(['event_uuid', 'content_hash']).where('account_id', '=', accountId).where('event_uuid', 'in', uuids).execute();
  }

  async addMembers(_trx: Transaction<Schema>, table: SetTable, rows: Array<[string, string, string]>): Promise<boolean[]> {
    const { statement } = this.rowStatement(table, SET_COLUMNS[table], statements.addMembers(table), true);
    return rows.map((row) => statement.run(row).changes === 1);
  }

  async readAggregates(_trx: Transaction<Schema>, table: AggregateTable, keys: Array<[string, string]>): Promise<AggregateRow[]> {
    const { statement, columns } = this.rowStatement(`${table}/read`, ['scope', AGGREGATE_COLUMNS[table].key], statements.readAggregate(table), true);
    const rows: AggregateRow[] = [];
    for (const pair of keys) {
      const found = statement.get(pair.slice(0, columns.length)) as Values | undefined;
      if (found) rows.push(aggregateRow(table, found));
    }
    return rows;
  }

  async writeAggregates(_trx: Transaction<Schema>, table: AggregateTable, rows: AggregateRow[]): Promise<void> {
    const sample = aggregateValues(table, { scope: '', key: '', seen_count: 0, first_seen: '', last_seen: '', distinct_count: 0, counts: ['', '', ''], published_at: null, changed_at: null });
    const { statement, columns } = this.rowStatement(table, Object.keys(sample), statements.writeAggregates(table));
    const log = this.rowStatement('shared_changes', ['aggregates', 'changed', 'key'], statements.logSharedChanges, true).statement;
    for (const row of rows) {
      const values = aggregateValues(table, row);
      statement.run(columns.map((c) => values[c]));
      if (row.scope === SHARED_SCOPE && row.changed_at !== null) log.run(table, row.changed_at, row.key);
    }
  }

  async addToRanges(_trx: Transaction<Schema>, rows: RangeAddition[], changed: string): Promise<void> {
    const { statement, columns } = this.rowStatement('range_aggregates', RANGE_COLUMNS, statements.addToRanges);
    const log = this.rowStatement('shared_changes', ['aggregates', 'changed', 'key'], statements.logSharedChanges, true).statement;
    for (const row of rows) {
      statement.run(columns.map((c) => row[c as keyof RangeAddition]));
      if (row.scope === SHARED_SCOPE) log.run('range_aggregates', changed, row.range_prefix);
    }
  }

  /**
   * The statement `build` makes for one row of `columns`, prepared once. With `inColumnOrder`
   * the caller passes values in the order of `columns`, which must then be the parameters' order.
   */
  private rowStatement(name: string, columns: readonly string[], build: (db: Db, rows: Values[]) => Compilable<unknown>, inColumnOrder = false): RowStatement {
    let prepared = this.prepared.get(name);
    if (!prepared) {
      // Compile with a marker per column, then read off which column each parameter takes.
      const markers = columns.map((column) => ({ column }));
      const compiled = build(this.db, [Object.fromEntries(markers.map((m) => [m.column, m]))]).compile();
      const order = compiled.parameters.map((p) => {
        const marker = markers.find((m) => m === p);
        if (!marker) throw new Error(`${name}: a parameter that is not a row value`);
        return marker.column;
      });
      if (inColumnOrder && order.join() !== columns.join()) throw new Error(`${name}: parameters are not in column order`);
      prepared = { statement: this.native.prepare(compiled.sql), columns: order };
      this.prepared.set(name, prepared);
    }
    return prepared;
  }
}

/** Splits rows so that no statement exceeds the stores' bound-parameter limits. */
export function chunks<T>(items: T[], size = ROWS_PER_STATEMENT): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
