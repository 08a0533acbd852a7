import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino, { type Logger } from 'pino';
import { startDnsServer, type DnsServer } from '../../src/dns/dns-server.ts';
import type { DnsZones } from '../../src/domain/dns/dns-zones.ts';
import { NO_METRICS, type Metrics } from '../../src/metrics/metrics.ts';
import { freeUdpPort } from './call-path.ts';
import { eventually } from './eventually.ts';
import { runCommand } from './run-command.ts';

/**
 * The DNS programs of docs/dns.md's tests, all Debian packages: `dig` (dnsutils), `unbound`,
 * `rbldnsd`, `named-checkzone` (bind9-utils). A test file asks for what it uses and is skipped
 * with a notice when one is missing, unless TOLLWATCH_REQUIRE_DNS_TOOLS=1 (as in .ci/run).
 */
const PACKAGES: Record<string, string> = { dig: 'dnsutils', unbound: 'unbound', rbldnsd: 'rbldnsd', 'named-checkzone': 'bind9-utils' };

/** Why these programs cannot run here, or undefined; throws instead when they are required. */
export function dnsToolsMissing(...programs: Array<keyof typeof PACKAGES>): string | undefined {
  for (const program of programs) {
    if (spawnSync('sh', ['-c', `command -v ${program} || ls /usr/sbin/${program}`], { encoding: 'utf8' }).status === 0) continue;
    const why = `${program} is not installed (Debian package ${PACKAGES[program]})`;
    if (process.env.TOLLWATCH_REQUIRE_DNS_TOOLS === '1') throw new Error(`${why}; TOLLWATCH_REQUIRE_DNS_TOOLS=1 makes that a failure`);
    console.warn(`\n*** DNS tests SKIPPED: ${why}. ***\n`);
    return why;
  }
  return undefined;
}

/** One record of dig's answer or authority section. */
export interface DugRecord {
  name: string;
  ttl: number;
  type: string;
  data: string;
}

export interface DigAnswer {
  status: string;
  flags: string[];
  answers: DugRecord[];
  authorities: DugRecord[];
  /** Over which transport the answer dig printed came (dig retries truncated answers over TCP unless told not to). */
  transport: 'UDP' | 'TCP' | undefined;
  /** dig's whole output, for failure messages. */
  text: string;
}

/**
 * Asks with the real `dig`, asynchronously (the server answering may be in the test's own
 * process). `options` are dig's own (`+tcp`, `+noedns`, `+ignore`, `-b 127.0.0.2`, …).
 */
export async function dig(port: number, name: string, type: string, options: string[] = [], server = '127.0.0.1'): Promise<DigAnswer> {
  const run = await runCommand('dig', [`@${server}`, '-p', String(port), name, type, '+tries=1', '+time=5', '+norecurse', ...options], { timeoutMs: 30_000 });
  const text = run.stdout;
  const status = /status: ([A-Z_0-9]+)/.exec(text)?.[1] ?? 'NO ANSWER';
  const flags = (/;; flags: ([a-z ]*);/.exec(text)?.[1] ?? '').trim().split(/\s+/).filter((f) => f !== '');
  const section = (title: string) => {
    const start = text.indexOf(`;; ${title} SECTION:\n`);
    if (start < 0) return [];
    const lines = text.slice(start).split('\n').slice(1);
    const records: DugRecord[] = [];
    for (const line of lines) {
      if (line.trim() === '') break;
      const [recordName = '', ttl = '0', , recordType = '', ...data] = line.split(/\s+/);
      records.push({ name: recordName, ttl: Number(ttl), type: recordType, data: data.join(' ') });
    }
    return records;
  };
  const transport = /;; SERVER: [^(]*\([^)]*\) \((UDP|TCP)\)/.exec(text)?.[1] as 'UDP' | 'TCP' | undefined;
  return { status, flags, answers: section('ANSWER'), authorities: section('AUTHORITY'), transport, text };
}

