import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { loadConfig } from '../../src/config.ts';
import type { Account } from '../../src/domain/accounts/accounts.ts';
import { createServices, type Services } from '../../src/services.ts';
import { SqlTaxiiRepository } from '../../src/store/repositories/taxii-repository.ts';
import { poolNumber } from '../support/generate-events.ts';
import { BENCH_PLAN, benchEventFields, cpuMicros, log, postgresBenchDatabase, printTable, ROOT, startProcess, tokenFor, type TableColumn } from '../support/support.ts';

/**
 * `npx node bench/suites/taxii.ts [--numbers 100000] [--database postgres://postgres@127.0.0.1:5432] [--analyze] [--keep]`:
 * what the TAXII collections cost (docs/performance.md, "TAXII collections"). On a fresh SQLite
 * store in bench/.data/ (or, with `--database` naming a PostgreSQL server, in a database the
 * bench creates there and drops), it builds a shared data set of `--numbers` numbers that each
 * score 54 (six INVITEs from three source addresses and two nodes, as the TAXII test's probes;
 * the addresses come from a pool of numbers/100, so each dials about 300 numbers and scores
 * too), stored through intake's submitBatch on a trusted account and folded, then measures:
 *
 * 1. the first publication (`taxiiPublisher.publish()` from nothing), and the store's growth;
 * 2. a full pull of the phone-numbers collection over HTTP, pages of 1,000 following `next`,
 *    one sequential client, against the server in a process of its own (its CPU from /proc);
 * 3. the pass after the first, with one number changed (it reads again what the fold changed
 *    in the 2 s before the first pass's latest change: here, the load's last fold steps);
 * 4. an incremental publication after 1% of the numbers get one more event;
 * 5. the incremental poll after it (added_after = the full pull's last X-TAXII-Date-Added-Last);
 * 6. an idle publish() with nothing changed (each turn of the publisher's 10 s timer), 20 times;
 * 7. the hourly sweep with nothing changed: the publisher's clock (the `taxiiClock` option)
 *    moved one hour on.
 *
 * Time in each of the publisher's store calls is summed by method (SqlTaxiiRepository's
 * methods wrapped); the rest of a pass is the publisher's own JavaScript. No figure is asserted.
 * After the load and after the first publication, a SQLite store's planner statistics are
 * refreshed as the server's maintenance does at start and hourly (`refreshPlannerStatistics`);
 * on PostgreSQL, `--analyze` runs ANALYZE there instead: the statistics autovacuum keeps (this
 * machine's server runs without it), which the query plans depend on. `node --cpu-prof
 * bench/suites/taxii.ts …` profiles the publishing process; `--keep` keeps the store (and its key
 * file, or the PostgreSQL database) to look into afterwards.
 */
const { values } = parseArgs({
  options: {
    numbers: { type: 'string', default: '100000' },
    database: { type: 'string' },
    keep: { type: 'boolean', default: false },
    analyze: { type: 'boolean', default: false },
  },
});
const NUMBERS = Number(values.numbers);
const ADDRESSES = Math.max(10, Math.round(NUMBERS / 100));
const NODES = ['732e7f50-637d-4fde-81e0-5c32f1bb5a92', '0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9'];
const TAXII = 'application/taxii+json;version=2.1';
const COLLECTION = '/taxii2/tollwatch/collections/phone-numbers/objects/';
const HOUR_MS = 3_600_000;

// Time per store method the publisher calls, for "where the time goes".
const storeTime = new Map<string, { calls: number; ms: number; maxMs: number }>();
for (const method of ['stateOf', 'claim', 'latestChange', 'changedAfter', 'seenSince', 'liveObjects', 'latestBodies', 'publish', 'prune'] as const) {
  const original = SqlTaxiiRepository.prototype[method] as (...args: unknown[]) => Promise<unknown>;
  (SqlTaxiiRepository.prototype as unknown as Record<string, unknown>)[method] = async function (this: SqlTaxiiRepository, ...args: unknown[]) {
    const started = performance.now();
    try {
      return await original.apply(this, args);
    } finally {
      const ms = performance.now() - started;
      const entry = storeTime.get(method) ?? { calls: 0, ms: 0, maxMs: 0 };
      storeTime.set(method, { calls: entry.calls + 1, ms: entry.ms + ms, maxMs: Math.max(entry.maxMs, ms) });
    }
  };
}

