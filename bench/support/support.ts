import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.ts';
import { newKeySecret } from '../../src/domain/accounts/key-sealing.ts';
import { SERVER_NODE_FLAGS } from '../../src/node-flags.ts';
import { createServices } from '../../src/services.ts';

/** Shared by the benchmark and the soak: processes to measure, and stores to measure them on. */
export const ROOT = new URL('../..', import.meta.url).pathname;

export const log = (line: string) => process.stderr.write(`${line}\n`);

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export function rssMiB(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Math.round(Number(match[1]) / 1024) : undefined;
}

/** V8's heap in use and its major collections so far, read from the server's own /metrics. */
export async function heapOf(url: string): Promise<{ heap: number; majorCollections: number }> {
  const text = await fetch(`${url}/metrics`).then((r) => r.text(), () => '');
  const value = (series: string) => Number(new RegExp(`^${series} (\\S+)`, 'm').exec(text)?.[1] ?? 0);
  return {
    heap: Math.round(value('nodejs_heap_size_used_bytes') / 2 ** 20),
    majorCollections: value('nodejs_gc_duration_seconds_count\\{kind="major"\\}'),
  };
}

/** CPU time (user + system) a process has used so far, in microseconds. */
export function cpuMicros(pid: number | undefined): number {
  if (!pid) return 0;
  // Fields 14 and 15 of /proc/<pid>/stat, after the command name in parentheses, in clock ticks (100 per second).
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

async function waitFor(url: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`${url}: process exited with ${child.exitCode}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} never became ready`);
}

/**
 * Starts `script` (a server) in a process of its own. With BENCH_PROF=<dir> in the environment,
 * each of its threads writes a V8 CPU profile there when it exits (NODE_OPTIONS may not carry
 * --cpu-prof): how the soak's server was profiled (docs/performance.md, "TAXII collections").
 */
export async function startProcess(script: string, env: Record<string, string>, readyPath: string) {
  const port = await freePort();
  const profile = process.env.BENCH_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROF}`] : [];
  const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, ...profile, join(ROOT, script)], {
    env: { ...process.env, LOG_LEVEL: 'warn', ...env, PORT: String(port), HOST: '127.0.0.1', TOLLWATCH_PUBLIC_URL: `http://127.0.0.1:${port}` },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${url}${readyPath}`, child);
  return {
    url,
    child,
    async stop() {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

/**
 * Opens a store, gives it an unthrottled plan, an account and a client; returns the credentials.
 * A PostgreSQL store needs its key secret; a SQLite one uses the key file beside it.
 */
/** The benches' plan: no limit a bench would reach. */
export const BENCH_PLAN = {
  name: 'bench',
  maySubmit: true,
  lookups: { limit: 2_000_000_000, windowSeconds: 1 },
  submissions: { limit: 2_000_000_000, windowSeconds: 1 },
  maxClients: null,
  eventReads: { limit: 1e9, windowSeconds: 3600 },
};

export async function prepareStore(databaseUrl: string, keySecret?: string) {
  return benchClient(databaseUrl, keySecret);
}

/**
 * A client of a new account on the bench plan (saved first): untrusted, as prepareStore's, or
 * `trusted`, a fleet whose events everyone's lookups count.
 */
export async function benchClient(databaseUrl: string, keySecret?: string, options: { trusted?: boolean; name?: string } = {}) {
  const env = { DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', ...(keySecret ? { TOLLWATCH_KEY_SECRET: keySecret } : {}) };
  const services = await createServices(loadConfig(env, false));
  try {
    await services.plans.save(BENCH_PLAN);
    const account = await services.accounts.createAccount({ name: `${options.name ?? 'bench'} ${randomUUID().slice(0, 8)}`, plan: 'bench', trusted: options.trusted ?? false });
    return await services.accounts.createClient({ accountId: account.account_id, name: 'bench' });
  } finally {
    await services.close();
  }
}

export async function tokenFor(url: string, client: { client_id: string; client_secret: string }): Promise<string> {
  const res = await fetch(`${url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_id: client.client_id, client_secret: client.client_secret, audience: `${url}/api`, grant_type: 'client_credentials' }),
  });
  return ((await res.json()) as { access_token: string }).access_token;
}


/** Up to `limit` numbers the store has seen (in the shared data set), for "found" lookups. */
export async function knownNumbers(databaseUrl: string, limit = 1000): Promise<string[]> {
  const { openDatabase } = await import('../../src/store/database.ts');
  const database = await openDatabase(databaseUrl);
  try {
    const rows = await database.db.selectFrom('number_aggregates').select('number_key').where('scope', '=', '*shared*').limit(limit).execute();
    return rows.map((r) => r.number_key);
  } finally {
    await database.close();
  }
}

/** A valid event as a SentryPeer node would post it; `fields` replace its defaults. */
export function benchEventFields(fields: Record<string, string> = {}): Record<string, string> {
  return {
    app_name: 'sentrypeer',
    app_version: '4.0.6',
    event_timestamp: new Date().toISOString().replace('T', ' ').slice(0, -1) + '123456',
    event_uuid: randomUUID(),
    created_by_node_id: '732e7f50-637d-4fde-81e0-5c32f1bb5a92',
    collected_method: 'responsive',
    transport_type: 'UDP',
    source_ip: `198.51.100.${Math.floor(Math.random() * 250)}`,
    destination_ip: '192.0.2.1',
    called_number: '',
    sip_method: 'INVITE',
    sip_user_agent: 'friendly-scanner',
    sip_message: 'INVITE sip:100@192.0.2.1 SIP/2.0\r\nCSeq: 1 INVITE\r\n\r\n',
    ...fields,
  };
}

/** A fresh, valid event as a SentryPeer node would post it, for load generation. */
export function benchEvent(calledNumber: string): string {
  return JSON.stringify(benchEventFields({ called_number: calledNumber }));
}

/**
 * A fresh PostgreSQL database for one benchmark run, with the key secret that seals its keys, or
 * undefined when none is reachable.
 */
export async function postgresBenchDatabase(): Promise<{ url: string; keySecret: string; drop(): Promise<void> } | undefined> {
  const pg = (await import('pg')).default;
  const adminUrl = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `tollwatch_bench_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 3000 });
  try {
    await admin.connect();
    await admin.query(`create database ${name}`);
  } catch {
    return undefined;
  } finally {
    await admin.end().catch(() => {});
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    keySecret: newKeySecret(),
    async drop() {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}

/** A table column: its heading, its width (negative: left-aligned) and its value in a row. */
export type TableColumn<R> = [string, number, (row: R) => string | number | undefined];

/** Prints `rows` as a table of fixed-width columns, after a blank line. */
export function printTable<R>(columns: TableColumn<R>[], rows: R[]): void {
  const cell = (value: unknown, width: number) => (width < 0 ? String(value ?? '').padEnd(-width) : String(value ?? '').padStart(width));
  console.log(`\n${columns.map(([name, width]) => cell(name, width)).join('  ')}`);
  for (const row of rows) console.log(columns.map(([, width, value]) => cell(value(row), width)).join('  '));
}