/** Starts the DNS server in the test's process on a free loopback port, as src/server.ts does. */
export function serveZones(zones: DnsZones, options: { allow?: string[]; answersPerSecond?: number; metrics?: Metrics; log?: Logger } = {}): Promise<DnsServer> {
  return startDnsServer({
    zones,
    settings: { allow: options.allow ?? ['127.0.0.0/8', '::1'], answersPerSecond: options.answersPerSecond ?? 100_000 },
    listen: { host: '127.0.0.1', port: 0 },
    metrics: options.metrics ?? NO_METRICS,
    log: options.log ?? pino({ level: 'silent' }),
  });
}

export interface Unbound {
  address: string;
  port: number;
  /** What it logged. */
  output: string[];
  stop(): Promise<void>;
}

/**
 * Debian's Unbound as the caching resolver a PBX would ask, on its own loopback port, with a
 * stub zone per Tollwatch zone pointing at `serverPort`: the configuration docs/dns.md gives
 * operators; or with `rpz`, answering from response policy zones (`tollwatch dns-zone --format
 * rpz`) instead. No DNSSEC validation (the zones are not signed) and no control socket.
 */
export async function startUnbound(dir: string, zones: string[], serverPort: number, options: { ednsBufferSize?: number; rpz?: Array<{ origin: string; file: string }>; address?: string; port?: number } = {}): Promise<Unbound> {
  // A free UDP port may have its TCP twin taken, which Unbound needs too: then it exits at once,
  // and another port is tried.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startUnboundOnce(dir, zones, serverPort, options);
    } catch (err) {
      if (options.port !== undefined || attempt >= 3 || !/exited/.test((err as Error).message)) throw err;
    }
  }
}

async function startUnboundOnce(dir: string, zones: string[], serverPort: number, options: { ednsBufferSize?: number; rpz?: Array<{ origin: string; file: string }>; address?: string; port?: number }): Promise<Unbound> {
  const port = options.port ?? (await freeUdpPort());
  const address = options.address ?? '127.0.0.1';
  const config = join(dir, 'unbound.conf');
  writeFileSync(
    config,
    [
      'server:',
      `  interface: ${address}`,
      `  port: ${port}`,
      '  do-ip6: no',
      '  access-control: 127.0.0.0/8 allow',
      '  username: ""',
      '  chroot: ""',
      `  directory: "${dir}"`,
      '  pidfile: ""',
      '  use-syslog: no',
      '  logfile: ""',
      '  verbosity: 1',
      '  num-threads: 1',
      // Tollwatch answers on loopback, which Unbound refuses to ask by default.
      '  do-not-query-localhost: no',
      // Response policy zones need the respip module in front of the iterator.
      `  module-config: "${options.rpz ? 'respip iterator' : 'iterator'}"`,
      ...(options.ednsBufferSize ? [`  edns-buffer-size: ${options.ednsBufferSize}`] : []),
      ...zones.map((zone) => `  domain-insecure: "${zone}"`),
      ...zones.flatMap((zone) => ['stub-zone:', `  name: "${zone}"`, `  stub-addr: 127.0.0.1@${serverPort}`]),
      ...(options.rpz ?? []).flatMap(({ origin, file }) => ['rpz:', `  name: "${origin}"`, `  zonefile: "${file}"`]),
      'remote-control:',
      '  control-enable: no',
      '',
    ].join('\n'),
  );
  const check = spawnSync('unbound-checkconf', [config], { encoding: 'utf8' });
  if (check.status !== 0) throw new Error(`unbound-checkconf: ${check.stdout}${check.stderr}`);
  const child: ChildProcess = spawn('unbound', ['-d', '-c', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  child.stdout!.setEncoding('utf8').on('data', (s: string) => output.push(s));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => output.push(s));
  const reap = () => child.kill('SIGKILL');
  process.once('exit', reap);
  child.once('exit', () => process.removeListener('exit', reap));
  await eventually(
    `Unbound on port ${port} to answer`,
    async () => {
      if (child.exitCode !== null) throw new Error(`unbound exited with ${child.exitCode}: ${output.join('')}`);
      return (await dig(port, 'localhost', 'A', ['+recurse'], address)).status;
    },
    (status) => status === 'NOERROR',
    { everyMs: 100 },
  );
  return {
    address,
    port,
    output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}
