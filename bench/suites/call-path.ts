import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GUARD_DEFAULTS, renderGuardConfig, type GuardSettings } from '../../src/cli/kamailio-guard-config.ts';
import { callPathMissing, freeUdpPort, percentile, placeCalls, startKamailio, startPbx, type Decision } from '../../test/support/call-path.ts';
import { completedCallScenario } from '../../test/support/sipp-scenarios.ts';
import { cpuMicros, log, prepareStore, printTable, ROOT, startProcess, type TableColumn } from '../support/support.ts';

/**
 * The call path: SIPp callers through Kamailio to a SIPp PBX at fixed call rates, with Kamailio
 * alone, with the Tollwatch guard asking per call (about the number and the source, or the number
 * only), and with the guard deciding from its mirror,
 * side by side in one run (a shared machine drifts over minutes). Every call is to a number
 * Tollwatch has not seen, taken in turn from 10,000, so every call is let through and, per call,
 * costs two lookups (the number and the source). Reports calls completed a second and INVITE to
 * final response at p50 and p99, from SIPp's message log (microseconds).
 *
 *     node bench/suites/call-path.ts            (also phase 7 of `npm run bench`)
 *
 * BENCH_CALL_RATES (default 200,500) calls a second; BENCH_CALL_SECONDS (default 10) per run.
 * BENCH_CALL_LOAD (default 0) busy processes kept spinning beside the runs: the guard's budget
 * on a machine whose CPU is contended (docs/call-guard.md, "When Tollwatch is slow or away"),
 * read from its decision lines: when each call was decided, and how many the budget decided.
 */
const RATES = (process.env.BENCH_CALL_RATES ?? '200,500').split(',').map(Number);
const SECONDS = Number(process.env.BENCH_CALL_SECONDS ?? 10);
const LOAD = Number(process.env.BENCH_CALL_LOAD ?? 0);

export interface CallPathRow {
  mode: string;
  rate: number;
  calls: number;
  completed: number;
  failed: number;
  completedPerSecond: number;
  p50: number;
  p99: number;
  /** Against Kamailio alone at the same rate, measured just before. */
  addedP50?: number;
  addedP99?: number;
  ratioCompleted?: number;
  /** Tollwatch's CPU (user + system) per call, from /proc across the run. */
  tollwatchCpuMicrosPerCall: number;
  /** With the guard: INVITE's arrival to its decision, as the guard logs it (ms=), over the measured calls. */
  decidedP50?: number;
  decidedP99?: number;
  decidedMax?: number;
  /** Measured calls the budget decided (`no answer within …`), and the earliest and latest of those decisions. */
  pastBudget?: number;
  pastBudgetMinMs?: number;
  pastBudgetMaxMs?: number;
}

const MODES: Array<[string, Partial<GuardSettings> | undefined]> = [
  ['Kamailio alone', undefined],
  ['guard, per call', {}],
  ['guard, number only', { checkSource: false }],
  ['guard, mirror', { mirror: true, mirrorPassesMisses: true }],
];

