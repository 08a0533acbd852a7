import { copyFileSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { openDatabase } from '../src/store/database.ts';
import { keyFilePath } from '../src/store/store-files.ts';
import { generateEvents, poolNumber } from './generate-events.ts';
import { benchEvent, knownNumbers, log, postgresBenchDatabase, prepareStore, ROOT, rssMiB, startProcess, tokenFor } from './support.ts';

/**
 * `npm run bench`: every throughput and latency figure in one run on this machine, each beside the bare
 * node:http baseline measured with the same load tool and settings. Prints a table and writes
 * JSON under bench/results/. Generated stores are cached in bench/.data/ between runs.
 *
 * BENCH_SECONDS (default 10) per measurement; BENCH_SIZES (default 10000,1000000,10000000).
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const SIZES = (process.env.BENCH_SIZES ?? '10000,1000000,10000000').split(',').map(Number);
const DATA = join(ROOT, 'bench/.data');
const RESULTS = join(ROOT, 'bench/results');
const NUMBERS = 200_000;

interface Row {
  phase: string;
  connections: number;
  requestsPerSecond: number;
  eventsPerSecond?: number;
  /** Mean latency, to two decimals: the percentiles come in whole milliseconds. */
  mean: number;
  p50: number;
  p99: number;
  ratioToBaseline?: number;
  non2xx: number;
  errors: number;
  rssMiB?: number;
}

const rows: Row[] = [];

type Options = autocannon.Options;

/** Runs one load and records it; `expected` is the status every answer should have. */
async function measure(phase: string, options: Options, pid: number | undefined, { eventsPerRequest = 0, expected = 200 } = {}): Promise<Row> {
  const result = await autocannon({ duration: SECONDS, ...options });
  const byStatus = result.statusCodeStats as unknown as Record<string, { count: number }>;
  const answered = Object.values(byStatus).reduce((sum, s) => sum + s.count, 0);
  const ok = expected === 200 ? result['2xx'] : (byStatus[String(expected)]?.count ?? 0);
  const row: Row = {
    phase,
    connections: options.connections ?? 10,
    requestsPerSecond: Math.round(ok / SECONDS),
    mean: Number(result.latency.average.toFixed(2)),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: answered - ok,
    errors: result.errors + result.timeouts,
    rssMiB: rssMiB(pid),
  };
  if (eventsPerRequest) row.eventsPerSecond = Math.round((ok * eventsPerRequest) / SECONDS);
  rows.push(row);
  log(`  ${phase} @${row.connections}: ${row.requestsPerSecond} req/s, p50 ${row.p50} ms, p99 ${row.p99} ms${row.eventsPerSecond ? `, ${row.eventsPerSecond} events/s` : ''}`);
  return row;
}

/** A store holding `size` generated events, built once and reused. */
async function storeWith(size: number): Promise<string> {
  mkdirSync(DATA, { recursive: true });
  const path = join(DATA, `events-${size}.db`);
  if (existsSync(path)) return `sqlite:${path}`;
  log(`generating ${size.toLocaleString('en')} events into ${path} (cached for later runs)`);
  rmSync(`${path}.partial`, { force: true });
  const database = await openDatabase(`sqlite:${path}.partial`);
  await generateEvents(database, { events: size, numbers: NUMBERS, addresses: 50_000, seed: 1, rebuild: true, log });
  await database.close();
  for (const suffix of ['-wal', '-shm']) rmSync(`${path}.partial${suffix}`, { force: true });
  renameSync(`${path}.partial`, path);
  return `sqlite:${path}`;
}

/** A copy of a cached store in bench/.data/work.db, for phases that write to it, with its key file. */
function workingCopy(url: string): string {
  const path = join(DATA, 'work.db');
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
  rmSync(keyFilePath(path), { force: true });
  const source = url.slice('sqlite:'.length);
  copyFileSync(source, path);
  if (existsSync(keyFilePath(source))) copyFileSync(keyFilePath(source), keyFilePath(path));
  return `sqlite:${path}`;
}

/** Numbers of the store under test that lookups will find. */
let found: string[] = [];
const foundPath = () => `/api/phone-numbers/${encodeURIComponent(found[Math.floor(Math.random() * found.length)]!)}`;
const notFoundPath = () => `/api/phone-numbers/%2B999${Math.floor(Math.random() * 1e9)}`;

