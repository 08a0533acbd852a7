import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../src/store/database.ts';
import { generateEvents } from './generate-events.ts';
import { mixedLoad } from './loads.ts';
import { benchEvent, log, prepareStore, rssMiB, startProcess, tokenFor } from './support.ts';
import { requireWrk, runWrk } from './wrk.ts';

/**
 * `npm run soak`: sustained mixed load (lookups, address lookups, submissions, token requests)
 * against the real server for SOAK_SECONDS (default 60), sampling its resident memory every
 * second. After warm-up (the first half), memory must stop growing: the median of the last
 * 10 s within 10% of the median of the 10 s after warm-up. Any 5xx or connection error fails
 * the run too. Load goes only to 127.0.0.1, from wrk (bench/wrk.ts), as the benchmark's.
 *
 * Two things legitimately grow at first and then stop: SQLite's page cache (it fills to
 * TOLLWATCH_SQLITE_CACHE_MB as pages are touched) and V8's heap reservation. So the store is
 * pre-filled past the cache size and the run warms up until both have settled; what grows
 * after that is a leak.
 */
requireWrk();
const SECONDS = Number(process.env.SOAK_SECONDS ?? 60);
const PREFILL = Number(process.env.SOAK_PREFILL_EVENTS ?? 150_000);
const dir = mkdtempSync(join(tmpdir(), 'tollwatch-soak-'));
const databaseUrl = `sqlite:${join(dir, 'soak.db')}`;

const store = await openDatabase(databaseUrl);
await generateEvents(store, { events: PREFILL, numbers: 50_000, addresses: 20_000, seed: 7, rebuild: true });
await store.close();
const client = await prepareStore(databaseUrl);
const server = await startProcess('src/server.ts', { DATABASE_URL: databaseUrl }, '/readyz');
const stop = async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
};
process.on('SIGINT', () => void stop().then(() => process.exit(130)));

try {
  const token = await tokenFor(server.url, client);
  const numbers = Array.from({ length: 1000 }, (_, i) => `+4420${String(7_000_000 + i * 13)}`);
  const event = benchEvent;
  // Half the numbers have been seen before the run starts.
  await fetch(`${server.url}/api/events/batch`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: `[${numbers.slice(0, 500).map(event).join(',')}]`,
  });

  const tokenBody = JSON.stringify({ client_id: client.client_id, client_secret: client.client_secret, audience: `${server.url}/api`, grant_type: 'client_credentials' });
  const samples: Array<{ at: number; rss: number }> = [];
  const started = Date.now();
  const sampler = setInterval(() => {
    const rss = rssMiB(server.child.pid);
    if (rss) samples.push({ at: (Date.now() - started) / 1000, rss });
  }, 1000);

  const result = await runWrk(server.url, mixedLoad(token, tokenBody, numbers), 32, SECONDS);
  clearInterval(sampler);

  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
  const warmUp = SECONDS / 2;
  const baseline = median(samples.filter((s) => s.at >= warmUp && s.at < warmUp + 10).map((s) => s.rss));
  const final = median(samples.filter((s) => s.at >= SECONDS - 10).map((s) => s.rss));
  const growth = baseline ? final / baseline - 1 : 0;
  const serverErrors = Object.entries(result.statuses).filter(([status]) => Number(status) >= 500);

  console.log(`soak: ${SECONDS} s, 32 connections, ${Math.round(result.requests / result.seconds)} requests/s`);
  console.log(`  requests by kind: ${JSON.stringify(result.kinds)}`);
  console.log(`  answers by status: ${JSON.stringify(result.statuses)}`);
  console.log(`  latency p50 ${result.p50} ms, p99 ${result.p99} ms; connection errors and timeouts ${result.errors}`);
  console.log(`  resident memory: baseline ${baseline} MiB (after ${warmUp} s warm-up), final ${final} MiB, growth ${(growth * 100).toFixed(1)}%`);
  console.log(`  samples (s:MiB): ${samples.map((s) => `${Math.round(s.at)}:${s.rss}`).join(' ')}`);

  const failures = [
    growth >= 0.1 ? `resident memory grew ${(growth * 100).toFixed(1)}% after warm-up (limit 10%)` : '',
    serverErrors.length ? `server errors: ${JSON.stringify(serverErrors)}` : '',
    result.errors > 0 ? `${result.errors} connection errors or timeouts` : '',
  ].filter(Boolean);
  await stop();
  if (failures.length) {
    log(`soak FAILED: ${failures.join('; ')}`);
    process.exit(1);
  }
  console.log('soak passed');
} catch (err) {
  await stop();
  throw err;
}
