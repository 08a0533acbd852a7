import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { validateHoneypotEvent, type HoneypotEvent } from '../../src/domain/events/honeypot-event.ts';
import { SHARED_SCOPE } from '../../src/domain/visibility.ts';
import { foldStep } from '../../src/store/fold/aggregate-fold.ts';
import { openDatabase } from '../../src/store/database.ts';
import { SqlEventsRepository } from '../../src/store/repositories/events-repository.ts';
import { FoldRowCache } from '../../src/store/fold/fold-row-cache.ts';
import { cachedStore, storeCopy } from '../support/cached-stores.ts';
import { poolNumber } from '../support/generate-events.ts';
import { benchEventFields, log, postgresBenchDatabase } from '../support/support.ts';

/**
 * The fold's own cost per event, in steps the size live intake makes (about 200 ms of it), with
 * its rows read back each step and with the rows it wrote kept (src/store/fold/fold-row-cache.ts),
 * in turn, each on a fresh store holding the same events:
 *
 *   npx node bench/probes/fold-steps.ts [--events 100000] [--step 400] [--numbers 2000] [--addresses 250] [--rounds 2] [--postgres] [--on 1000000]
 *
 * The events are the HTTP bench's (bench/support/loads.ts: numbers from a pool, a few hundred source
 * addresses), stored through the repository first, then folded with nothing else running.
 * Reported: this process's CPU (user + system) and wall time per event folded; on PostgreSQL
 * the wall time holds the database's share too; on SQLite the bytes the fold handed to write
 * calls (the WAL's frames, about a page each: what a step's commit writes).
 *
 * `--on N` folds them into a copy of the cached store of N generated events (bench/support/cached-stores.ts:
 * a trusted fleet's, numbers from a pool of 200,000, 50,000 addresses, aggregates built) instead
 * of an empty one, so that the aggregate tables and distinct sets are the size of a store in use
 * and a step's keys fall on pages of their own. The events' numbers come from the same pool
 * (`--numbers` at most 200,000), so they add to rows the store holds.
 */
const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '100000' },
    step: { type: 'string', default: '400' },
    numbers: { type: 'string', default: '2000' },
    addresses: { type: 'string', default: '250' },
    rounds: { type: 'string', default: '2' },
    postgres: { type: 'boolean', default: false },
    on: { type: 'string' },
  },
});
const events = Number(values.events);
const step = Number(values.step);

function benchEvents(): HoneypotEvent[] {
  const now = new Date();
  return Array.from({ length: events }, () => {
    const address = Math.floor(Math.random() * Number(values.addresses));
    const fields = benchEventFields({
      event_uuid: randomUUID(),
      called_number: poolNumber(Math.floor(Math.random() * Number(values.numbers))),
      source_ip: `198.51.${address >> 8}.${address & 255}`,
    });
    const result = validateHoneypotEvent(fields, now);
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    return result.event;
  });
}

if (values.on && values.postgres) throw new Error('--on takes a SQLite store');
const base = values.on ? await cachedStore(Number(values.on)) : undefined;

/** Bytes this process handed to write calls so far (/proc/self/io). */
function bytesWritten(): number {
  return Number(/^wchar: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))![1]);
}

async function run(kept: boolean): Promise<{ cpu: number; wall: number; written: number; rowsKept: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'tollwatch-fold-'));
  const postgres = values.postgres ? await postgresBenchDatabase() : undefined;
  if (values.postgres && !postgres) throw new Error('PostgreSQL is not reachable (BENCH_POSTGRES_URL)');
  const database = await openDatabase(postgres?.url ?? storeCopy(base, join(dir, 'fold.db')));
  try {
    const accountId = randomUUID();
    await database.db.insertInto('accounts').values({ account_id: accountId, name: 'fold bench', plan: 'contributor', trusted: 1, disabled: 0, created_at: new Date().toISOString() }).execute();
    const repo = new SqlEventsRepository(database.db, database.ingestWrites);
    const all = benchEvents();
    for (let i = 0; i < all.length; i += 1000) await repo.ingest({ accountId, scope: SHARED_SCOPE }, all.slice(i, i + 1000));
    const cache = kept ? new FoldRowCache() : undefined;
    const cpuBefore = process.cpuUsage();
    const writtenBefore = bytesWritten();
    const started = performance.now();
    while ((await foldStep(database, step, cache)).folded > 0);
    const wall = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    return { cpu: cpu.user + cpu.system, wall: wall * 1000, written: bytesWritten() - writtenBefore, rowsKept: cache?.size ?? 0 };
  } finally {
    await database.close();
    await postgres?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

for (let round = 1; round <= Number(values.rounds); round++) {
  for (const kept of [false, true]) {
    const { cpu, wall, written, rowsKept } = await run(kept);
    log(
      `round ${round}, ${kept ? 'rows kept   ' : 'rows read back'}: ${(cpu / events).toFixed(1)} µs CPU and ${(wall / events).toFixed(1)} µs wall per event folded${values.postgres ? '' : `, ${Math.round(written / events).toLocaleString('en')} bytes written`}, ${events.toLocaleString('en')} events in steps of ${step}${kept ? `, ${rowsKept.toLocaleString('en')} rows kept` : ''}`,
    );
  }
}
