import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderDnsGuardConfig } from '../../src/cli/kamailio-dns-guard-config.ts';
import { callPathMissing, freeUdpPort, percentile, startKamailio, startPbx } from '../../test/support/call-path.ts';
import { startUnbound } from '../../test/support/dns-tools.ts';
import { measureCalls, printCallPath, type CallPathRow } from './call-path.ts';
import { benchClient, benchEventFields, cpuMicros, log, printTable, ROOT, startProcess, tokenFor, type TableColumn } from '../support/support.ts';

/**
 * The DNS zones' bench (docs/dns.md; docs/performance.md, "The DNS zones"), every load driven by dnsperf (a C load
 * generator) over UDP, side by side in one run (a shared machine drifts over minutes):
 *
 * 1. saturated: as many questions a second as each answers, with 100 outstanding: the bare
 *    responder (bench/baselines/bare-dns-responder.ts: one node:dgram socket, one fixed answer), then
 *    Tollwatch's listed names, then names not listed;
 * 2. paced at half the bare responder's saturated rate: p50 and p99 of each, from dnsperf's
 *    per-question latencies (-v);
 * 3. through Unbound's cache (a stub zone to Tollwatch, warmed first), listed names, saturated;
 * 4. the call path: SIPp through Kamailio alone and with the guard in DNS mode, at
 *    BENCH_CALL_RATES calls a second with a warm cache (Kamailio in a mount namespace whose
 *    resolv.conf names an Unbound on port 53: root only, skipped otherwise).
 *
 *     node bench/suites/dns.ts            (also phase 8 of `npm run bench`)
 *
 * BENCH_SECONDS (default 10) per DNS measurement; BENCH_CALL_RATES (default 500) and
 * BENCH_CALL_SECONDS (default 10, bench/suites/call-path.ts) for the call path.
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CALL_RATES = (process.env.BENCH_CALL_RATES ?? '500').split(',').map(Number);
const NUMBERS = 'numbers.tollwatch.internal';
const LISTED = 1000;

export interface DnsRow {
  phase: string;
  qps: number;
  completedPercent: number;
  p50?: number;
  p99?: number;
  /** Against the bare responder's saturated rate, measured first. */
  ratioToBare?: number;
  /** Through Unbound: against Tollwatch's own saturated rate for the same names. */
  ratioToTollwatch?: number;
  cpuMicrosPerQuestion?: number;
}

/** Why the bench cannot run here, or undefined. */
function dnsBenchMissing(): string | undefined {
  for (const program of ['dnsperf', 'unbound']) {
    if (spawnSync('sh', ['-c', `command -v ${program} || ls /usr/sbin/${program}`]).status !== 0) return `${program} is not installed`;
  }
  return undefined;
}

/** One dnsperf run; with `paced`, at that many questions a second and with every latency kept. */
function dnsperf(port: number, file: string, seconds: number, paced?: number, server = '127.0.0.1'): Promise<{ qps: number; completedPercent: number; latencies: number[] }> {
  const args = ['-s', server, '-p', String(port), '-d', file, '-l', String(seconds), '-q', '100', ...(paced ? ['-Q', String(paced), '-v'] : [])];
  return new Promise((resolve, reject) => {
    const child = spawn('dnsperf', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (out += s));
    child.on('error', reject);
    child.on('close', () => {
      const qps = Number(/Queries per second:\s+([\d.]+)/.exec(out)?.[1] ?? 0);
      const completedPercent = Number(/Queries completed:\s+\d+ \(([\d.]+)%\)/.exec(out)?.[1] ?? 0);
      const latencies = [...out.matchAll(/^> \S+ \S+ \S+ ([\d.]+)$/gm)].map((m) => Number(m[1]) * 1000);
      resolve({ qps: Math.round(qps), completedPercent, latencies });
    });
  });
}

function round(ms: number): number {
  return Number(ms.toFixed(3));
}