/** An event time in the node's form. */
const nodeTime = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
const address = (a: number) => `198.${18 + (a >> 16)}.${(a >> 8) & 255}.${a & 255}`;

/** Number i's six INVITEs: three sources, two nodes, within a second, last seen 1–24 hours before `now`. */
function probes(i: number, now: number) {
  const at = now - HOUR_MS - ((i * 7919) % 82_800) * 1000;
  return Array.from({ length: 6 }, (_, j) =>
    benchEventFields({
      called_number: poolNumber(i),
      source_ip: address((i + (j % 3)) % ADDRESSES),
      created_by_node_id: NODES[j % 2]!,
      sip_method: 'INVITE',
      event_timestamp: nodeTime(at + j * 100),
    }),
  );
}

/** Stores events through intake's batches of 1,000, four in flight; returns how many were created. */
async function submit(services: Services, account: Account, events: Array<Record<string, string>>): Promise<number> {
  let created = 0;
  let next = 0;
  const worker = async () => {
    while (next < events.length) {
      const part = events.slice(next, (next += 1000));
      const outcomes = await services.intake.submitBatch(account, part);
      created += outcomes.filter((o) => o.status === 'created').length;
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  return created;
}

interface Step {
  step: string;
  seconds?: number;
  ms?: string;
  numberVersions?: number;
  addressVersions?: number;
  rate?: string;
  /** The longest the publishing process's event loop went without a turn. */
  stall?: string;
  note?: string;
}
const steps: Step[] = [];
const fmt = (n: number, digits = 0) => n.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: digits });

const pg = values.database ? await openPostgres(values.database) : undefined;
async function openPostgres(server: string) {
  process.env.BENCH_POSTGRES_URL = server;
  const made = await postgresBenchDatabase();
  if (!made) throw new Error(`no PostgreSQL server answers at ${server}`);
  return made;
}
const data = join(ROOT, 'bench/.data');
mkdirSync(data, { recursive: true });
const folder = pg ? undefined : mkdtempSync(join(data, 'taxii-'));
const storePath = folder && join(folder, 'store.db');
const databaseUrl = pg?.url ?? `sqlite:${storePath}`;
const env = { DATABASE_URL: databaseUrl, ...(pg ? { TOLLWATCH_KEY_SECRET: pg.keySecret } : {}) };

/** The publisher's clock: real time plus this. */
let clockOffsetMs = 0;
const services = await createServices(loadConfig({ ...env, LOG_LEVEL: 'silent', TOLLWATCH_TAXII_PUBLISH_INTERVAL: '3600' }, false), {
  taxiiClock: () => new Date(Date.now() + clockOffsetMs),
});
const { db } = services.database;

/** Bytes the TAXII tables take: SQLite's file (after a checkpoint) and theirs by dbstat, or PostgreSQL's relation sizes. */
/** The planner statistics the server keeps: SQLite's refresh (maintenance, hourly), or ANALYZE on PostgreSQL with `--analyze`. */
async function refreshStatistics(): Promise<void> {
  await services.database.refreshPlannerStatistics?.();
  if (values.analyze) await sql`analyze`.execute(db);
}

async function storeBytes(): Promise<{ file?: number; taxii: number }> {
  if (pg) {
    const { rows } = await sql<{ bytes: string }>`select pg_total_relation_size('taxii_versions') + pg_total_relation_size('taxii_objects') as bytes`.execute(db);
    return { taxii: Number(rows[0]!.bytes) };
  }
  await sql`pragma wal_checkpoint(truncate)`.execute(db);
  const { rows } = await sql<{ bytes: number }>`select coalesce(sum(pgsize), 0) as bytes from dbstat where name like 'taxii_objects%' or name like 'taxii_versions%' or name like 'sqlite_autoindex_taxii%'`.execute(db);
  const wal = `${storePath}-wal`;
  return { file: statSync(storePath!).size + (existsSync(wal) ? statSync(wal).size : 0), taxii: Number(rows[0]!.bytes) };
}

