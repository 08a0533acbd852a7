import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../src/store/database.ts';
import { BENCH_DATA, cachedStore, POOL_NUMBERS, storeCopy } from './support/cached-stores.ts';
import { callPathBench, printCallPath, type CallPathRow } from './suites/call-path.ts';
import { dnsBench, printDns } from './suites/dns.ts';
import { generateEvents, poolNumber } from './support/generate-events.ts';
import { batchLoad, notFoundLoad, pathsLoad, singleEventLoad } from './support/loads.ts';
import { benchClient, cpuMicros, knownNumbers, log, postgresBenchDatabase, prepareStore, printTable, ROOT, rssMiB, startProcess, tokenFor, type TableColumn } from './support/support.ts';
import { requireWrk, runWrk } from './support/wrk.ts';

/**
 * `npm run bench`: every throughput and latency figure in one run on this machine. Every load is
 * driven by wrk (one thread; wrk.ts), and every lookup phase is preceded by its two baselines,
 * the bare node:http server and a one-route Fastify app, with the same connections and the
 * same requests: a shared machine drifts over minutes, so only ratios measured side by side
 * mean anything. Prints a table and writes JSON under bench/results/. Generated stores are
 * cached in bench/.data/ between runs.
 *
 * BENCH_SECONDS (default 10) per measurement; BENCH_SIZES (default 10000,1000000; add 10000000
 * only when you mean it: generating it takes about 25 minutes and 12.5 GB); BENCH_PHASES (default
 * all: 1,2,3,4,5,6,7,8) to run only some of the numbered phases while working on one. Phase 7 is the
 * call path through Kamailio and the guard (bench/suites/call-path.ts, BENCH_CALL_RATES); phase 8 the DNS
 * zones against a bare responder, through Unbound, and the guard in DNS mode (bench/suites/dns.ts).
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const SIZES = (process.env.BENCH_SIZES ?? '10000,1000000').split(',').map(Number);
const RESULTS = join(ROOT, 'bench/results');
const PHASES = new Set((process.env.BENCH_PHASES ?? '1,2,3,4,5,6,7,8').split(',').map(Number));

interface Row {
  phase: string;
  connections: number;
  /** Answers counted, whatever their status. */
  requests: number;
  requestsPerSecond: number;
  eventsPerSecond?: number;
  mean: number;
  p50: number;
  p99: number;
  ratioToBare?: number;
  ratioToFastify?: number;
  /** Against bench/baselines/minimal-lookup.ts: the same lookup's work with no framework around it. */
  ratioToSameWork?: number;
  /** Lookups beside intake: against the same lookups alone, measured right before. */
  ratioToAlone?: number;
  /** Server CPU (user + system) per answered request, from /proc across the run. */
  cpuMicrosPerRequest: number;
  /** Answers with another status than the phase expects. */
  unexpected: number;
  errors: number;
  /** The server's largest resident set during the phase. */
  rssMiB?: number;
}

const rows: Row[] = [];

interface Server {
  url: string;
  child: { pid?: number | undefined };
}

/**
 * Runs one wrk load against a server and records it; `expected` is the status every answer
 * should have. Lookups are measured warm: 2 s of the same load first, unmeasured. A Node server
 * left idle for the half-minute its baselines take (V8 shrinks its heap meanwhile) answered
 * 10–15% fewer lookups over the next 10 s, with a p99 of 30–90 ms at 64 connections instead of
 * 11 (docs/performance.md, "After an idle spell").
 */
async function measure(
  phase: string,
  server: Server,
  script: string,
  connections: number,
  { expected = 200, eventsPerRequest = 0, warm }: { expected?: number; eventsPerRequest?: number; warm?: boolean } = {},
): Promise<Row> {
  if (warm ?? eventsPerRequest === 0) await runWrk(server.url, script, connections, 2);
  const pid = server.child.pid;
  let peak = rssMiB(pid) ?? 0;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(pid) ?? 0)), 250);
  const cpuBefore = cpuMicros(pid);
  const result = await runWrk(server.url, script, connections, SECONDS);
  const cpu = cpuMicros(pid) - cpuBefore;
  clearInterval(sampler);
  const ok = result.statuses[String(expected)] ?? 0;
  const row: Row = {
    phase,
    connections,
    requests: result.requests,
    requestsPerSecond: Math.round(ok / result.seconds),
    mean: result.mean,
    p50: result.p50,
    p99: result.p99,
    cpuMicrosPerRequest: Math.round(cpu / Math.max(1, result.requests)),
    unexpected: result.requests - ok,
    errors: result.errors,
    rssMiB: peak || undefined,
  };
  if (eventsPerRequest) row.eventsPerSecond = Math.round((ok * eventsPerRequest) / result.seconds);
  rows.push(row);
  log(`  ${phase} @${connections}: ${row.requestsPerSecond} req/s, p50 ${row.p50} ms, p99 ${row.p99} ms${row.eventsPerSecond ? `, ${row.eventsPerSecond} events/s` : ''}${row.unexpected || row.errors ? `, ${row.unexpected} unexpected, ${row.errors} errors ${JSON.stringify(result.statuses)}` : ''}`);
  return row;
}