/** Lists LISTED numbers in the shared data set through the API, six INVITEs each from six sources. */
async function listNumbers(url: string, token: string): Promise<string[]> {
  const numbers = Array.from({ length: LISTED }, (_, i) => `+4681${String(1_000_000 + i)}`);
  const nodes = ['732e7f50-637d-4fde-81e0-5c32f1bb5a92', '0b7d6d7e-2b1a-4c55-9d7e-3f2a1b0c9d8e', 'c1a2b3c4-d5e6-4f70-8192-a3b4c5d6e7f8'];
  const events = numbers.flatMap((number) => Array.from({ length: 6 }, (_, i) => benchEventFields({ called_number: number, source_ip: `203.0.113.${10 + i}`, created_by_node_id: nodes[i % 3]! })));
  for (let i = 0; i < events.length; i += 1000) {
    const res = await fetch(`${url}/api/events/batch`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(events.slice(i, i + 1000)) });
    if (res.status !== 200 && res.status !== 201 && res.status !== 207) throw new Error(`batch answered ${res.status}: ${await res.text()}`);
  }
  return numbers;
}

const enumName = (number: string) => `${[...number.slice(1)].reverse().join('.')}.${NUMBERS}`;

export async function dnsBench(): Promise<{ rows: DnsRow[]; calls: CallPathRow[] } | undefined> {
  const missing = dnsBenchMissing();
  if (missing) {
    log(`DNS bench skipped: ${missing}`);
    return undefined;
  }
  const dir = mkdtempSync(join(tmpdir(), 'tollwatch-bench-dns-'));
  const databaseUrl = `sqlite:${join(dir, 'tollwatch.db')}`;
  const client = await benchClient(databaseUrl, undefined, { trusted: true, name: 'fleet' });
  const dnsPort = await freeUdpPort();
  const server = await startProcess('src/server.ts', { DATABASE_URL: databaseUrl, TOLLWATCH_DNS_LISTEN: `127.0.0.1:${dnsPort}`, TOLLWATCH_DNS_RATE_LIMIT: '1000000000' }, '/readyz');
  const barePort = await freeUdpPort();
  const bare = spawn(process.execPath, [join(ROOT, 'bench/baselines/bare-dns-responder.ts'), String(barePort)], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve) => bare.stdout!.once('data', () => resolve()));
  const rows: DnsRow[] = [];
  const calls: CallPathRow[] = [];
  const stops: Array<() => Promise<unknown>> = [];
  try {
    const numbers = await listNumbers(server.url, await tokenFor(server.url, client));
    const listedFile = join(dir, 'listed.txt');
    const unlistedFile = join(dir, 'unlisted.txt');
    writeFileSync(listedFile, numbers.map((n) => `${enumName(n)} A\n`).join(''));
    writeFileSync(unlistedFile, Array.from({ length: 100_000 }, (_, i) => `${enumName(`+1555${String(1_000_000 + i)}`)} A\n`).join(''));
    // Listed once the fold has counted them: the last number's name answers.
    const last = enumName(numbers.at(-1)!);
    for (let i = 0; i < 600 && !spawnSync('dig', ['@127.0.0.1', '-p', String(dnsPort), last, 'A', '+short']).stdout.toString().startsWith('127.0.'); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    const saturated = async (phase: string, port: number, file: string, pid: number | undefined, server = '127.0.0.1') => {
      await dnsperf(port, file, 2, undefined, server);
      const before = cpuMicros(pid);
      const run = await dnsperf(port, file, SECONDS, undefined, server);
      const row: DnsRow = { phase, qps: run.qps, completedPercent: run.completedPercent };
      if (pid) row.cpuMicrosPerQuestion = Math.round((cpuMicros(pid) - before) / Math.max(1, run.qps * SECONDS));
      rows.push(row);
      log(`  ${phase}: ${row.qps} questions/s (${row.completedPercent}% answered)`);
      return row;
    };
    const paced = async (phase: string, port: number, file: string, rate: number) => {
      const run = await dnsperf(port, file, SECONDS, rate);
      const row: DnsRow = { phase, qps: run.qps, completedPercent: run.completedPercent, p50: round(percentile(run.latencies, 50)), p99: round(percentile(run.latencies, 99)) };
      rows.push(row);
      log(`  ${phase}: ${row.qps} questions/s, p50 ${row.p50} ms, p99 ${row.p99} ms`);
      return row;
    };

    log('8. DNS zones: dnsperf against a bare node:dgram responder, Tollwatch, and Unbound in front');
    const bareRow = await saturated('bare responder, saturated', barePort, unlistedFile, bare.pid);
    const listedRow = await saturated('Tollwatch, listed names, saturated', dnsPort, listedFile, server.child.pid);
    const unlistedRow = await saturated('Tollwatch, unlisted names, saturated', dnsPort, unlistedFile, server.child.pid);
    for (const row of [listedRow, unlistedRow]) row.ratioToBare = Number((row.qps / Math.max(1, bareRow.qps)).toFixed(2));
    const half = Math.max(100, Math.round(bareRow.qps / 2));
    await paced(`bare responder @${half}/s`, barePort, unlistedFile, half);
    await paced(`Tollwatch, listed @${half}/s`, dnsPort, listedFile, half);
    await paced(`Tollwatch, unlisted @${half}/s`, dnsPort, unlistedFile, half);

    const unboundDir = join(dir, 'unbound');
    mkdirSync(unboundDir);
    const unbound = await startUnbound(unboundDir, [NUMBERS, 'addresses.tollwatch.internal'], dnsPort);
    stops.push(() => unbound.stop());
    await dnsperf(unbound.port, listedFile, 2);
    const cached = await saturated('through Unbound’s cache, listed names', unbound.port, listedFile, undefined);
    cached.ratioToTollwatch = Number((cached.qps / Math.max(1, listedRow.qps)).toFixed(2));

    const callMissing = callPathMissing() ?? (process.getuid?.() === 0 ? undefined : 'not root');
    if (callMissing) log(`  the DNS guard's call path skipped: ${callMissing}`);
    else calls.push(...(await guardCalls(dir, dnsPort, server.child.pid, stops)));
  } finally {
    for (const stop of stops.reverse()) await stop();
    bare.kill('SIGTERM');
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return { rows, calls };
}

/** Kamailio alone, then with the guard in DNS mode, at each rate, every call to a number not listed and already asked (a warm cache). */
async function guardCalls(dir: string, dnsPort: number, tollwatchPid: number | undefined, stops: Array<() => Promise<unknown>>): Promise<CallPathRow[]> {
  const address = `127.${53 + (process.pid % 100)}.0.53`;
  const resolverDir = join(dir, 'resolver');
  mkdirSync(resolverDir);
  const resolver = await startUnbound(resolverDir, [NUMBERS, 'addresses.tollwatch.internal'], dnsPort, { address, port: 53 });
  stops.push(() => resolver.stop());
  const resolvConf = join(dir, 'resolv.conf');
  writeFileSync(resolvConf, `nameserver ${address}\noptions attempts:1 timeout:1\n`);
  const rows: CallPathRow[] = [];
  for (const rate of CALL_RATES) {
    const numbers = Array.from({ length: rate }, (_, i) => `+1555${String(2_000_000 + i)}`);
    let alone: CallPathRow | undefined;
    for (const mode of ['Kamailio alone', 'guard, DNS mode'] as const) {
      const pbx = await startPbx(dir, await freeUdpPort());
      const guard = mode === 'Kamailio alone' ? undefined : renderDnsGuardConfig({ numberZone: NUMBERS, addressZone: 'addresses.tollwatch.internal', threshold: 50, refuseCode: 403, checkSource: true });
      const kamailio = await startKamailio(dir, { port: await freeUdpPort(), pbxPort: pbx.port, resolvConf, tokenless: true, ...(guard ? { guard } : {}) });
      try {
        // The warm-up's second of calls to the same numbers leaves them in the resolver's and Kamailio's caches.
        const row = await measureCalls(dir, mode, rate, kamailio.port, numbers, tollwatchPid, alone);
        alone ??= row;
        rows.push(row);
      } finally {
        await kamailio.stop();
        await pbx.stop();
      }
    }
  }
  return rows;
}

/** The rows as tables. */
export function printDns({ rows, calls }: { rows: DnsRow[]; calls: CallPathRow[] }): void {
  const columns: TableColumn<DnsRow>[] = [
    ['DNS', -40, (r) => r.phase],
    ['q/s', 7, (r) => r.qps],
    ['answered %', 10, (r) => r.completedPercent],
    ['p50 ms', 7, (r) => r.p50],
    ['p99 ms', 7, (r) => r.p99],
    ['× bare', 6, (r) => r.ratioToBare],
    ['× Tollwatch', 11, (r) => r.ratioToTollwatch],
    ['CPU µs/q', 8, (r) => r.cpuMicrosPerQuestion],
  ];
  printTable(columns, rows);
  if (calls.length === 0) return;
  console.log('');
  printCallPath(calls);
}

if (import.meta.main) {
  const result = await dnsBench();
  if (result) {
    printDns(result);
    mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
    const file = join(ROOT, 'bench/results', `dns-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, JSON.stringify({ seconds: SECONDS, ...result }, null, 2));
    console.log(`\nwritten to ${file}`);
  }
}
