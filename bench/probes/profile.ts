import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { measuredStore } from '../support/cached-stores.ts';
import { batchLoad, notFoundLoad, pathsLoad, singleEventLoad } from '../support/loads.ts';
import { benchClient, knownNumbers, log, prepareStore, ROOT, startProcess, tokenFor } from '../support/support.ts';
import { requireWrk, runWrk } from '../support/wrk.ts';

/**
 * Profiles the server under one kind of load and prints where its CPU time goes (self time per
 * function, then per file), so that speed work starts from a measurement:
 *
 *   node bench/probes/profile.ts --database sqlite:bench/.data/events-10000.db --load lookup
 *   node bench/probes/profile.ts --load intake --connections 64 --seconds 10
 *   node bench/probes/profile.ts --load batch --batch-size 1000
 *   node bench/probes/profile.ts --load intake --connections 64 --statements
 *   node bench/probes/profile.ts --load lookup --beside-intake 2000 [--fleet]
 *
 * Only samples taken while the measured load runs count, after a warm-up (`--warmup`, 3 s), and
 * every thread is reported: intake's writer thread beside the main one. The raw `.cpuprofile`
 * files stay in a temporary folder (printed) for Chrome DevTools. With `--statements`, each
 * thread's SQLite statements are timed too (bench/probes/statement-times.ts): which ones the writer
 * thread's time goes to, commits with and without their fsync apart.
 */
const { values } = parseArgs({
  options: {
    // Default: the 10,000-event store npm run bench builds and caches (built here if missing).
    database: { type: 'string' },
    load: { type: 'string', default: 'lookup' },
    connections: { type: 'string', default: '16' },
    seconds: { type: 'string', default: '8' },
    'batch-size': { type: 'string', default: '1000' },
    top: { type: 'string', default: '30' },
    // Load before the measured window, so start-up and the JIT's first compiles stay out of it.
    warmup: { type: 'string', default: '3' },
    // Also time each SQLite statement by its text (bench/probes/statement-times.ts), in every thread.
    statements: { type: 'boolean', default: false },
    // Single events at this steady rate a second beside the measured load (64 connections, paced
    // as phase 2 of npm run bench paces them), through warm-up and measurement.
    'beside-intake': { type: 'string', default: '0' },
    // That intake from a trusted fleet's account, and the measured load from an account that
    // submits nothing (a PBX operator's), as phase 2's last lines of npm run bench do.
    fleet: { type: 'boolean', default: false },
    // The intake load paced to this many events a second; 0: flat out.
    rate: { type: 'string', default: '0' },
  },
});
const loads = ['lookup', 'lookup-missing', 'intake', 'batch'] as const;
type Load = (typeof loads)[number];
const load = values.load as Load;
if (!loads.includes(load)) throw new Error(`--load must be one of ${loads.join(', ')}`);