/** Runs every rate and mode; the rows, or undefined when Kamailio or SIPp is missing. */
export async function callPathBench(): Promise<CallPathRow[] | undefined> {
  const missing = callPathMissing();
  if (missing) {
    log(`call path skipped: ${missing}`);
    return undefined;
  }
  const dir = mkdtempSync(join(tmpdir(), 'tollwatch-bench-calls-'));
  const databaseUrl = `sqlite:${join(dir, 'tollwatch.db')}`;
  const client = await prepareStore(databaseUrl);
  const server = await startProcess('src/server.ts', { DATABASE_URL: databaseUrl }, '/readyz');
  const numbers = Array.from({ length: 10_000 }, (_, i) => `+1555${String(1_000_000 + i)}`);
  const rows: CallPathRow[] = [];
  const spinners = Array.from({ length: LOAD }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  try {
    for (const rate of RATES) {
      let alone: CallPathRow | undefined;
      for (const [mode, overrides] of MODES) {
        const settings: GuardSettings | undefined = overrides && { ...GUARD_DEFAULTS, url: server.url, clientId: client.client_id, clientSecret: client.client_secret, ...overrides };
        const pbx = await startPbx(dir, await freeUdpPort());
        const kamailio = await startKamailio(dir, { port: await freeUdpPort(), pbxPort: pbx.port, ...(settings ? { guard: renderGuardConfig(settings) } : {}) });
        try {
          if (settings?.mirror) await waitForMirror(kamailio.lines);
          const row = await measureCalls(dir, mode, rate, kamailio.port, numbers, server.child.pid, alone);
          if (settings) {
            Object.assign(row, decisionTimes(kamailio.decisions().slice(-row.calls)));
            log(`    decided p50 ${row.decidedP50} ms, p99 ${row.decidedP99} ms, max ${row.decidedMax} ms; by the budget: ${row.pastBudget}${row.pastBudget ? ` (${row.pastBudgetMinMs}–${row.pastBudgetMaxMs} ms)` : ''}`);
          }
          alone ??= row;
          rows.push(row);
        } finally {
          await kamailio.stop();
          await pbx.stop();
        }
      }
    }
  } finally {
    for (const spinner of spinners) spinner.kill('SIGKILL');
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

/** When the guard decided the measured calls, and which of them its budget decided. */
function decisionTimes(decisions: Decision[]): Partial<CallPathRow> {
  const ms = decisions.map((d) => d.ms);
  const late = decisions.filter((d) => d.outcome.startsWith('no answer within')).map((d) => d.ms);
  return {
    decidedP50: round(percentile(ms, 50)),
    decidedP99: round(percentile(ms, 99)),
    decidedMax: round(Math.max(...ms)),
    pastBudget: late.length,
    ...(late.length > 0 ? { pastBudgetMinMs: round(Math.min(...late)), pastBudgetMaxMs: round(Math.max(...late)) } : {}),
  };
}

/**
 * A second's calls at `rate` first, unmeasured (every process then has its connections, pages
 * and caches), then BENCH_CALL_SECONDS of them, as a row; against `alone` (Kamailio alone at the
 * same rate, measured before) when given. Also the DNS bench's (bench/suites/dns.ts).
 */
export async function measureCalls(dir: string, mode: string, rate: number, proxyPort: number, numbers: string[], tollwatchPid: number | undefined, alone?: CallPathRow): Promise<CallPathRow> {
  await placeCalls(dir, { scenario: completedCallScenario('[field0]'), number: 'warm', calls: rate, rate, proxyPort, numbers });
  const cpuBefore = cpuMicros(tollwatchPid);
  const run = await placeCalls(dir, { scenario: completedCallScenario('[field0]'), number: 'bench', calls: rate * SECONDS, rate, proxyPort, numbers });
  const cpu = cpuMicros(tollwatchPid) - cpuBefore;
  const row: CallPathRow = {
    mode,
    rate,
    calls: rate * SECONDS,
    completed: run.successful,
    failed: run.failed,
    completedPerSecond: Math.round(run.successful / (run.elapsedMs / 1000)),
    p50: round(percentile(run.responseMs, 50)),
    p99: round(percentile(run.responseMs, 99)),
    tollwatchCpuMicrosPerCall: Math.round(cpu / Math.max(1, run.successful)),
  };
  if (alone) {
    row.addedP50 = round(row.p50 - alone.p50);
    row.addedP99 = round(row.p99 - alone.p99);
    row.ratioCompleted = Number((row.completedPerSecond / Math.max(1, alone.completedPerSecond)).toFixed(2));
  }
  log(`  ${mode} @${rate}/s: ${row.completedPerSecond} completed/s, p50 ${row.p50} ms, p99 ${row.p99} ms${row.failed ? `, ${row.failed} failed` : ''}`);
  return row;
}

async function waitForMirror(lines: string[]): Promise<void> {
  for (let i = 0; i < 300 && !lines.some((l) => / i entries /.test(l)); i++) await new Promise((resolve) => setTimeout(resolve, 100));
}

function round(ms: number): number {
  return Number(ms.toFixed(2));
}

/** The rows as a table. */
export function printCallPath(rows: CallPathRow[]): void {
  const columns: TableColumn<CallPathRow>[] = [
    ['call path', -18, (r) => r.mode],
    ['calls/s', 7, (r) => r.rate],
    ['completed/s', 11, (r) => r.completedPerSecond],
    ['failed', 6, (r) => r.failed],
    ['p50 ms', 7, (r) => r.p50],
    ['p99 ms', 7, (r) => r.p99],
    ['+p50 ms', 7, (r) => r.addedP50],
    ['+p99 ms', 7, (r) => r.addedP99],
    ['× alone', 7, (r) => r.ratioCompleted],
    ['Tollwatch CPU µs/call', 21, (r) => r.tollwatchCpuMicrosPerCall],
    ['decided p99 ms', 14, (r) => r.decidedP99],
    ['decided max ms', 14, (r) => r.decidedMax],
    ['by budget', 9, (r) => r.pastBudget],
    ['budget ms min–max', 17, (r) => (r.pastBudget ? `${r.pastBudgetMinMs}–${r.pastBudgetMaxMs}` : undefined)],
  ];
  printTable(columns, rows);
}

if (import.meta.main) {
  const rows = await callPathBench();
  if (rows) {
    printCallPath(rows);
    mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
    const file = join(ROOT, 'bench/results', `call-path-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, JSON.stringify({ seconds: SECONDS, load: LOAD, rows }, null, 2));
    console.log(`\nwritten to ${file}`);
  }
}
