import type SQLiteDatabase from 'better-sqlite3';
import type { Compilable, Kysely, Transaction } from 'kysely';
import type { Schema } from './schema.ts';

/** A row of `event_ids`: who stored which uuid, with what content. */
export interface EventIdRow {
  account_id: string;
  event_uuid: string;
  content_hash: string;
  event_time: string;
}

/** A row of `events`, as inserted. */
export type EventRow = Omit<Schema['events'], 'id'>;

/** Tables of distinct (scope, key, member) triples, kept for exact distinct counts. */
export type SetTable = 'number_sources' | 'ip_numbers';
/** Tables of per-key totals with first and last sighting. */
export type SpanTable = 'number_stats' | 'ip_stats';
/** Tables counting a (scope, key, name) triple. */
export type CountTable = 'number_methods' | 'number_forms' | 'ip_user_agents' | 'ip_transports';

/** A per-key delta for a span table: counts add up, the span widens. */
export interface SpanRow {
  scope: string;
  key: string;
  count: number;
  first: string;
  last: string;
  /** Members new to the key's distinct set. */
  fresh: number;
}

/**
 * The writes of one ingest transaction. The stores differ in what is fast: SQLite runs
 * in-process, so one precompiled statement per row costs only the B-tree work, while
 * PostgreSQL pays a round trip per statement, so rows travel together in multi-row statements.
 * Both run the same SQL, built by Kysely from the builders below.
 */
export interface IngestWrites {
  /** Records event identities; per row, whether it was new (not stored before). */
  claimIds(trx: Transaction<Schema>, rows: EventIdRow[]): Promise<boolean[]>;
  insertEvents(trx: Transaction<Schema>, rows: EventRow[]): Promise<void>;
  /** Adds (scope, key, member) triples to a distinct set; per row, whether it was new. */
  addMembers(trx: Transaction<Schema>, table: SetTable, rows: Array<[string, string, string]>): Promise<boolean[]>;
  addSpans(trx: Transaction<Schema>, table: SpanTable, rows: SpanRow[]): Promise<void>;
  addCounts(trx: Transaction<Schema>, table: CountTable, rows: Array<[string, string, string, number]>): Promise<void>;
}

type Db = Kysely<Schema>;
type Values = Record<string, unknown>;

const SPAN_COLUMNS = {
  number_stats: { key: 'number_key', distinct: 'source_ip_count' },
  ip_stats: { key: 'source_ip', distinct: 'called_number_count' },
} as const;

const COUNT_COLUMNS: Record<CountTable, [string, string, string]> = {
  number_methods: ['scope', 'number_key', 'sip_method'],
  number_forms: ['scope', 'number_key', 'written'],
  ip_user_agents: ['scope', 'source_ip', 'user_agent'],
  ip_transports: ['scope', 'source_ip', 'transport'],
};

const SET_COLUMNS: Record<SetTable, [string, string, string]> = {
  number_sources: ['scope', 'number_key', 'source_ip'],
  ip_numbers: ['scope', 'source_ip', 'number_key'],
};

const spanValues = (table: SpanTable, r: SpanRow): Values => ({
  scope: r.scope,
  [SPAN_COLUMNS[table].key]: r.key,
  seen_count: r.count,
  first_seen: r.first,
  last_seen: r.last,
  [SPAN_COLUMNS[table].distinct]: r.fresh,
});
const tripleValues = (columns: readonly string[], row: readonly unknown[]): Values => Object.fromEntries(columns.map((c, i) => [c, row[i]]));

/**
 * The statements of an ingest, for any number of rows. Their SQL is the same for both stores
 * and for one row or many; `returning` names the identifying columns of inserted rows where
 * the store reports them that way.
 */
const statements = {
  claimIds: (db: Db, rows: Values[], returning: boolean) => {
    const query = db
      .insertInto('event_ids')
      .values(rows as never)
      .onConflict((oc) => oc.columns(['account_id', 'event_uuid']).doNothing());
    return returning ? query.returning(['account_id', 'event_uuid']) : query;
  },
  insertEvents: (db: Db, rows: Values[]) => db.insertInto('events').values(rows as never),
  addMembers: (table: SetTable) => (db: Db, rows: Values[], returning: boolean) => {
    const query = (db as Kysely<any>).insertInto(table).values(rows).onConflict((oc) => oc.doNothing());
    return returning ? query.returning(SET_COLUMNS[table]) : query;
  },
  addSpans: (table: SpanTable) => (db: Db, rows: Values[]) => {
    const { key, distinct } = SPAN_COLUMNS[table];
    return (db as Kysely<any>)
      .insertInto(table)
      .values(rows)
      .onConflict((oc) =>
        oc.columns(['scope', key]).doUpdateSet((eb) => ({
          seen_count: eb(`${table}.seen_count`, '+', eb.ref('excluded.seen_count')),
          [distinct]: eb(`${table}.${distinct}`, '+', eb.ref(`excluded.${distinct}`)),
          first_seen: eb.case().when('excluded.first_seen', '<', eb.ref(`${table}.first_seen`)).then(eb.ref('excluded.first_seen')).else(eb.ref(`${table}.first_seen`)).end(),
          last_seen: eb.case().when('excluded.last_seen', '>', eb.ref(`${table}.last_seen`)).then(eb.ref('excluded.last_seen')).else(eb.ref(`${table}.last_seen`)).end(),
        })),
      );
  },
  addCounts: (table: CountTable) => (db: Db, rows: Values[]) =>
    (db as Kysely<any>)
      .insertInto(table)
      .values(rows)
      .onConflict((oc) => oc.columns(COUNT_COLUMNS[table]).doUpdateSet((eb) => ({ count: eb(`${table}.count`, '+', eb.ref('excluded.count')) }))),
};

