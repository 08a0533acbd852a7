import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { openDatabase } from '../../src/store/database.ts';
import { BENCH_DATA, cachedStore, storeCopy } from '../support/cached-stores.ts';
import { poolNumber } from '../support/generate-events.ts';
import { batchLoad, pathsLoad, singleEventLoad } from '../support/loads.ts';
import { heapOf, log, prepareStore, printTable, rssMiB, startProcess, tokenFor } from '../support/support.ts';
import { requireWrk, runWrk } from '../support/wrk.ts';

/**
 * `npx node bench/suites/memory-at-size.ts --database sqlite:<store> [--seconds 20]`: the server's
 * resident memory on a store of any size, against the same loads on a copy of the cached
 * 10,000-event store in the same run. How a large store is made:
 * `npx node bench/support/generate-events.ts --database sqlite:bench/.data/events-10m-5m.db --events
 * 10000000 --numbers 8000000` (about 5 million distinct numbers, the generator's pool being
 * skewed). The large store is written to (intake phases add events): it is a measuring store.
 *
 * Per store: the server started and idle; lookups of numbers sampled across the whole store
 * (16 connections), so that the page caches and the lookup cache fill as far as they will;
 * single events paced at 2,000 a second, over a pool of numbers mostly new to the store, so the
 * fold's kept rows (store/fold/fold-row-cache.ts) fill to their bound; batches of 1,000 (4
 * connections); the lookups again. Prints each phase's peak resident set (sampled every 250 ms
 * from /proc) and V8's heap in use after it (the server's /metrics).
 */
const { values } = parseArgs({ options: { database: { type: 'string' }, seconds: { type: 'string', default: '20' }, sample: { type: 'string', default: '50000' } } });
if (!values.database) throw new Error('--database sqlite:<store> is required');
const SECONDS = Number(values.seconds);

interface Row {
  store: string;
  phase: string;
  perSecond: number;
  peakMiB: number;
  heapMiB: number;
}
const rows: Row[] = [];

/** Numbers of the store's shared data set, one in every `step` rows along its primary key, up to `limit`. */
async function sampledNumbers(url: string, limit: number): Promise<string[]> {
  const database = await openDatabase(url);
  try {
    const { rows: [count] } = await sql<{ n: number }>`select count(*) as n from number_aggregates where scope = '*shared*'`.execute(database.db);
    const step = Math.max(1, Math.floor(Number(count!.n) / limit));
    const { rows: found } = await sql<{ number_key: string }>`select number_key from number_aggregates where scope = '*shared*' and rowid % ${step} = 0 limit ${limit}`.execute(database.db);
    return found.map((r) => r.number_key);
  } finally {
    await database.close();
  }
}

async function measureStore(label: string, url: string): Promise<void> {
  const numbers = await sampledNumbers(url, Number(values.sample));
  log(`${label}: ${numbers.length.toLocaleString('en')} numbers sampled for lookups`);
  // Called numbers as honeypots write them, drawn from a pool far wider than the stores' (most new).
  const intakeNumbers = Array.from({ length: 20_000 }, () => `00${poolNumber(Math.floor(Math.random() * 40_000_000)).slice(1)}`);
  const client = await prepareStore(url);
  const server = await startProcess('src/server.ts', { DATABASE_URL: url }, '/readyz');
  try {
    const token = await tokenFor(server.url, client);
    const pid = server.child.pid;
    const phase = async (name: string, script: string | undefined, connections: number, expected: number, perRequest: number) => {
      let peak = rssMiB(pid) ?? 0;
      const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(pid) ?? 0)), 250);
      let perSecond = 0;
      if (script) {
        const result = await runWrk(server.url, script, connections, SECONDS);
        perSecond = Math.round(((result.statuses[String(expected)] ?? 0) * perRequest) / result.seconds);
      } else {
        await new Promise((resolve) => setTimeout(resolve, 2000));
      }
      clearInterval(sampler);
      rows.push({ store: label, phase: name, perSecond, peakMiB: peak, heapMiB: (await heapOf(server.url)).heap });
      log(`  ${name}: ${perSecond}/s, peak ${peak} MiB`);
    };
    const lookups = pathsLoad(token, numbers.map((n) => `/api/phone-numbers/${encodeURIComponent(n)}`));
    await phase('started, idle', undefined, 0, 0, 0);
    await phase('lookups found, 16 connections', lookups, 16, 200, 1);
    await phase('single events at 2,000/s, 64 connections', singleEventLoad(token, intakeNumbers, 2000), 64, 201, 1);
    await phase('batches of 1,000, 4 connections', batchLoad(token, intakeNumbers, 1000), 4, 200, 1000);
    await phase('lookups found again', lookups, 16, 200, 1);
  } finally {
    await server.stop();
  }
}

requireWrk();
await measureStore('10,000 events', storeCopy(await cachedStore(10_000), join(BENCH_DATA, 'memory.db')));
await measureStore(values.database, values.database);
printTable<Row>(
  [
    ['store', -32, (r) => r.store],
    ['phase', -44, (r) => r.phase],
    ['per s', 8, (r) => r.perSecond || undefined],
    ['peak RSS MiB', 12, (r) => r.peakMiB],
    ['heap MiB', 8, (r) => r.heapMiB],
  ],
  rows,
);
