import { parseArgs } from 'node:util';
import { measuredStore } from '../support/cached-stores.ts';
import { batchLoad, notFoundLoad, pathsLoad, singleEventLoad } from '../support/loads.ts';
import { cpuMicros, knownNumbers, log, prepareStore, startProcess, tokenFor } from '../support/support.ts';
import { requireWrk, runWrk } from '../support/wrk.ts';

/**
 * Server CPU (user + system) per request under one load, without a profiler's overhead: for
 * comparing a change against what it replaces (run each a few times; a shared machine drifts).
 * CPU time, unlike a rate, barely moves when something else shares the machine. Loads: `found`
 * and `missing` lookups, `intake` (single events) and `batch` (of 1,000; also per event).
 *
 *   node bench/probes/cpu-per-request.ts --load found --connections 64 --seconds 5
 *   TOLLWATCH_LOOKUP_CACHE_MS=60000 node bench/probes/cpu-per-request.ts   (every lookup answered from memory)
 *   node bench/probes/cpu-per-request.ts --server bench/baselines/fastify-server.ts  (a baseline)
 *   node bench/probes/cpu-per-request.ts --load intake --seconds 10 [--rate 2000]
 *   node bench/probes/cpu-per-request.ts --log-level info                   (every request logged, as the README's default)
 */
const { values } = parseArgs({
  options: {
    // Default: the 10,000-event store npm run bench builds and caches (built here if missing).
    database: { type: 'string' },
    load: { type: 'string', default: 'found' },
    server: { type: 'string', default: 'src/server.ts' },
    connections: { type: 'string', default: '64' },
    seconds: { type: 'string', default: '5' },
    // Single events paced to this many a second (as phase 2 of npm run bench paces them); 0: flat out.
    rate: { type: 'string', default: '0' },
    // The server's LOG_LEVEL: at info it logs every request it answers.
    'log-level': { type: 'string', default: 'warn' },
    // Load before the measured window: the JIT's compiles, and the server's own start-up work
    // (its first publication and fold passes), stay out of the figure.
    warmup: { type: 'string', default: '2' },
  },
});
/** Events per request of the batch load. */
const BATCH = 1000;
requireWrk();
const database = await measuredStore(values.database);
const client = await prepareStore(database);
const numbers = await knownNumbers(database);
if (values.load === 'found' && numbers.length === 0) throw new Error(`${database} holds no numbers to find: give a store with events, or no --database for the generated one`);
const ours = values.server === 'src/server.ts';
const server = await startProcess(values.server, { DATABASE_URL: database, LOG_LEVEL: values['log-level'] }, ours ? '/readyz' : '/api/phone-numbers/1');
try {
  const token = ours ? await tokenFor(server.url, client) : 'baseline';
  const intakeNumbers = numbers.length ? numbers : ['+441234567890'];
  const scripts: Record<string, () => string> = {
    found: () => pathsLoad(token, numbers.map((n) => `/api/phone-numbers/${encodeURIComponent(n)}`)),
    missing: () => notFoundLoad(token),
    intake: () => singleEventLoad(token, intakeNumbers, Number(values.rate) || undefined),
    batch: () => batchLoad(token, intakeNumbers, BATCH),
  };
  const build = scripts[values.load];
  if (!build) throw new Error(`--load must be one of ${Object.keys(scripts).join(', ')}`);
  const script = build();
  await runWrk(server.url, script, values.load === 'batch' ? 4 : 16, Number(values.warmup));
  const before = cpuMicros(server.child.pid);
  const result = await runWrk(server.url, script, Number(values.connections), Number(values.seconds));
  const cpu = cpuMicros(server.child.pid) - before;
  const perEvent = values.load === 'batch' ? `, ${Math.round(cpu / (result.requests * BATCH))} CPU µs/event` : '';
  log(`${values.server} ${values.load} @${values.connections} (${values['log-level']}): ${Math.round(result.requests / result.seconds)} req/s, ${Math.round(cpu / result.requests)} CPU µs/request${perEvent}, p99 ${result.p99} ms, ${JSON.stringify(result.statuses)}`);
} finally {
  await server.stop();
}