/** The two baselines, measured with `script` right before the phase they are compared with. */
let baselines: { bare: Server & { stop(): Promise<void> }; fastify: Server & { stop(): Promise<void> } };

async function withBaselines(script: string, connections: number, phase: () => Promise<Row>, sameWork?: Server, expected = 200): Promise<Row> {
  const bare = await measure('  bare node:http', baselines.bare, script, connections);
  const fastify = await measure('  Fastify, one route', baselines.fastify, script, connections);
  const minimal = sameWork && (await measure('  same work, no framework', sameWork, script, connections, { expected }));
  const row = await phase();
  const ratio = (to: Row) => Number((row.requestsPerSecond / Math.max(1, to.requestsPerSecond)).toFixed(2));
  row.ratioToBare = ratio(bare);
  row.ratioToFastify = ratio(fastify);
  if (minimal) {
    minimal.ratioToBare = Number((minimal.requestsPerSecond / Math.max(1, bare.requestsPerSecond)).toFixed(2));
    row.ratioToSameWork = ratio(minimal);
  }
  return row;
}

/**
 * Lookups that find (known numbers) and that do not (random numbers), each beside its baselines;
 * on SQLite also beside `sameWork`, the lookup's own work on node:http alone (bench/baselines/minimal-lookup.ts).
 */
async function lookupPhases(label: string, service: Server, token: string, numbers: string[], connectionCounts: number[], sameWork?: Server): Promise<void> {
  const found = pathsLoad(token, numbers.map((n) => `/api/phone-numbers/${encodeURIComponent(n)}`));
  const missing = notFoundLoad(token);
  // Compiled code and warm page caches, as a server that has run a while has them.
  await runWrk(service.url, found, 16, 2);
  await runWrk(service.url, missing, 16, 2);
  for (const connections of connectionCounts) {
    await withBaselines(found, connections, () => measure(`lookup found${label}`, service, found, connections), sameWork);
    await withBaselines(missing, connections, () => measure(`lookup not found${label}`, service, missing, connections, { expected: 404 }), sameWork, 404);
  }
}

/** A copy of a cached store in bench/.data/work.db (or an empty store), for phases that write, with its key file. */
function workingCopy(url: string | undefined): string {
  return storeCopy(url, join(BENCH_DATA, 'work.db'));
}

/** Single events a second in the steady phase: a busy hour, not flat out (the rate reached is printed). */
const STEADY_INTAKE_PER_SECOND = 2000;

/** Called numbers as honeypots write them (00…), spread over the generated stores' pool. */
const intakeNumbers = Array.from({ length: 2000 }, () => `00${poolNumber(Math.floor(Math.random() * POOL_NUMBERS)).slice(1)}`);

/** Starts the service on a store with a bench account; returns it with a token. */
async function serviceOn(databaseUrl: string, keySecret?: string) {
  const client = await prepareStore(databaseUrl, keySecret);
  const service = await startProcess('src/server.ts', { DATABASE_URL: databaseUrl, ...(keySecret ? { TOLLWATCH_KEY_SECRET: keySecret } : {}) }, '/readyz');
  return { service, token: await tokenFor(service.url, client) };
}

/** Single-event intake at 64 connections and batch intake (1,000 per request, 4 connections). */
async function intakePhases(label: string, service: Server, token: string): Promise<void> {
  await measure(`single-event intake, durable${label}`, service, singleEventLoad(token, intakeNumbers), 64, { expected: 201, eventsPerRequest: 1 });
  await measure(`batch intake, 1,000 per request${label}`, service, batchLoad(token, intakeNumbers, 1000), 4, { eventsPerRequest: 1000 });
}