/** Rows per statement: within both stores' bound-parameter limits for 20 columns. */
const ROWS_PER_STATEMENT = 500;

const identity = (...parts: unknown[]) => parts.join('\u0000');

/** PostgreSQL: multi-row statements, each answering with the identities it inserted. */
export class MultiRowIngestWrites implements IngestWrites {
  async claimIds(trx: Transaction<Schema>, rows: EventIdRow[]): Promise<boolean[]> {
    const inserted = new Set<string>();
    for (const chunk of chunks(rows as unknown as Values[])) {
      const returned = (await statements.claimIds(trx, chunk, true).execute()) as Array<{ account_id: string; event_uuid: string }>;
      for (const row of returned) inserted.add(identity(row.account_id, row.event_uuid));
    }
    return rows.map((row) => inserted.has(identity(row.account_id, row.event_uuid)));
  }

  async insertEvents(trx: Transaction<Schema>, rows: EventRow[]): Promise<void> {
    for (const chunk of chunks(rows as unknown as Values[])) await statements.insertEvents(trx, chunk).execute();
  }

  async addMembers(trx: Transaction<Schema>, table: SetTable, rows: Array<[string, string, string]>): Promise<boolean[]> {
    const columns = SET_COLUMNS[table];
    const inserted = new Set<string>();
    for (const chunk of chunks(rows.map((row) => tripleValues(columns, row)))) {
      const returned = (await statements.addMembers(table)(trx, chunk, true).execute()) as Values[];
      for (const row of returned) inserted.add(identity(...columns.map((c) => row[c])));
    }
    return rows.map((row) => inserted.has(identity(...row)));
  }

  async addSpans(trx: Transaction<Schema>, table: SpanTable, rows: SpanRow[]): Promise<void> {
    for (const chunk of chunks(rows.map((row) => spanValues(table, row)))) await statements.addSpans(table)(trx, chunk).execute();
  }

  async addCounts(trx: Transaction<Schema>, table: CountTable, rows: Array<[string, string, string, number]>): Promise<void> {
    const columns = [...COUNT_COLUMNS[table], 'count'];
    for (const chunk of chunks(rows.map((row) => tripleValues(columns, row)))) await statements.addCounts(table)(trx, chunk).execute();
  }
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

  async claimIds(_trx: Transaction<Schema>, rows: EventIdRow[]): Promise<boolean[]> {
    const { statement, columns } = this.rowStatement('claimIds', ['account_id', 'event_uuid', 'content_hash', 'event_time'], (db, r) => statements.claimIds(db, r, false));
    return rows.map((row) => statement.run(columns.map((c) => row[c as keyof EventIdRow])).changes === 1);
  }

  async insertEvents(_trx: Transaction<Schema>, rows: EventRow[]): Promise<void> {
    if (rows.length === 0) return;
    const { statement, columns } = this.rowStatement('insertEvents', Object.keys(rows[0]!), statements.insertEvents);
    for (const row of rows) statement.run(columns.map((c) => row[c as keyof EventRow]));
  }

  async addMembers(_trx: Transaction<Schema>, table: SetTable, rows: Array<[string, string, string]>): Promise<boolean[]> {
    const { statement } = this.rowStatement(table, SET_COLUMNS[table], (db, r) => statements.addMembers(table)(db, r, false), true);
    return rows.map((row) => statement.run(row).changes === 1);
  }

  async addSpans(_trx: Transaction<Schema>, table: SpanTable, rows: SpanRow[]): Promise<void> {
    const sample = spanValues(table, { scope: '', key: '', count: 0, first: '', last: '', fresh: 0 });
    const { statement, columns } = this.rowStatement(table, Object.keys(sample), statements.addSpans(table));
    for (const row of rows) {
      const values = spanValues(table, row);
      statement.run(columns.map((c) => values[c]));
    }
  }

  async addCounts(_trx: Transaction<Schema>, table: CountTable, rows: Array<[string, string, string, number]>): Promise<void> {
    const { statement } = this.rowStatement(table, [...COUNT_COLUMNS[table], 'count'], statements.addCounts(table), true);
    for (const row of rows) statement.run(row);
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
