import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { benchEvent, knownNumbers, log, prepareStore, startProcess, tokenFor } from './support.ts';

/**
 * Profiles the server under one kind of load and prints where its CPU time goes (self time per
 * function, then per file), so that speed work starts from a measurement:
 *
 *   node bench/profile.ts --database sqlite:bench/.data/events-10000.db --load lookup
 *   node bench/profile.ts --load intake --connections 64 --seconds 10
 *   node bench/profile.ts --load batch --batch-size 1000
 *
 * The raw `.cpuprofile` stays in a temporary folder (printed) for Chrome DevTools.
 */
const { values } = parseArgs({
  options: {
    database: { type: 'string', default: 'sqlite:bench/.data/events-10000.db' },
    load: { type: 'string', default: 'lookup' },
    connections: { type: 'string', default: '16' },
    seconds: { type: 'string', default: '8' },
    'batch-size': { type: 'string', default: '1000' },
    top: { type: 'string', default: '30' },
  },
});
const loads = ['lookup', 'lookup-missing', 'intake', 'batch'] as const;
type Load = (typeof loads)[number];
const load = values.load as Load;
if (!loads.includes(load)) throw new Error(`--load must be one of ${loads.join(', ')}`);

const client = await prepareStore(values.database);
const numbers = await knownNumbers(values.database);
const profileDir = mkdtempSync(join(tmpdir(), 'tollwatch-profile-'));
const server = await startProcess('src/server.ts', { DATABASE_URL: values.database, NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profileDir} ${process.env.NODE_OPTIONS ?? ""}` }, '/readyz');
const token = await tokenFor(server.url, client);
const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
const batchSize = Number(values['batch-size']);
const anyNumber = () => numbers[Math.floor(Math.random() * numbers.length)] ?? '+441234567890';

const request: Record<Load, () => { method: 'GET' | 'POST'; path: string; body?: string }> = {
  lookup: () => ({ method: 'GET', path: `/api/phone-numbers/${encodeURIComponent(anyNumber())}` }),
  'lookup-missing': () => ({ method: 'GET', path: `/api/phone-numbers/%2B999${Math.floor(Math.random() * 1e9)}` }),
  intake: () => ({ method: 'POST', path: '/api/events', body: benchEvent(anyNumber()) }),
  batch: () => ({ method: 'POST', path: '/api/events/batch', body: `[${Array.from({ length: batchSize }, () => benchEvent(anyNumber())).join(',')}]` }),
};

const result = await autocannon({
  url: server.url,
  connections: Number(values.connections),
  duration: Number(values.seconds),
  requests: [{ setupRequest: (r) => ({ ...r, ...request[load](), headers }) }],
});
await server.stop();
log(`${load}: ${Math.round(result.requests.average)} req/s, p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, statuses ${JSON.stringify(result.statusCodeStats)}`);

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount: number;
}
const file = readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
if (!file) throw new Error(`no profile written to ${profileDir}`);
const profile = JSON.parse(readFileSync(join(profileDir, file), 'utf8')) as { nodes: ProfileNode[] };
const total = profile.nodes.reduce((sum, n) => sum + n.hitCount, 0);
const byFunction = new Map<string, number>();
const byFile = new Map<string, number>();
for (const { callFrame, hitCount } of profile.nodes) {
  const where = callFrame.url.replace(/^file:\/\//, '').replace(/^.*\/node_modules\//, '~/').replace(`${process.cwd()}/`, '');
  const name = `${callFrame.functionName || '(anonymous)'} ${where}:${callFrame.lineNumber + 1}`;
  byFunction.set(name, (byFunction.get(name) ?? 0) + hitCount);
  const fileKey = where || callFrame.functionName;
  byFile.set(fileKey, (byFile.get(fileKey) ?? 0) + hitCount);
}
const print = (title: string, map: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [name, hits] of [...map].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) {
    console.log(`${((100 * hits) / total).toFixed(1).padStart(5)}%  ${name}`);
  }
};
print('self time by function', byFunction);
print('self time by file', byFile);
console.log(`\nprofile: ${join(profileDir, file)}`);