async function main() {
  requireWrk();
  mkdirSync(RESULTS, { recursive: true });
  log(`machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, load ${loadavg()[0]!.toFixed(1)}; ${SECONDS} s per measurement`);
  baselines = {
    bare: await startProcess('bench/baselines/bare-server.ts', {}, '/'),
    fastify: await startProcess('bench/baselines/fastify-server.ts', {}, '/api/phone-numbers/1'),
  };
  const smallest = await cachedStore(SIZES[0] ?? 10_000);
  const numbers = await knownNumbers(smallest);

  // Intake phases follow on the same store: they work on a copy, so the cached store keeps its size.
  const smallUrl = workingCopy(smallest);
  let { service, token } = await serviceOn(smallUrl);
  if (PHASES.has(1)) {
    log(`1. authenticated phone lookups, SQLite, ${(SIZES[0] ?? 10_000).toLocaleString('en')} events`);
    const sameWork = await startProcess('bench/baselines/minimal-lookup.ts', { DATABASE_URL: smallUrl }, '/healthz');
    await lookupPhases('', service, token, numbers, [16, 64], sameWork);
    await sameWork.stop();
  }

  if (PHASES.has(2)) {
    log('2. lookups while single events are submitted');
    const duringIntake = pathsLoad(token, numbers.map((n) => `/api/phone-numbers/${encodeURIComponent(n)}`));
    await withBaselines(duringIntake, 16, async () => {
      const [lookups, intake] = await Promise.all([
        // Measured over the same seconds as the intake beside it, so not warmed apart.
        measure('lookup found, during intake', service, duringIntake, 16, { warm: false }),
        measure('  intake beside those lookups', service, singleEventLoad(token, intakeNumbers), 64, { expected: 201, eventsPerRequest: 1 }),
      ]);
      // One server answered both over the same seconds: its CPU is per request of either kind.
      const perRequest = Math.round((lookups.cpuMicrosPerRequest * lookups.requests) / Math.max(1, lookups.requests + intake.requests));
      lookups.cpuMicrosPerRequest = intake.cpuMicrosPerRequest = perRequest;
      return lookups;
    });

    // A busy hour rather than flat out: the same lookups beside intake paced to a steady rate,
    // against their own rate alone, measured right before.
    const alone = await measure('lookup found, alone', service, duringIntake, 16);
    const [lookups] = await Promise.all([
      measure('lookup found, beside steady intake', service, duringIntake, 16, { warm: false }),
      measure('  steady intake beside those lookups', service, singleEventLoad(token, intakeNumbers, STEADY_INTAKE_PER_SECOND), 64, { expected: 201, eventsPerRequest: 1 }),
    ]);
    lookups.ratioToAlone = Number((lookups.requestsPerSecond / Math.max(1, alone.requestsPerSecond)).toFixed(2));

    // The busy hour as it comes: a trusted fleet's honeypots submit, and an account that submits
    // nothing (a PBX operator) looks up. The one account above also submits what it looks up,
    // so its answers are unions of two scopes, read again after every fold step; the reader's
    // are the shared rows alone, which this process's fold keeps current (lookup-cache.ts).
    const fleet = await tokenFor(service.url, await benchClient(smallUrl, undefined, { trusted: true, name: 'bench fleet' }));
    const reader = await tokenFor(service.url, await benchClient(smallUrl, undefined, { name: 'bench reader' }));
    const readerLookups = pathsLoad(reader, numbers.map((n) => `/api/phone-numbers/${encodeURIComponent(n)}`));
    const readerAlone = await measure('lookup found by a reader, alone', service, readerLookups, 16);
    const [byReader] = await Promise.all([
      measure('lookup found by a reader, beside a fleet', service, readerLookups, 16, { warm: false }),
      measure('  a fleet’s steady intake beside them', service, singleEventLoad(fleet, intakeNumbers, STEADY_INTAKE_PER_SECOND), 64, { expected: 201, eventsPerRequest: 1 }),
    ]);
    byReader.ratioToAlone = Number((byReader.requestsPerSecond / Math.max(1, readerAlone.requestsPerSecond)).toFixed(2));
  }

  if (PHASES.has(3)) {
    log('3. durable intake (SQLite synchronous=FULL: 201 only after the commit)');
    await intakePhases('', service, token);
  }
  await service.stop();

  const postgres = PHASES.has(4) ? await postgresBenchDatabase() : undefined;
  if (postgres) {
    log('4. the same on PostgreSQL (local server, 10,000 events, a database made and dropped for this run)');
    try {
      const pgStore = await openDatabase(postgres.url);
      await generateEvents(pgStore, { events: 10_000, numbers: POOL_NUMBERS, addresses: 50_000, seed: 1, rebuild: true });
      await pgStore.close();
      const pgNumbers = await knownNumbers(postgres.url);
      ({ service, token } = await serviceOn(postgres.url, postgres.keySecret));
      await lookupPhases(', PostgreSQL', service, token, pgNumbers, [16, 64]);
      await intakePhases(', PostgreSQL', service, token);
      await service.stop();
    } finally {
      await postgres.drop();
    }
  } else if (PHASES.has(4)) {
    log('4. skipped: no PostgreSQL reachable at BENCH_POSTGRES_URL');
  }

  if (PHASES.has(5)) {
    log('5. lookup latency against store size');
    for (const size of SIZES) {
      const url = await cachedStore(size);
      const sized = await knownNumbers(url);
      ({ service, token } = await serviceOn(url));
      const load = pathsLoad(token, sized.map((n) => `/api/phone-numbers/${encodeURIComponent(n)}`));
      // Warm the page cache the way a long-running server would have it.
      await runWrk(service.url, load, 16, 2);
      await withBaselines(load, 16, () => measure(`lookup found, ${size.toLocaleString('en')} events`, service, load, 16));
      await service.stop();
    }
  }

  let growthRatio: number | undefined;
  if (PHASES.has(6)) {
    log('6. growth: single-event intake into the largest store against an empty one');
    const largest = Math.max(...SIZES);
    const growth: Row[] = [];
    for (const [label, source] of [['empty store', undefined], [`${largest.toLocaleString('en')} events`, await cachedStore(largest)]] as const) {
      ({ service, token } = await serviceOn(workingCopy(source)));
      growth.push(await measure(`single-event intake, ${label}`, service, singleEventLoad(token, intakeNumbers), 64, { expected: 201, eventsPerRequest: 1 }));
      await service.stop();
    }
    growthRatio = Number(((growth[1]?.requestsPerSecond ?? 0) / Math.max(1, growth[0]?.requestsPerSecond ?? 0)).toFixed(2));
  }
  await baselines.bare.stop();
  await baselines.fastify.stop();

  let callPath: CallPathRow[] | undefined;
  if (PHASES.has(7)) {
    log('7. the call path: SIPp through Kamailio alone, with the guard per call, and with its mirror');
    callPath = await callPathBench();
  }

  const dns = PHASES.has(8) ? await dnsBench() : undefined;

  print(growthRatio);
  if (callPath) printCallPath(callPath);
  if (dns) printDns(dns);
  const file = join(RESULTS, `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify({ machine: { cpus: cpus().length, model: cpus()[0]?.model, memGiB: Math.round(totalmem() / 2 ** 30), node: process.version }, seconds: SECONDS, rows, growthRatio, callPath, dns }, null, 2));
  console.log(`\nwritten to ${file}`);
  if (rows.some((r) => r.unexpected || r.errors) || callPath?.some((r) => r.failed) || dns?.calls.some((r) => r.failed)) {
    log('some answers had an unexpected status or failed (see the last two columns)');
    process.exitCode = 1;
  }
}

function print(growthRatio: number | undefined): void {
  const columns: TableColumn<Row>[] = [
    ['phase', -44, (r) => r.phase],
    ['conns', 5, (r) => r.connections],
    ['req/s', 8, (r) => r.requestsPerSecond],
    ['events/s', 8, (r) => r.eventsPerSecond],
    ['p50 ms', 7, (r) => r.p50],
    ['p99 ms', 7, (r) => r.p99],
    ['× bare', 6, (r) => r.ratioToBare],
    ['× Fastify', 9, (r) => r.ratioToFastify],
    ['× same work', 11, (r) => r.ratioToSameWork],
    ['× alone', 7, (r) => r.ratioToAlone],
    ['CPU µs/req', 10, (r) => r.cpuMicrosPerRequest],
    ['RSS MiB', 7, (r) => r.rssMiB],
    ['unexpected', 10, (r) => r.unexpected],
    ['errors', 6, (r) => r.errors],
  ];
  printTable(columns, rows);
  if (growthRatio !== undefined) console.log(`\ngrowth: single-event intake into the largest store runs at ${growthRatio} × the rate into an empty one`);
}

await main();
