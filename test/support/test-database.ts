import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { eventually } from './eventually.ts';

/** Which store this test run uses: set per vitest project (see vitest.config.ts). */
export const TEST_STORE = process.env.TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';

/** The PostgreSQL server tests create their databases on. */
export const POSTGRES_ADMIN_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A store made for one test file, and how to remove it. */
export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/** A fresh, empty store of the run's kind: a temp SQLite file, or a new PostgreSQL database. */
export async function freshDatabase(): Promise<TestDatabase> {
  if (TEST_STORE === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'tollwatch-test-'));
    return { url: `sqlite:${join(dir, 'store.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  return postgresDatabase();
}

/** A new PostgreSQL database on the tests' server, whatever store the run uses, and how to remove it. */
export async function postgresDatabase(): Promise<TestDatabase> {
  const name = `tollwatch_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
      await client.connect();
      try {
        // A pool's end() resolves once its clients are told to end, not once their sockets have
        // closed: forcing the drop at once terminates connections still closing, whose clients
        // have no error listener left, and the server's notice becomes an uncaught error in the
        // test's worker (CIF: "terminating connection due to administrator command"). So wait
        // for them to leave; force only what lingers after that.
        const connections = async () => Number((await client.query<{ n: string }>('select count(*) as n from pg_stat_activity where datname = $1', [name])).rows[0]!.n);
        await eventually(`the connections to ${name} to close`, connections, (n) => n === 0, { timeoutMs: 5000 }).catch(() => undefined);
        await client.query(`drop database if exists ${name} with (force)`);
      } finally {
        await client.end();
      }
    },
  };
}
