import { readdirSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { measuredStore } from '../support/cached-stores.ts';
import { poolNumber } from '../support/generate-events.ts';
import { singleEventLoad } from '../support/loads.ts';
import { benchClient, knownNumbers, log, prepareStore, startProcess, tokenFor } from '../support/support.ts';
import { requireWrk, runWrk } from '../support/wrk.ts';

/**
 * Server CPU per single event by thread (main, SQLite writer, V8's and libuv's helpers), user and
 * system time apart, from /proc/<pid>/task: where intake's CPU goes without a profiler's
 * overhead, flat out or paced (`--rate`, as phase 2 of npm run bench paces it). Then the bytes
 * the process handed to write calls per event (/proc/<pid>/io, `wchar`: the WAL's frames, each a
 * page), which a durable commit must get onto the disk before it answers.
 *
 *   node bench/probes/thread-cpu.ts --rate 2000 --seconds 10
 *   node bench/probes/thread-cpu.ts --database sqlite:<a copy of a big store> --rate 2000 --fleet --pool 200000
 *
 * `--fleet` submits as a trusted fleet (its events count in the shared data set, which TAXII
 * serves), and `--pool N` calls up to 50,000 numbers drawn from the generated stores' first N
 * (phase 2 of npm run bench draws 2,000 from all 200,000) instead of the 1,000 the store already
 * knows: on a big store, numbers whose rows and index entries are on pages of their own.
 */
const { values } = parseArgs({
  options: {
    database: { type: 'string' },
    connections: { type: 'string', default: '64' },
    seconds: { type: 'string', default: '10' },
    rate: { type: 'string', default: '0' },
    fleet: { type: 'boolean', default: false },
    pool: { type: 'string' },
  },
});
requireWrk();
const TICK_MICROS = 10_000; // USER_HZ 100

/** CPU ticks per thread name: user and system. */
function threadTicks(pid: number): Map<string, { user: number; system: number }> {
  const ticks = new Map<string, { user: number; system: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended
    }
    const name = `${stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))}${tid === String(pid) ? ' (main)' : ''}`;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const kept = ticks.get(name) ?? { user: 0, system: 0 };
    kept.user += Number(fields[11]);
    kept.system += Number(fields[12]);
    ticks.set(name, kept);
  }
  return ticks;
}

/** Bytes handed to write calls, and those calls, so far (/proc/<pid>/io). */
function written(pid: number): { bytes: number; calls: number } {
  const io = Object.fromEntries(readFileSync(`/proc/${pid}/io`, 'utf8').trim().split('\n').map((line) => line.split(': ')));
  return { bytes: Number(io.wchar), calls: Number(io.syscw) };
}

const database = await measuredStore(values.database);
const client = values.fleet ? await benchClient(database, undefined, { trusted: true, name: 'bench fleet' }) : await prepareStore(database);
const pool = Number(values.pool ?? 0);
// Called numbers as honeypots write them (00…), as phase 2 of npm run bench sends them.
const numbers = pool > 0 ? Array.from({ length: Math.min(pool, 50_000) }, () => `00${poolNumber(Math.floor(Math.random() * pool)).slice(1)}`) : await knownNumbers(database);
const server = await startProcess('src/server.ts', { DATABASE_URL: database }, '/readyz');
try {
  const token = await tokenFor(server.url, client);
  const script = singleEventLoad(token, numbers.length ? numbers : ['+441234567890'], Number(values.rate) || undefined);
  await runWrk(server.url, script, Number(values.connections), 2);
  const pid = server.child.pid!;
  const before = threadTicks(pid);
  const writesBefore = written(pid);
  const result = await runWrk(server.url, script, Number(values.connections), Number(values.seconds));
  const after = threadTicks(pid);
  const writesAfter = written(pid);
  log(`intake @${values.connections}${Number(values.rate) ? `, paced to ${values.rate}/s` : ''}: ${Math.round(result.requests / result.seconds)} events/s, p99 ${result.p99} ms, ${JSON.stringify(result.statuses)}`);
  log('  CPU µs per event   user  system  thread');
  let total = 0;
  for (const [name, end] of after) {
    const start = before.get(name) ?? { user: 0, system: 0 };
    const user = ((end.user - start.user) * TICK_MICROS) / result.requests;
    const system = ((end.system - start.system) * TICK_MICROS) / result.requests;
    total += user + system;
    if (user + system >= 1) log(`  ${String(Math.round(user + system)).padStart(16)} ${String(Math.round(user)).padStart(6)} ${String(Math.round(system)).padStart(7)}  ${name}`);
  }
  log(`  ${String(Math.round(total)).padStart(16)}  in all`);
  const bytes = writesAfter.bytes - writesBefore.bytes;
  // The log's and the sockets' writes count too; the WAL's frames are nearly all of it.
  log(`written: ${Math.round(bytes / result.requests).toLocaleString('en')} bytes per event, ${((bytes / result.seconds) / 1e6).toFixed(1)} MB/s, in ${Math.round((writesAfter.calls - writesBefore.calls) / result.requests)} write calls per event`);
} finally {
  await server.stop();
}