const eventJson = () => benchEvent(`00${poolNumber(Math.floor(Math.random() * NUMBERS)).slice(1)}`);

async function main() {
  mkdirSync(RESULTS, { recursive: true });
  log(`machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; ${SECONDS} s per measurement`);

  log('1 and 2. bare node:http beside authenticated phone lookups (10,000 events stored)');
  // Phases 2 and 3 submit events: they work on a copy, so the cached store keeps its size.
  const smallUrl = workingCopy(await storeWith(SIZES[0] ?? 10_000));
  const client = await prepareStore(smallUrl);
  found = await knownNumbers(smallUrl);
  const bare = await startProcess('bench/bare-server.ts', {}, '/');
  let service = await startProcess('src/server.ts', { DATABASE_URL: smallUrl }, '/readyz');
  let token = await tokenFor(service.url, client);
  const headers = () => ({ authorization: `Bearer ${token}` });
  // Each connection count measures the baseline right before the lookups it is compared with:
  // a shared machine drifts over minutes, and a ratio of far-apart figures would show the drift.
  const baseline: Record<number, number> = {};
  // The baseline gets the very requests the lookups get (built per request, with the token):
  // the load generator shares the machine, so cheaper requests would flatter the baseline.
  for (const connections of [1, 16, 64]) {
    baseline[connections] = (
      await measure('bare node:http', { url: bare.url, connections, requests: [{ method: 'GET', setupRequest: (r) => ({ ...r, path: foundPath(), headers: headers() }) }] }, bare.child.pid)
    ).requestsPerSecond;
    for (const [name, path, expected] of [['lookup found', foundPath, 200], ['lookup not found', notFoundPath, 404]] as const) {
      const row = await measure(name, { url: service.url, connections, requests: [{ method: 'GET', setupRequest: (r) => ({ ...r, path: path(), headers: headers() }) }] }, service.child.pid, { expected });
      row.ratioToBaseline = Number((row.requestsPerSecond / (baseline[connections] ?? 1)).toFixed(2));
    }
  }
  await bare.stop();

  log('2b. the same lookups with WORKERS=2 (node:cluster), to see whether a second process pays');
  await service.stop();
  service = await startProcess('src/server.ts', { DATABASE_URL: smallUrl, WORKERS: '2' }, '/readyz');
  token = await tokenFor(service.url, client);
  for (const connections of [16, 64]) {
    const row = await measure('lookup found, WORKERS=2', { url: service.url, connections, requests: [{ method: 'GET', setupRequest: (r) => ({ ...r, path: foundPath(), headers: headers() }) }] }, service.child.pid);
    row.ratioToBaseline = Number((row.requestsPerSecond / (baseline[connections] ?? 1)).toFixed(2));
  }
  await service.stop();
  service = await startProcess('src/server.ts', { DATABASE_URL: smallUrl }, '/readyz');
  token = await tokenFor(service.url, client);

  log('2c. the same lookups while events are being submitted (mixed load)');
  await Promise.all([
    measure('lookup found, during intake', { url: service.url, connections: 16, requests: [{ method: 'GET', setupRequest: (r) => ({ ...r, path: foundPath(), headers: headers() }) }] }, service.child.pid),
    measure('intake beside lookups', { url: service.url, connections: 32, requests: [{ method: 'POST', setupRequest: (r) => ({ ...r, path: '/api/events', headers: { ...headers(), 'content-type': 'application/json' }, body: eventJson() }) }] }, service.child.pid, { eventsPerRequest: 1, expected: 201 }),
  ]);

  log('3. intake with durability on (synchronous=FULL; 201 only after commit)');
  const post = (body: () => string, contentType = 'application/json') => [
    { method: 'POST' as const, setupRequest: (r: autocannon.Request) => ({ ...r, path: '/api/events', headers: { ...headers(), 'content-type': contentType }, body: body() }) },
  ];
  for (const connections of [16, 64]) {
    await measure('single-event intake', { url: service.url, connections, requests: post(eventJson) }, service.child.pid, { eventsPerRequest: 1, expected: 201 });
  }
  const batchBody = () => `[${Array.from({ length: 1000 }, eventJson).join(',')}]`;
  await measure(
    'batch intake (1,000/request)',
    { url: service.url, connections: 4, requests: [{ method: 'POST', setupRequest: (r) => ({ ...r, path: '/api/events/batch', headers: { ...headers(), 'content-type': 'application/json' }, body: batchBody() }) }] },
    service.child.pid,
    { eventsPerRequest: 1000 },
  );
  await service.stop();

  log('3b. the same on PostgreSQL (local server, 10,000 events, a database made for this run)');
  const postgres = await postgresBenchDatabase();
  if (postgres) {
    try {
      const pgStore = await openDatabase(postgres.url);
      await generateEvents(pgStore, { events: 10_000, numbers: NUMBERS, addresses: 50_000, seed: 1, rebuild: true });
      await pgStore.close();
      const pgClient = await prepareStore(postgres.url, postgres.keySecret);
      found = await knownNumbers(postgres.url);
      service = await startProcess('src/server.ts', { DATABASE_URL: postgres.url, TOLLWATCH_KEY_SECRET: postgres.keySecret }, '/readyz');
      token = await tokenFor(service.url, pgClient);
      for (const connections of [16, 64]) {
        const row = await measure('lookup found, PostgreSQL', { url: service.url, connections, requests: [{ method: 'GET', setupRequest: (r) => ({ ...r, path: foundPath(), headers: headers() }) }] }, service.child.pid);
        row.ratioToBaseline = Number((row.requestsPerSecond / (baseline[connections] ?? 1)).toFixed(2));
      }
      await measure('single-event intake, PostgreSQL', { url: service.url, connections: 64, requests: post(eventJson) }, service.child.pid, { eventsPerRequest: 1, expected: 201 });
      await measure(
        'batch intake (1,000/request), PostgreSQL',
        { url: service.url, connections: 4, requests: [{ method: 'POST', setupRequest: (r) => ({ ...r, path: '/api/events/batch', headers: { ...headers(), 'content-type': 'application/json' }, body: batchBody() }) }] },
        service.child.pid,
        { eventsPerRequest: 1000 },
      );
      await service.stop();
    } finally {
      await postgres.drop();
    }
  } else {
    log('  skipped: no PostgreSQL reachable at BENCH_POSTGRES_URL');
  }

  log('4. lookup latency against store size');
  for (const size of SIZES) {
    const url = await storeWith(size);
    const sized = await prepareStore(url);
    found = await knownNumbers(url);
    service = await startProcess('src/server.ts', { DATABASE_URL: url }, '/readyz');
    token = await tokenFor(service.url, sized);
    // Warm the page cache the way a long-running server would have it.
    await autocannon({ url: service.url, connections: 16, duration: 2, requests: [{ method: 'GET', setupRequest: (r) => ({ ...r, path: foundPath(), headers: headers() }) }] });
    await measure(`lookup found, ${size.toLocaleString('en')} events`, { url: service.url, connections: 16, requests: [{ method: 'GET', setupRequest: (r) => ({ ...r, path: foundPath(), headers: headers() }) }] }, service.child.pid);
    await service.stop();
  }

  console.log('\nphase                                   conns    req/s  events/s  mean ms   p50 ms   p99 ms  × bare  non-2xx  errors  RSS MiB');
  for (const r of rows) {
    console.log(
      `${r.phase.padEnd(38)} ${String(r.connections).padStart(6)} ${String(r.requestsPerSecond).padStart(8)} ${String(r.eventsPerSecond ?? '').padStart(9)} ${r.mean.toFixed(2).padStart(8)} ${String(r.p50).padStart(8)} ${String(r.p99).padStart(8)} ${String(r.ratioToBaseline ?? '').padStart(7)} ${String(r.non2xx).padStart(8)} ${String(r.errors).padStart(7)} ${String(r.rssMiB ?? '').padStart(8)}`,
    );
  }
  const file = join(RESULTS, `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify({ machine: { cpus: cpus().length, model: cpus()[0]?.model, memGiB: Math.round(totalmem() / 2 ** 30), node: process.version }, seconds: SECONDS, rows }, null, 2));
  console.log(`\nwritten to ${file}`);
}

await main();
