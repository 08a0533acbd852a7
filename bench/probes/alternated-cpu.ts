import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { pathsLoad } from '../support/loads.ts';
import { cpuMicros, log, ROOT } from '../support/support.ts';
import { requireWrk, runWrk } from '../support/wrk.ts';

/**
 * Server CPU per found lookup of two trees (this one and another checkout, say the commit before
 * a change), both servers running at once and loaded in turn, window after window, A B then B A:
 * for a difference of a few percent, which separate runs on a shared virtual machine cannot settle
 * (the same tree measured 49–90 µs a request in runs minutes apart). Whatever the machine does
 * meanwhile falls on both alike; each window's pair gives one ratio, and the median of the ratios
 * is the figure.
 *
 *   node bench/probes/alternated-cpu.ts --b ../before              (this tree is A)
 *   node bench/probes/alternated-cpu.ts --b ../before --windows 20 --seconds 3 --pin
 *   node bench/probes/alternated-cpu.ts --b ../before --windows 10 --seconds 3 --settle 3 --pin
 *
 * Each window but the first follows an idle spell of its server (the other's window), and a Node
 * server pays more CPU a request for a few seconds after one: `--settle S` loads it S seconds,
 * unmeasured, before each window, so the figure is the steady state's; without, it counts both.
 *
 * With `--pin` both servers run on CPU 0 and wrk on CPU 1 (taskset), so the load generator never
 * takes the servers' core. Each tree builds and prepares its own copy of the bench store with its
 * own code (bench/support/, or bench/ in trees from before its rooms), since an older tree cannot
 * open a store a newer one has migrated.
 *
 * With `--gc` each server also counts its garbage collections (bench/support/gc-counter.ts,
 * preloaded), and each side's line gives, per window, the scavenges per thousand requests and the
 * microseconds of collection a request: where CPU a request differs, whether allocation is why.
 */
const { values } = parseArgs({
  options: {
    a: { type: 'string', default: ROOT },
    b: { type: 'string' },
    windows: { type: 'string', default: '10' },
    seconds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '16' },
    warmup: { type: 'string', default: '6' },
    // Unmeasured load at the start of every window: after its idle spell (the other side's window)
    // a server pays for V8 regrowing its heap, which this keeps out of the steady state's figure.
    settle: { type: 'string', default: '0' },
    pin: { type: 'boolean', default: false },
    gc: { type: 'boolean', default: false },
  },
});
if (!values.b) throw new Error('--b <checkout> is required: the tree to compare this one (or --a) with');
requireWrk();
if (values.pin) taskset(['-pc', '1', String(process.pid)]);

interface Side {
  name: string;
  url: string;
  pid: number;
  script: string;
  stop(): Promise<void>;
  perRequest: number[];
  /** With --gc, per window: scavenges a thousand requests, and collection µs a request. */
  scavenges: number[];
  gcMicros: number[];
}

const sides: Side[] = [];
try {
  for (const [name, tree] of [['A', values.a!], ['B', values.b]] as const) sides.push(await start(name, resolve(tree)));
  for (const side of sides) await runWrk(side.url, side.script, Number(values.connections), Number(values.warmup));
  const windows = Number(values.windows);
  for (let window = 0; window < windows; window++) {
    // A B, then B A: neither side always follows the other's load.
    for (const side of window % 2 === 0 ? sides : [...sides].reverse()) {
      if (Number(values.settle) > 0) await runWrk(side.url, side.script, Number(values.connections), Number(values.settle));
      const gcBefore = values.gc ? await gcTotals(side.pid) : undefined;
      const before = cpuMicros(side.pid);
      const run = await runWrk(side.url, side.script, Number(values.connections), Number(values.seconds));
      side.perRequest.push((cpuMicros(side.pid) - before) / run.requests);
      if (gcBefore) {
        const gcAfter = await gcTotals(side.pid);
        side.scavenges.push(((gcAfter.minor - gcBefore.minor) * 1000) / run.requests);
        side.gcMicros.push(((gcAfter.minorMs + gcAfter.majorMs + gcAfter.incrementalMs - gcBefore.minorMs - gcBefore.majorMs - gcBefore.incrementalMs) * 1000) / run.requests);
      }
    }
  }
  const [a, b] = sides as [Side, Side];
  const ratios = a.perRequest.map((micros, i) => micros / b.perRequest[i]!);
  const round = (n: number) => Math.round(n * 10) / 10;
  log(`A ${values.a}: ${a.perRequest.map(round).join(', ')} CPU µs a request (median ${round(median(a.perRequest))})`);
  log(`B ${values.b}: ${b.perRequest.map(round).join(', ')} CPU µs a request (median ${round(median(b.perRequest))})`);
  log(`A ÷ B per window: ${ratios.map((r) => r.toFixed(3)).join(', ')}; median ${median(ratios).toFixed(3)}`);
  if (values.gc) {
    for (const side of sides) {
      log(`${side.name}: scavenges a thousand requests ${side.scavenges.map(round).join(', ')} (median ${round(median(side.scavenges))}); GC µs a request (median) ${round(median(side.gcMicros))}`);
    }
  }
} finally {
  for (const side of sides) await side.stop();
}

/** A tree's server over its own prepared copy of the bench store, loaded with found lookups. */
async function start(name: string, tree: string): Promise<Side> {
  const support = join(tree, 'bench/support/support.ts');
  const supportDir = existsSync(support) ? join(tree, 'bench/support') : join(tree, 'bench');
  const { prepareStore, knownNumbers, startProcess, tokenFor } = await import(join(supportDir, 'support.ts'));
  const { measuredStore } = await import(join(supportDir, 'cached-stores.ts'));
  const database: string = await measuredStore(undefined);
  const client = await prepareStore(database);
  const numbers: string[] = await knownNumbers(database);
  if (numbers.length === 0) throw new Error(`${tree}: its bench store holds no numbers to find`);
  const gc = values.gc ? { NODE_OPTIONS: `--import=${join(ROOT, 'bench/support/gc-counter.ts')}` } : {};
  const server = await startProcess('src/server.ts', { DATABASE_URL: database, LOG_LEVEL: 'warn', ...gc }, '/readyz');
  if (values.pin) taskset(['-a', '-pc', '0', String(server.child.pid)]);
  const token: string = await tokenFor(server.url, client);
  log(`${name}: ${tree} serving on ${server.url}`);
  return {
    name,
    url: server.url,
    pid: server.child.pid!,
    script: pathsLoad(token, numbers.map((n) => `/api/phone-numbers/${encodeURIComponent(n)}`)),
    stop: () => server.stop(),
    perRequest: [],
    scavenges: [],
    gcMicros: [],
  };
}

/** A server's collection totals so far (bench/support/gc-counter.ts writes them on SIGWINCH). */
async function gcTotals(pid: number): Promise<{ minor: number; minorMs: number; major: number; majorMs: number; incremental: number; incrementalMs: number }> {
  const file = join(tmpdir(), `gc-${pid}.json`);
  rmSync(file, { force: true });
  process.kill(pid, 'SIGWINCH');
  for (let i = 0; i < 100 && !existsSync(file); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  return JSON.parse(readFileSync(file, 'utf8'));
}

function taskset(args: string[]): void {
  const done = spawnSync('taskset', args, { encoding: 'utf8' });
  if (done.status !== 0) throw new Error(`taskset ${args.join(' ')} failed: ${done.stderr}`);
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}