async function versionCounts(): Promise<Record<string, number>> {
  const rows = await db.selectFrom('taxii_versions').select(['collection', (eb) => eb.fn.countAll<number>().as('n')]).groupBy('collection').execute();
  return Object.fromEntries(rows.map((r) => [r.collection, Number(r.n)]));
}

/** Shared rows (numbers and addresses) the fold changed after the phone-numbers publisher's changed_through plus `offsetMs`. */
async function rowsChangedSince(offsetMs: number): Promise<number> {
  const state = await db.selectFrom('taxii_publication').select('changed_through').where('collection', '=', 'phone-numbers').executeTakeFirstOrThrow();
  const since = new Date(Date.parse(state.changed_through!) + offsetMs).toISOString();
  let rows = 0;
  for (const table of ['number_aggregates', 'ip_aggregates'] as const) {
    const { n } = await db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).where('scope', '=', '*shared*').where('changed_at', '>', since).executeTakeFirstOrThrow();
    rows += Number(n);
  }
  return rows;
}

async function sweptHours(): Promise<string> {
  const rows = await db.selectFrom('taxii_publication').select('swept_hour').execute();
  return rows.map((r) => r.swept_hour).join(',');
}

/**
 * Runs `work` and measures the longest the event loop went without running a timer meanwhile:
 * on SQLite the publisher's statements run synchronously on the main thread, as in the server,
 * where no request is answered while they run.
 */
async function stallDuring<T>(work: () => Promise<T>): Promise<{ result: T; ms: number; cpuMs: number; stallMs: number }> {
  let lastTick = performance.now();
  let stallMs = 0;
  const ticker = setInterval(() => {
    const at = performance.now();
    stallMs = Math.max(stallMs, at - lastTick);
    lastTick = at;
  }, 1);
  const cpu = process.cpuUsage();
  const started = performance.now();
  const result = await work();
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  // One more turn of the timers, so that work that never yielded to them is counted whole.
  await new Promise((resolve) => setTimeout(resolve, 2));
  clearInterval(ticker);
  return { result, ms, cpuMs: (used.user + used.system) / 1000, stallMs };
}

/** One publication, timed, with its versions per collection, where its time went and whether it swept the hour. */
async function timedPublish() {
  const before = await versionCounts();
  const hoursBefore = await sweptHours();
  storeTime.clear();
  const { result: report, ms, cpuMs, stallMs } = await stallDuring(() => services.taxiiPublisher.publish());
  const after = await versionCounts();
  // stateOf runs beside latestChange and inside claim: its time is counted in theirs.
  const inStore = [...storeTime.entries()].reduce((sum, [name, t]) => (name === 'stateOf' ? sum : sum + t.ms), 0);
  const breakdown = [...storeTime.entries()]
    .filter(([, t]) => t.ms >= 1)
    .sort((a, b) => b[1].ms - a[1].ms)
    .map(([name, t]) => `${name} ${fmt(t.ms)} ms/${t.calls} (max ${fmt(t.maxMs)})`)
    .join(', ');
  log(`  ${fmt(ms)} ms, process CPU ${fmt(cpuMs)} ms; store calls ${fmt(inStore)} ms: ${breakdown}; the rest ${fmt(ms - inStore)} ms; longest event-loop stall ${fmt(stallMs)} ms`);
  return {
    ms,
    report,
    numbers: (after['phone-numbers'] ?? 0) - (before['phone-numbers'] ?? 0),
    addresses: (after['ip-addresses'] ?? 0) - (before['ip-addresses'] ?? 0),
    swept: (await sweptHours()) !== hoursBefore,
    stallMs,
  };
}

