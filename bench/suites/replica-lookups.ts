import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { openDatabase } from '../../src/store/database.ts';
import { startPrivateCluster } from '../../test/support/private-postgres.ts';
import { generateEvents } from '../support/generate-events.ts';
import { notFoundLoad, pathsLoad } from '../support/loads.ts';
import { cpuMicros, knownNumbers, log, prepareStore, printTable, startProcess, tokenFor } from '../support/support.ts';
import { requireWrk, runWrk } from '../support/wrk.ts';

/**
 * `npx node bench/suites/replica-lookups.ts [--events 200000] [--seconds 15] [--rounds 2]`: what a read
 * replica does to lookups (docs/scaling.md, "Read replicas"). On a PostgreSQL cluster of its own
 * (test/support/private-postgres.ts: initdb as the `postgres` user, so run as root), filled with
 * `--events` shared events and then copied to a streaming replica (pg_basebackup), it starts the
 * server on the primary alone, then on the primary with DATABASE_READ_URL naming the replica, in
 * turn for `--rounds` rounds, one server at a time, and drives each with wrk: lookups of 1,000
 * known numbers (found: after the first of each, answered from the lookup cache) and of numbers
 * no store holds (not found: each a read of the store, the replica's where there is one), at 16
 * and 64 connections. It reports lookups a second, p99 and the server's CPU per lookup (from
 * /proc). The replica shares this machine's two cores with everything else: this measures what
 * the read path costs, not the capacity a replica on a machine of its own adds.
 */
const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '200000' },
    seconds: { type: 'string', default: '15' },
    rounds: { type: 'string', default: '2' },
  },
});
requireWrk();
const SECONDS = Number(values.seconds);
const keySecret = randomBytes(32).toString('base64');

interface Row {
  mode: string;
  load: string;
  connections: number;
  round: number;
  rate: number;
  p99: number;
  cpu: number;
  statuses: string;
}

const cluster = await startPrivateCluster();
try {
  const primary = cluster.adminUrl;
  const store = await openDatabase(primary);
  log(`filling the primary with ${Number(values.events).toLocaleString('en')} events`);
  await generateEvents(store, { events: Number(values.events), numbers: 50_000, addresses: 20_000, seed: 7, rebuild: true });
  await store.close();
  const client = await prepareStore(primary, keySecret);
  const numbers = await knownNumbers(primary, 1000);
  const replica = await cluster.startReplica();
  log(`replica at ${replica}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);

  const rows: Row[] = [];
  const modes: Array<[string, Record<string, string>]> = [
    ['primary only', {}],
    ['with a replica', { DATABASE_READ_URL: replica }],
  ];
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const [mode, extra] of modes) {
      const server = await startProcess('src/server.ts', { DATABASE_URL: primary, TOLLWATCH_KEY_SECRET: keySecret, ...extra }, '/readyz');
      try {
        const token = await tokenFor(server.url, client);
        const loads: Array<[string, string]> = [
          ['found (cached)', pathsLoad(token, numbers.map((n) => `/api/phone-numbers/${encodeURIComponent(n)}`))],
          ['not found (store read)', notFoundLoad(token)],
        ];
        for (const [load, script] of loads) {
          // A few seconds unmeasured first: the routes' first runs, the cache's first fill.
          await runWrk(server.url, script, 16, 3);
          for (const connections of [16, 64]) {
            const before = cpuMicros(server.child.pid);
            const result = await runWrk(server.url, script, connections, SECONDS);
            const cpu = (cpuMicros(server.child.pid) - before) / Math.max(1, result.requests);
            rows.push({ mode, load, connections, round, rate: Math.round(result.requests / result.seconds), p99: result.p99, cpu: Math.round(cpu), statuses: JSON.stringify(result.statuses) });
            log(`${mode}, ${load}, ${connections} connections, round ${round}: ${rows.at(-1)!.rate} lookups/s, p99 ${result.p99} ms, ${rows.at(-1)!.cpu} µs of server CPU each`);
          }
        }
      } finally {
        await server.stop();
      }
    }
  }
  console.log(`\nLookups with and without a read replica: ${Number(values.events).toLocaleString('en')} events; ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}; load average at the end ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
  printTable<Row>(
    [
      ['mode', -16, (r) => r.mode],
      ['load', -24, (r) => r.load],
      ['connections', 11, (r) => r.connections],
      ['round', 5, (r) => r.round],
      ['lookups/s', 10, (r) => r.rate.toLocaleString('en')],
      ['p99 ms', 8, (r) => r.p99],
      ['server µs/lookup', 16, (r) => r.cpu],
      ['answers', -20, (r) => r.statuses],
    ],
    rows,
  );
} finally {
  cluster.remove();
}
