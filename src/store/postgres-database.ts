import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { PostgresChangeNotices } from './change-notices.ts';
import { POSTGRES } from './dialect.ts';
import { ArrayIngestWrites } from './fold/ingest-writes.ts';
import type { StatementRunner } from './prepared-query.ts';
import type { Schema } from './schema.ts';
import type { Database } from './database-interface.ts';

/** A PostgreSQL store as a `Database`: a pg pool under Kysely, every statement bounded by the query timeout. */
export function openPostgres(url: string, queryTimeoutMs: number): Database {
  // Fail fast while the server is away: requests answer 503 quickly instead of queueing.
  const pool = quiet(new pg.Pool({ connectionString: url, max: 10, connectionTimeoutMillis: 2000, query_timeout: queryTimeoutMs }));
  const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool }) });
  // No query timeout; TCP keepalives notice a server that is gone rather than slow.
  const unhurried = new Kysely<Schema>({ dialect: new PostgresDialect({ pool: quiet(new pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: 2000, keepAlive: true })) }) });
  return {
    db,
    unhurried,
    caps: POSTGRES,
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    externalChangeCounter: undefined,
    changeNotices: (log) => new PostgresChangeNotices(url, pool, log),
    ingestWrites: new ArrayIngestWrites(),
    intakeOnWriterThread: false,
    statements: namedStatements(pool),
    onlineBackup: undefined,
    refreshPlannerStatistics: undefined,
    close: async () => {
      await Promise.all([db.destroy(), unhurried.destroy()]);
    },
  };
}

/** How long a statement on `Database.db` may take on PostgreSQL before it fails (a 503 to a request). */
export const QUERY_TIMEOUT_MS = 15_000;

function quiet(pool: pg.Pool): pg.Pool {
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  // Nor one checked out between two statements (a transaction while its JavaScript runs): the
  // server's "terminating connection" then arrives with no query to fail, and a client with no
  // listener throws it. Its next statement fails instead, and the pool drops it on release.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/**
 * PostgreSQL: each statement is a named prepared statement, parsed and planned once per
 * connection instead of on every lookup, and sent straight to the pool.
 */
function namedStatements(pool: pg.Pool): StatementRunner {
  let count = 0;
  return {
    prepare<Row>(compiled: { sql: string }) {
      const name = `tollwatch_${++count}`;
      return async (parameters) => (await pool.query<Row & pg.QueryResultRow>({ name, text: compiled.sql, values: parameters as unknown[] })).rows;
    },
  };
}