/** Pages of `limit` following `next` from `addedAfter`; what a TAXII client's as_pages does. */
async function pull(url: string, token: string, addedAfter?: string) {
  let next: string | undefined;
  let pages = 0;
  let objects = 0;
  let bytes = 0;
  let last: string | undefined;
  const pageMs: number[] = [];
  for (;;) {
    const params = new URLSearchParams({ limit: '1000' });
    if (addedAfter) params.set('added_after', addedAfter);
    if (next) params.set('next', next);
    const started = performance.now();
    const res = await fetch(`${url}${COLLECTION}?${params}`, { headers: { accept: TAXII, authorization: `Bearer ${token}` } });
    const text = await res.text();
    pageMs.push(performance.now() - started);
    if (res.status !== 200) throw new Error(`${res.status} ${text.slice(0, 300)}`);
    const envelope = JSON.parse(text) as { more?: boolean; next?: string; objects?: unknown[] };
    pages += 1;
    bytes += Buffer.byteLength(text);
    if (!envelope.objects) break;
    objects += envelope.objects.length;
    last = res.headers.get('x-taxii-date-added-last') ?? last;
    if (!envelope.more) break;
    next = envelope.next;
  }
  return { pages, objects, bytes, last, pageMs };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

try {
  const autovacuum = pg ? `, autovacuum ${(await sql<{ autovacuum: string }>`show autovacuum`.execute(db)).rows[0]!.autovacuum}` : '';
  log(`${pg ? 'PostgreSQL' : 'SQLite'} store ${pg ? pg.url : storePath}${autovacuum}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  await services.plans.save(BENCH_PLAN);
  const fleet = await services.accounts.createAccount({ name: 'taxii bench fleet', plan: 'bench', trusted: true });
  const readerAccount = await services.accounts.createAccount({ name: 'taxii bench reader', plan: 'bench' });
  const reader = await services.accounts.createClient({ accountId: readerAccount.account_id, name: 'reader', permissions: ['read:phone-numbers', 'read:ip-addresses'] });

  // The shared data set: intake with the fold's turns stopped, then folded in large steps, as a bulk import does.
  const loadStarted = performance.now();
  await services.aggregateFolder.stop();
  const now = Date.now();
  let created = 0;
  for (let i = 0; i < NUMBERS; i += 10_000) {
    created += await submit(services, fleet, Array.from({ length: Math.min(10_000, NUMBERS - i) }, (_, k) => probes(i + k, now)).flat());
  }
  const storedAt = performance.now();
  await services.aggregateFolder.settle(100_000);
  log(`stored ${fmt(created)} events in ${fmt((storedAt - loadStarted) / 1000, 1)} s, folded in ${fmt((performance.now() - storedAt) / 1000, 1)} s`);
  if (created !== NUMBERS * 6) throw new Error(`${created} events created, not ${NUMBERS * 6}`);

  await refreshStatistics();

  // 1. The first publication.
  log('1. first publication');
  const sizeBefore = await storeBytes();
  const first = await timedPublish();
  const sizeAfter = await storeBytes();
  // Each version's date_added is a millisecond past the one before, from the clock on: how far ahead of the clock a large pass leaves it.
  const newest = await db.selectFrom('taxii_versions').select((eb) => eb.fn.max('added_ms').as('newest')).executeTakeFirstOrThrow();
  const aheadSeconds = (Number(newest.newest) - Date.now()) / 1000;
  const versions = first.numbers + first.addresses;
  const growth = sizeAfter.taxii - sizeBefore.taxii;
  steps.push({
    step: '1. first publication',
    seconds: first.ms / 1000,
    numberVersions: first.numbers,
    addressVersions: first.addresses,
    rate: `${fmt(versions / (first.ms / 1000))} versions/s`,
    stall: fmt(first.stallMs),
    note:
      `TAXII tables +${fmt(growth / 2 ** 20, 1)} MiB (${fmt(growth / versions)} B/version)` +
      (sizeAfter.file !== undefined ? `, store file +${fmt((sizeAfter.file - sizeBefore.file!) / 2 ** 20, 1)} MiB` : '') +
      `; the last date_added ${fmt(aheadSeconds, 1)} s ahead of the clock`,
  });
  if (first.numbers < NUMBERS) log(`  only ${first.numbers} of ${NUMBERS} numbers published`);
  await refreshStatistics();

  // 2. A full pull over HTTP, against the server in its own process (its CPU read from /proc).
  const server = await startProcess('src/server.ts', { ...env, TOLLWATCH_TAXII_PUBLISH_INTERVAL: '3600' }, '/readyz');
  let lastAdded: string | undefined;
  try {
    const token = await tokenFor(server.url, reader);
    // One page first, unmeasured: the server's first TAXII request (its routes' first run, the client's credentials).
    await fetch(`${server.url}${COLLECTION}?limit=1`, { headers: { accept: TAXII, authorization: `Bearer ${token}` } });
    log('2. full pull of phone-numbers');
    const cpuBefore = cpuMicros(server.child.pid);
    const started = performance.now();
    const full = await pull(server.url, token);
    const seconds = (performance.now() - started) / 1000;
    const serverCpu = (cpuMicros(server.child.pid) - cpuBefore) / 1e6;
    lastAdded = full.last;
    steps.push({
      step: '2. full pull, pages of 1,000',
      seconds,
      ms: `${fmt(median(full.pageMs), 1)} median, ${fmt(Math.max(...full.pageMs), 1)} max per page`,
      rate: `${fmt(full.objects / seconds)} objects/s`,
      note: `${fmt(full.objects)} objects in ${full.pages} pages, ${fmt(full.bytes / full.objects)} B/object; server CPU ${fmt(serverCpu, 2)} s (${fmt((serverCpu * 1e6) / full.objects, 1)} µs/object)`,
    });
    if (full.objects !== first.numbers) log(`  pulled ${full.objects} objects, published ${first.numbers}`);

    /** One more INVITE to number i, from a fourth source address. */
    const oneMore = (i: number) =>
      benchEventFields({ called_number: poolNumber(i), source_ip: address((i + 3) % ADDRESSES), created_by_node_id: NODES[0]!, sip_method: 'INVITE', event_timestamp: nodeTime(Date.now() - 1000) });

    // 3. The pass after the first: one number changed. Every incremental pass reads again the
    // fold's changes of the 2 s before the latest one the last pass read (CLOCK_MARGIN_MS, for
    // other instances' clocks); after the first pass, those are the load's last fold steps.
    // Changed 2 s after the load's last fold step at least, so that step 4's pass does not read the load's steps again too.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    await submit(services, fleet, [oneMore(1)]);
    await services.aggregateFolder.settle();
    const reread = await rowsChangedSince(-2000);
    log(`3. the pass after the first (1 number changed; ${reread} rows changed since 2 s before where the first pass stopped)`);
    const next = await timedPublish();
    steps.push({
      step: '3. next pass, 1 number changed',
      seconds: next.ms / 1000,
      numberVersions: next.numbers,
      addressVersions: next.addresses,
      stall: fmt(next.stallMs),
      note: `reads again the ${fmt(reread)} rows the fold changed from 2 s before the first pass's last change on`,
    });

    // 4. 1% of the numbers get one more event, then an incremental pass.
    const changed = Math.max(1, Math.round(NUMBERS / 100));
    await submit(services, fleet, Array.from({ length: changed }, (_, k) => oneMore(k * 100)));
    await services.aggregateFolder.settle();
    const read = await rowsChangedSince(-2000);
    log(`4. incremental publication (${changed} numbers changed, ${read} rows to read)`);
    const incremental = await timedPublish();
    steps.push({
      step: `4. incremental, ${fmt(changed)} numbers changed`,
      seconds: incremental.ms / 1000,
      numberVersions: incremental.numbers,
      addressVersions: incremental.addresses,
      rate: `${fmt((incremental.numbers + incremental.addresses) / (incremental.ms / 1000))} versions/s`,
      stall: fmt(incremental.stallMs),
      note: `${fmt(read)} rows read; ${incremental.swept ? 'the hour turned: includes the hourly sweep' : 'no sweep (same hour)'}`,
    });

    // 5. The poll a client that made the full pull makes next.
    log('5. incremental poll');
    const pollStarted = performance.now();
    const poll = await pull(server.url, token, lastAdded);
    const pollMs = performance.now() - pollStarted;
    steps.push({
      step: '5. poll with added_after',
      ms: `${fmt(pollMs, 1)} in all`,
      rate: `${fmt(poll.objects)} objects`,
      note: `${poll.pages} page(s), ${fmt(poll.bytes / Math.max(1, poll.objects))} B/object; added_after=${lastAdded}`,
    });
  } finally {
    await server.stop();
  }

  // 6. Idle turns: nothing changed since the last pass, same hour.
  log('6. idle publish, 20 times');
  const idle: number[] = [];
  let idleStall = 0;
  let idleVersions = 0;
  let idleRan = false;
  for (let k = 0; k < 20; k++) {
    const turn = await stallDuring(() => services.taxiiPublisher.publish());
    idle.push(turn.ms);
    idleStall = Math.max(idleStall, turn.stallMs);
    idleVersions += turn.result.versions;
    idleRan ||= turn.result.ran;
  }
  steps.push({
    step: '6. idle publish()',
    ms: `${fmt(median(idle), 2)} median, ${fmt(Math.min(...idle), 2)}–${fmt(Math.max(...idle), 2)}`,
    numberVersions: idleVersions,
    stall: fmt(idleStall),
    note: idleRan ? 'a pass ran (the hour turned?)' : 'nothing claimed or written',
  });

  // 7. The hourly sweep with nothing changed: the publisher's clock an hour on.
  log('7. hourly sweep');
  clockOffsetMs = HOUR_MS;
  const sweep = await timedPublish();
  steps.push({
    step: '7. hourly sweep, nothing changed',
    seconds: sweep.ms / 1000,
    numberVersions: sweep.numbers,
    addressVersions: sweep.addresses,
    stall: fmt(sweep.stallMs),
    rate: `${fmt(((await db.selectFrom('taxii_objects').select((eb) => eb.fn.countAll<number>().as('n')).where('revoked', '=', 0).executeTakeFirstOrThrow()).n as number) / (sweep.ms / 1000))} live objects/s`,
    note: `decay moved ${fmt(sweep.numbers + sweep.addresses)} indicators; ${sweep.report.revoked} revoked`,
  });

  console.log(
    `\nTAXII collections: ${fmt(NUMBERS)} numbers (${fmt(NUMBERS * 6)} events, ${fmt(ADDRESSES)} source addresses), ${pg ? 'PostgreSQL' : 'SQLite'}${autovacuum}${values.analyze ? ', analyzed' : ''}; ` +
      `${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.versions.node}; load average at the end ${loadavg().map((l) => l.toFixed(2)).join(' ')}`,
  );
  const columns: TableColumn<Step>[] = [
    ['step', -34, (r) => r.step],
    ['seconds', 8, (r) => (r.seconds === undefined ? '' : fmt(r.seconds, 2))],
    ['ms', -30, (r) => r.ms],
    ['number versions', 15, (r) => (r.numberVersions === undefined ? '' : fmt(r.numberVersions))],
    ['address versions', 16, (r) => (r.addressVersions === undefined ? '' : fmt(r.addressVersions))],
    ['rate', -22, (r) => r.rate],
    ['stall ms', 8, (r) => r.stall],
    ['', -1, (r) => r.note],
  ];
  printTable(columns, steps);
  console.log(
    '\nThe HTTP client is one sequential fetch loop in this process; the server is src/server.ts in a process of its own (LOG_LEVEL=warn), its CPU from /proc.' +
      '\n"stall ms": the longest the publishing process went without a turn of its event loop (on SQLite the publisher’s statements are synchronous).',
  );
} finally {
  await services.close();
  if (values.keep) log(`kept ${databaseUrl}`);
  else if (pg) await pg.drop();
  else if (folder) rmSync(folder, { recursive: true, force: true });
}