requireWrk();
const database = await measuredStore(values.database);
const client = await prepareStore(database);
const numbers = await knownNumbers(database);
if (load === 'lookup' && numbers.length === 0) throw new Error(`${database} holds no numbers to find: give a store with events, or no --database for the generated one`);
const profileDir = mkdtempSync(join(tmpdir(), 'tollwatch-profile-'));
const statementTimes = values.statements ? `--import ${join(ROOT, 'bench/probes/statement-times.ts')} ` : '';
const server = await startProcess(
  'src/server.ts',
  { DATABASE_URL: database, TOLLWATCH_STATEMENT_TIMES_DIR: profileDir, NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profileDir} ${statementTimes}${process.env.NODE_OPTIONS ?? ''}` },
  '/readyz',
);
const token = await tokenFor(server.url, client);
const intakeToken = values.fleet ? await tokenFor(server.url, await benchClient(database, undefined, { trusted: true, name: 'bench fleet' })) : token;
const batchSize = Number(values['batch-size']);
const intakeNumbers = numbers.length ? numbers : ['+441234567890'];
const script: Record<Load, () => string> = {
  lookup: () => pathsLoad(token, intakeNumbers.map((n) => `/api/phone-numbers/${encodeURIComponent(n)}`)),
  'lookup-missing': () => notFoundLoad(token),
  intake: () => singleEventLoad(token, intakeNumbers, Number(values.rate) || undefined),
  batch: () => batchLoad(token, intakeNumbers, batchSize),
};

let result;
// The measured window, on the monotonic clock V8 stamps its samples with (µs).
let measured: { from: number; to: number };
const monotonicMicros = () => Number(process.hrtime.bigint() / 1000n);
const besideIntake = Number(values['beside-intake']);
const beside = besideIntake > 0 ? runWrk(server.url, singleEventLoad(intakeToken, intakeNumbers, besideIntake), 64, Number(values.warmup) + Number(values.seconds) + 1) : undefined;
try {
  if (Number(values.warmup) > 0) await runWrk(server.url, script[load](), Number(values.connections), Number(values.warmup));
  const from = monotonicMicros();
  result = await runWrk(server.url, script[load](), Number(values.connections), Number(values.seconds));
  measured = { from, to: monotonicMicros() };
  const intake = await beside;
  if (intake) log(`beside it, intake: ${Math.round(intake.requests / intake.seconds)} events/s, p99 ${intake.p99} ms, statuses ${JSON.stringify(intake.statuses)}`);
} finally {
  await server.stop();
}
log(`${load}: ${Math.round(result.requests / result.seconds)} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms, statuses ${JSON.stringify(result.statuses)}`);

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/**
 * Keeps the samples taken inside the measured window: each node's hitCount becomes its count
 * there, and the answer says how long a sample stood for.
 */
function withinWindow(profile: Profile): { profile: Profile; sampleMicros: number } {
  const hits = new Map<number, number>();
  let at = profile.startTime;
  let kept = 0;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    if (at < measured.from || at > measured.to) return;
    hits.set(id, (hits.get(id) ?? 0) + 1);
    kept += 1;
  });
  const nodes = profile.nodes.map((n) => ({ ...n, hitCount: hits.get(n.id) ?? 0 }));
  return { profile: { ...profile, nodes }, sampleMicros: (measured.to - measured.from) / Math.max(1, kept) };
}

// One profile per thread: CPU.<date>.<time>.<pid>.<thread>.<n>.cpuprofile, thread 0 the main one.
const files = readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile'));
const threadOf = (f: string) => Number(f.split('.')[4]);
const mainFile = files.find((f) => threadOf(f) === 0);
if (!mainFile) throw new Error(`no profile of the main thread written to ${profileDir}`);
const shortUrl = (url: string) => url.replace(/^file:\/\//, '').replace(/^.*\/node_modules\//, '~/').replace(`${process.cwd()}/`, '');
const print = (title: string, map: Map<string, number>, total: number) => {
  console.log(`\n${title}`);
  for (const [name, hits] of [...map].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) {
    console.log(`${((100 * hits) / total).toFixed(1).padStart(5)}%  ${name}`);
  }
};
// Other threads (intake's writer thread): how busy, and on what.
for (const file of files.filter((f) => f !== mainFile)) {
  const { profile: thread, sampleMicros } = withinWindow(JSON.parse(readFileSync(join(profileDir, file), 'utf8')) as Profile);
  const busy = new Map<string, number>();
  let busyHits = 0;
  for (const { callFrame, hitCount } of thread.nodes) {
    if (!hitCount || callFrame.functionName === '(idle)') continue;
    const name = `${callFrame.functionName || '(anonymous)'} ${shortUrl(callFrame.url)}:${callFrame.lineNumber + 1}`;
    busy.set(name, (busy.get(name) ?? 0) + hitCount);
    busyHits += hitCount;
  }
  console.log(`\nthread ${threadOf(file)}: busy ${((busyHits * sampleMicros) / result.requests).toFixed(1)} µs per request`);
  print(`thread ${threadOf(file)}, self time by function (busy samples)`, busy, Math.max(1, busyHits));
}

const { profile, sampleMicros } = withinWindow(JSON.parse(readFileSync(join(profileDir, mainFile), 'utf8')) as Profile);
const total = profile.nodes.reduce((sum, n) => sum + n.hitCount, 0);
const byFunction = new Map<string, number>();
const byFile = new Map<string, number>();
for (const { callFrame, hitCount } of profile.nodes) {
  const at = shortUrl(callFrame.url);
  const name = `${callFrame.functionName || '(anonymous)'} ${at}:${callFrame.lineNumber + 1}`;
  byFunction.set(name, (byFunction.get(name) ?? 0) + hitCount);
  const fileKey = at || callFrame.functionName;
  byFile.set(fileKey, (byFile.get(fileKey) ?? 0) + hitCount);
}
console.log(`\nmain thread, ${result.requests} requests in the measured window (after ${values.warmup} s of warm-up)`);
print('self time by function', byFunction, total);
print('self time by file', byFile, total);

// Time spent in our own functions and everything they call (each stack counted once per
// function), per request: what each /api hook and the handler cost.
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
const inclusive = new Map<string, number>();
for (const n of profile.nodes) {
  if (!n.hitCount) continue;
  const seen = new Set<string>();
  for (let id: number | undefined = n.id; id !== undefined; id = parent.get(id)) {
    const { callFrame } = nodes.get(id)!;
    if (!callFrame.url.includes('/src/')) continue;
    const name = `${callFrame.functionName || '(anonymous)'} ${callFrame.url.replace(/^.*\/src\//, 'src/')}:${callFrame.lineNumber + 1}`;
    if (seen.has(name)) continue;
    seen.add(name);
    inclusive.set(name, (inclusive.get(name) ?? 0) + n.hitCount);
  }
}
console.log(`\nour functions with what they call, CPU µs per request (${result.requests} requests)`);
for (const [name, hits] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) {
  console.log(`${((hits * sampleMicros) / result.requests).toFixed(1).padStart(7)}  ${name}`);
}
console.log(`${((total * sampleMicros) / result.requests).toFixed(1).padStart(7)}  all samples (idle included)`);

// Self time by step of the /api pipeline (docs/architecture.md), as µs per request: callback
// hooks call the next hook, so inclusive time cannot tell them apart, but their own code can.
const STEPS: Array<[string, RegExp]> = [
  ['authentication (api-auth, oauth)', /src\/(http\/api-auth|oauth\/)/],
  ['allowance (rate-limit-hook, plan-limiter, plans)', /src\/(http\/rate-limit-hook|limits\/|domain\/plans)/],
  ['path check (malformed-path)', /src\/http\/malformed-path/],
  ['domain (lookups and their cache, validation, phone numbers)', /src\/domain\/|libphonenumber-js/],
  ['store (Kysely, SQL on this thread)', /src\/store\//],
  ['metrics (request and outcome counts, prom-client)', /src\/(metrics|http\/(request|outcome)-metrics)|prom-client/],
  ['answer serialization (fast-json-stringify, ajv)', /fast-json-stringify|\/ajv\//],
  ['other code of ours', /src\//],
  ['Fastify, its router and logger', /fastify|find-my-way|pino|light-my-request|avvio/],
  ['socket write (and waiting for a CPU after it)', /^writeUtf8String$/],
  ['start-up: loading and compiling modules', /^node:internal\/(modules|deps\/amaro|bootstrap)|^(compileSourceTextModule|wrapSafe|internalModuleStat)$/],
  ['node:http and streams', /^node:/],
];
const bySteps = new Map<string, number>();
for (const { callFrame, hitCount } of profile.nodes) {
  if (callFrame.functionName === '(idle)') continue;
  const where = callFrame.url || callFrame.functionName;
  const step = STEPS.find(([, pattern]) => pattern.test(where) || pattern.test(callFrame.functionName))?.[0] ?? 'other (GC, V8, native)';
  bySteps.set(step, (bySteps.get(step) ?? 0) + hitCount);
}
console.log('\nself time by step, µs per request (wall-clock samples: see docs/testing.md)');
for (const [step, hits] of [...bySteps].sort((a, b) => b[1] - a[1])) console.log(`${((hits * sampleMicros) / result.requests).toFixed(1).padStart(7)}  ${step}`);
if (values.statements) printStatementTimes(result.requests);
console.log(`\nprofiles: ${profileDir}`);

/**
 * Per thread that ran SQLite statements, each statement's time over the measured window: the
 * difference between the totals bench/probes/statement-times.ts wrote last before its start and its end.
 */
function printStatementTimes(requests: number): void {
  type Totals = Record<string, { calls: number; nanos: number }>;
  for (const file of readdirSync(profileDir).filter((f) => f.startsWith('statements.'))) {
    const lines = readFileSync(join(profileDir, file), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { at: number; totals: Totals });
    const before = lines.filter((l) => l.at <= measured.from).at(-1)?.totals ?? {};
    const after = lines.filter((l) => l.at <= measured.to).at(-1)?.totals ?? {};
    const rows = Object.entries(after)
      .map(([text, { calls, nanos }]) => ({ text, calls: calls - (before[text]?.calls ?? 0), nanos: nanos - (before[text]?.nanos ?? 0) }))
      .filter((row) => row.calls > 0)
      .sort((a, b) => b.nanos - a.nanos);
    const all = rows.reduce((sum, row) => sum + row.nanos, 0);
    console.log(`\nthread ${file.split('.')[2]}, SQLite statements over the window: ${(all / 1e3 / requests).toFixed(1)} µs per request in all`);
    console.log('  µs/req  calls/req  µs/call  statement');
    for (const row of rows.slice(0, Number(values.top))) {
      console.log(`${(row.nanos / 1e3 / requests).toFixed(1).padStart(8)}  ${(row.calls / requests).toFixed(3).padStart(9)}  ${(row.nanos / 1e3 / row.calls).toFixed(1).padStart(7)}  ${row.text}`);
    }
  }
}
