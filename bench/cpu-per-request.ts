import { parseArgs } from 'node:util';
import { measuredStore } from './cached-stores.ts';
import { notFoundLoad, pathsLoad } from './loads.ts';
import { cpuMicros, knownNumbers, log, prepareStore, startProcess, tokenFor } from './support.ts';
import { requireWrk, runWrk } from './wrk.ts';

/**
 * Server CPU (user + system) per request under one lookup load, without a profiler's overhead:
 * for comparing a change against what it replaces (run each a few times; a shared machine drifts).
 *
 *   node bench/cpu-per-request.ts --load found --connections 64 --seconds 5
 *   TOLLWATCH_LOOKUP_CACHE_MS=60000 node bench/cpu-per-request.ts   (every lookup answered from memory)
 *   node bench/cpu-per-request.ts --server bench/fastify-server.ts  (a baseline)
 */
const { values } = parseArgs({
  options: {
    // Default: the 10,000-event store npm run bench builds and caches (built here if missing).
    database: { type: 'string' },
    load: { type: 'string', default: 'found' },
    server: { type: 'string', default: 'src/server.ts' },
    connections: { type: 'string', default: '64' },
    seconds: { type: 'string', default: '5' },
  },
});
requireWrk();
const database = await measuredStore(values.database);
const client = await prepareStore(database);
const numbers = await knownNumbers(database);
if (values.load === 'found' && numbers.length === 0) throw new Error(`${database} holds no numbers to find: give a store with events, or no --database for the generated one`);
const ours = values.server === 'src/server.ts';
const server = await startProcess(values.server, { DATABASE_URL: database }, ours ? '/readyz' : '/api/phone-numbers/1');
try {
  const token = ours ? await tokenFor(server.url, client) : 'baseline';
  const script = values.load === 'found' ? pathsLoad(token, numbers.map((n) => `/api/phone-numbers/${encodeURIComponent(n)}`)) : notFoundLoad(token);
  await runWrk(server.url, script, 16, 2);
  const before = cpuMicros(server.child.pid);
  const result = await runWrk(server.url, script, Number(values.connections), Number(values.seconds));
  const cpu = cpuMicros(server.child.pid) - before;
  log(`${values.server} ${values.load} @${values.connections}: ${Math.round(result.requests / result.seconds)} req/s, ${Math.round(cpu / result.requests)} CPU µs/request, p99 ${result.p99} ms, ${JSON.stringify(result.statuses)}`);
} finally {
  await server.stop();
}
