import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from './eventually.ts';
import { runCommand } from './run-command.ts';
import { answeringScenario } from './sipp-scenarios.ts';

/**
 * The real programs of a call path on loopback: Kamailio with the Tollwatch guard, SIPp as the
 * PBX behind it and as callers in front, and a proxy between Kamailio and Tollwatch that can
 * stall or refuse. Used by test/call-guard/ and bench/suites/call-path.ts.
 */

const EXAMPLE_CONFIG = new URL('../../integrations/kamailio/kamailio.cfg', import.meta.url);

/** Why the call path cannot run here, or undefined: Kamailio's modules and SIPp are Debian packages. */
export function callPathMissing(): string | undefined {
  for (const [program, pkg] of [
    ['kamailio', 'kamailio'],
    ['sipp', 'sip-tester'],
  ]) {
    if (spawnSync('sh', ['-c', `command -v ${program}`]).status !== 0) return `${program} is not installed (Debian package ${pkg})`;
  }
  for (const module of ['http_client', 'jansson', 'htable', 'rtimer', 'mqueue']) {
    const found = spawnSync('sh', ['-c', `ls /usr/lib/*/kamailio/modules/${module}.so /usr/lib/kamailio/modules/${module}.so 2>/dev/null`], { encoding: 'utf8' });
    if (!found.stdout.trim()) return `Kamailio's ${module} module is not installed`;
  }
  return undefined;
}

/** A free UDP port on loopback (SIP); taken by the caller a moment later. */
export async function freeUdpPort(): Promise<number> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return port;
}

/** A scratch folder for configurations, scenarios and SIPp's files. */
export function scratchDir(prefix: string): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), `tollwatch-${prefix}-`));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

export interface Kamailio {
  port: number;
  /** Everything it logged, one entry a line. */
  lines: string[];
  /** The guard's decision lines (`tollwatch: decision=…`), parsed. */
  decisions(): Decision[];
  /** The guard's statistics as `kamcmd stats.get_statistics script:` reads them, by name (`mirror_age`). */
  statistics(): Promise<Record<string, number>>;
  stop(): Promise<void>;
}

/** One line of the guard's decision log. */
export interface Decision {
  decision: string;
  number: string;
  score: number;
  ms: number;
  via: string;
  callId: string;
  outcome: string;
}

/**
 * Starts the example kamailio.cfg with `guard` (the output of `tollwatch kamailio-config`) beside
 * it, listening on `port` and relaying to the PBX on `pbxPort`; resolves once it answers SIP.
 * `withoutGuard` starts the same proxy with the guard's include and call removed: the
 * baseline of the bench.
 */
export async function startKamailio(dir: string, options: { port: number; pbxPort: number; guard?: string; children?: number; resolvConf?: string; tokenless?: boolean }): Promise<Kamailio> {
  let config = readFileSync(EXAMPLE_CONFIG, 'utf8')
    .replace(/^#!substdef "!PROXY_LISTEN![^!]*!"$/m, `#!substdef "!PROXY_LISTEN!udp:127.0.0.1:${options.port}!"`)
    .replace(/^#!substdef "!PBX_URI![^!]*!"$/m, `#!substdef "!PBX_URI!sip:127.0.0.1:${options.pbxPort}!"`)
    .replace(/^#!substdef "!CONTROL_SOCKET![^!]*!"$/m, `#!substdef "!CONTROL_SOCKET!unix:${join(dir, `kamailio-${options.port}.ctl`)}!"`);
  if (options.children) config = config.replace(/^children=\d+$/m, `children=${options.children}`);
  if (options.guard === undefined) {
    config = config.replace(/^include_file "tollwatch-guard.cfg"$/m, '').replace(/^\troute\(TOLLWATCH\);$/m, '');
  } else {
    writeFileSync(join(dir, 'tollwatch-guard.cfg'), options.guard);
  }
  writeFileSync(join(dir, 'kamailio.cfg'), config);
  // -E: log to standard error; -DD: stay in the foreground; 128 MB of shared memory, as
  // docs/call-guard.md advises (the default pool runs out under a burst of calls).
  // Its own process group: Kamailio signals its whole group when it stops.
  const args = ['-f', join(dir, 'kamailio.cfg'), '-m', '128', '-M', '16', '-DD', '-E', '-Y', dir];
  // Kamailio reads /etc/resolv.conf only: with `resolvConf`, it runs in a mount namespace of its
  // own where that file is bound over the machine's (root, as in CI; docs/dns.md).
  const child = options.resolvConf
    ? spawn('unshare', ['--mount', 'sh', '-c', 'mount --bind "$0" /etc/resolv.conf && exec "$@"', options.resolvConf, 'kamailio', ...args], { stdio: ['ignore', 'ignore', 'pipe'], detached: true })
    : spawn('kamailio', args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  const lines: string[] = [];
  let partial = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts);
  });
  const reap = () => child.kill('SIGKILL');
  process.once('exit', reap);
  await eventually(`Kamailio on port ${options.port} to answer (its log: ${lines.slice(-5).join(' | ')})`, async () => {
    if (child.exitCode !== null) throw new Error(`kamailio exited with ${child.exitCode}: ${lines.filter((l) => /ERROR|CRITICAL/.test(l)).join('\n')}`);
    return sipAnswers(options.port);
  }, Boolean, { timeoutMs: 30_000, everyMs: 200 });
  // The guard is ready once it holds a token: calls before that wait for one.
  if (options.guard !== undefined && !options.tokenless) {
    await eventually('the guard to get its access token', () => lines.find((l) => l.includes('tollwatch: access token obtained') || l.includes('tollwatch: no access token')), Boolean, { everyMs: 100 });
  }
  return {
    port: options.port,
    lines,
    decisions: () => lines.flatMap((line) => parseDecision(line) ?? []),
    async statistics() {
      const { stdout } = await runCommand('kamcmd', ['-s', `unix:${join(dir, `kamailio-${options.port}.ctl`)}`, 'stats.get_statistics', 'script:']);
      return Object.fromEntries([...stdout.matchAll(/^script:tollwatch:(\w+) = (\d+)$/gm)].map((m) => [m[1]!, Number(m[2])]));
    },
    async stop() {
      process.removeListener('exit', reap);
      await stopProcess(child);
    },
  };
}

function parseDecision(line: string): Decision | undefined {
  const match = /tollwatch: decision=(\S+) number=(\S*) source=\S+ score=(-?\d+) ms=([\d.]+) via=(\S+) call-id=(\S+) outcome="([^"]*)"/.exec(line);
  if (!match) return undefined;
  return { decision: match[1]!, number: match[2]!, score: Number(match[3]), ms: Number(match[4]), via: match[5]!, callId: match[6]!, outcome: match[7]! };
}

/** Whether a SIP server on `port` answers an OPTIONS that may go no further (Max-Forwards: 0, answered 483). */
async function sipAnswers(port: number): Promise<boolean> {
  const socket = createSocket('udp4');
  try {
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    const local = socket.address().port;
    const message = [
      `OPTIONS sip:ping@127.0.0.1:${port} SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${local};branch=z9hG4bK-${Date.now()}`,
      'Max-Forwards: 0',
      `From: <sip:probe@127.0.0.1>;tag=${local}`,
      `To: <sip:ping@127.0.0.1:${port}>`,
      `Call-ID: probe-${Date.now()}@127.0.0.1`,
      'CSeq: 1 OPTIONS',
      'Content-Length: 0',
      '',
      '',
    ].join('\r\n');
    const answered = new Promise<boolean>((resolve) => {
      socket.once('message', () => resolve(true));
      setTimeout(() => resolve(false), 300);
    });
    socket.send(message, port, '127.0.0.1');
    return await answered;
  } finally {
    socket.close();
  }
}

/** What SIPp counted over a run: calls that ran their scenario to the end, and those that did not. */
export interface SippCounts {
  successful: number;
  failed: number;
}

export interface Pbx {
  port: number;
  /** Stops it (SIPp's soft exit, ongoing calls first) and returns its final counts. */
  stop(): Promise<SippCounts>;
}

/** SIPp as the PBX behind the proxy, on `port`: answers every call, takes its ACK and BYE. */
export async function startPbx(dir: string, port: number): Promise<Pbx> {
  const scenario = join(dir, `pbx-${port}.xml`);
  writeFileSync(scenario, answeringScenario());
  const stats = join(dir, `pbx-${port}.csv`);
  const child = spawn('sipp', ['-sf', scenario, '-i', '127.0.0.1', '-p', String(port), '-nostdin', '-trace_stat', '-stf', stats, '-fd', '1'], { cwd: dir, stdio: 'ignore' });
  const reap = () => child.kill('SIGKILL');
  process.once('exit', reap);
  await eventually(`SIPp's PBX to write its statistics`, () => readdirSync(dir).includes(`pbx-${port}.csv`), Boolean, { everyMs: 100 });
  return {
    port,
    async stop() {
      process.removeListener('exit', reap);
      // SIGUSR1 alone: SIPp ends its calls, writes its final statistics and exits. A SIGTERM
      // close behind it could end SIPp before that line, leaving the last periodic one (up to a
      // second old, missing the last calls), which a loaded machine showed 3 times in 6.
      if (!(await stopProcess(child, 20_000, 'SIGUSR1'))) throw new Error(`SIPp's PBX did not exit on SIGUSR1 within 20 s: its statistics would be stale (a call it answered and no caller hung up holds its soft exit)`);
      return finalCounts(stats);
    },
  };
}

export interface CallsRun extends SippCounts {
  /** INVITE sent to final response received, per call that got one, in milliseconds (µs precision). */
  responseMs: number[];
  exitCode: number | null;
  /** From SIPp's start to its exit. */
  elapsedMs: number;
}

/**
 * Places `calls` calls to `number` at `rate` a second through the proxy on `proxyPort`, each
 * running `scenario` (sipp-scenarios.ts); resolves when SIPp has finished them all. With
 * `numbers`, the calls take their numbers from that list in turn (SIPp's injection file, the
 * scenario's `[field0]`). Response times come from SIPp's message log, whose timestamps have
 * microseconds: its `-trace_rtt` counts whole milliseconds in 4 ms steps here.
 */
export async function placeCalls(
  dir: string,
  options: { scenario: string; number: string; calls: number; rate: number; proxyPort: number; limit?: number; numbers?: readonly string[]; address?: string },
): Promise<CallsRun> {
  const port = await freeUdpPort();
  const name = `calls-${port}`;
  const scenario = join(dir, `${name}.xml`);
  writeFileSync(scenario, options.scenario);
  const stats = join(dir, `${name}.csv`);
  const messages = join(dir, `${name}-messages.log`);
  const args = ['-sf', scenario, '-s', options.number, '-i', options.address ?? '127.0.0.1', '-p', String(port), `127.0.0.1:${options.proxyPort}`];
  args.push('-m', String(options.calls), '-r', String(options.rate), '-l', String(options.limit ?? 1000), '-nostdin', '-timer_resol', '1');
  args.push('-trace_stat', '-stf', stats, '-trace_msg', '-message_file', messages, '-recv_timeout', '10000', '-timeout', '300s');
  if (options.numbers) {
    const injection = join(dir, `${name}-numbers.csv`);
    writeFileSync(injection, `SEQUENTIAL\n${options.numbers.join('\n')}\n`);
    args.push('-inf', injection);
  }
  const started = performance.now();
  const child = spawn('sipp', args, { cwd: dir, stdio: 'ignore' });
  const exitCode = await new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const elapsedMs = performance.now() - started;
  return { ...finalCounts(stats), responseMs: responseTimes(readFileSync(messages, 'latin1')), exitCode, elapsedMs };
}

/** Per call, the first INVITE sent to the first final response received, from SIPp's message log. */
export function responseTimes(log: string): number[] {
  const sent = new Map<string, number>();
  const times: number[] = [];
  for (const block of log.split(/^-{47} /m)) {
    const head = /^(\d{4}-\d\d-\d\d \d\d:\d\d:(\d\d\.\d{6}))\n\S+ message (sent|received)/.exec(block);
    const callId = /^Call-ID:\s*(\S+)/im.exec(block)?.[1];
    if (!head || !callId) continue;
    const at = Date.parse(`${head[1]!.slice(0, 10)}T${head[1]!.slice(11, 19)}Z`) + Number(`0.${head[2]!.split('.')[1]}`) * 1000;
    const firstLine = block.split('\n').find((line) => /^(INVITE |SIP\/2\.0 )/.test(line)) ?? '';
    if (head[3] === 'sent' && firstLine.startsWith('INVITE ')) {
      if (!sent.has(callId)) sent.set(callId, at);
    } else if (head[3] === 'received' && /^SIP\/2\.0 [2-6]\d\d /.test(firstLine) && /^CSeq:\s*\d+ INVITE/im.test(block) && sent.has(callId)) {
      times.push(at - sent.get(callId)!);
      sent.delete(callId);
    }
  }
  return times;
}

/** SIPp's last statistics line: cumulative successful and failed calls. */
function finalCounts(file: string): SippCounts {
  const rows = readFileSync(file, 'utf8').trim().split('\n');
  const header = rows[0]!.split(';');
  const last = rows[rows.length - 1]!.split(';');
  const column = (name: string) => Number(last[header.indexOf(name)]);
  return { successful: column('SuccessfulCall(C)'), failed: column('FailedCall(C)') };
}

/** Sends `signal`, then SIGKILL after `graceMs`; resolves true if the process exited before that. */
async function stopProcess(child: ChildProcess, graceMs = 5_000, signal: NodeJS.Signals = 'SIGTERM'): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return true;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let killed = false;
  child.kill(signal);
  const timer = setTimeout(() => {
    killed = true;
    child.kill('SIGKILL');
  }, graceMs);
  await exited;
  clearTimeout(timer);
  return !killed;
}

/** How the proxy between Kamailio and Tollwatch treats connections. */
export type LinkMode = 'pass' | 'stall' | 'down';

export interface TollwatchLink {
  url: string;
  /** `pass` forwards; `stall` accepts and never answers; `down` refuses connections (the port closed). */
  set(mode: LinkMode): Promise<void>;
  /** Closes, unanswered, every connection whose request line matches (undefined: none). */
  refuse(requests: RegExp | undefined): void;
  /** HTTP requests passed on, by their request line (`GET /api/phone-numbers/…`). */
  requests: string[];
  /** The same requests with when each was seen (`performance.now()`). */
  timed: Array<{ request: string; at: number }>;
  close(): Promise<void>;
}

/**
 * A TCP proxy on loopback in front of Tollwatch: what a stopped, hung or returning server looks
 * like to the guard, without stopping the test's own server.
 */
export async function startLink(target: string): Promise<TollwatchLink> {
  const to = new URL(target);
  const requests: string[] = [];
  const timed: Array<{ request: string; at: number }> = [];
  const sockets = new Set<Socket>();
  let mode: LinkMode = 'pass';
  let refused: RegExp | undefined;
  let server: Server | undefined;
  let port = 0;
  const listen = async () => {
    server = createServer((client) => {
      sockets.add(client);
      client.on('close', () => sockets.delete(client));
      client.on('error', () => client.destroy());
      if (mode === 'stall') return;
      const upstream = connect(Number(to.port), to.hostname);
      sockets.add(upstream);
      upstream.on('close', () => sockets.delete(upstream));
      upstream.on('error', () => client.destroy());
      client.on('data', (chunk: Buffer) => {
        const line = /^([A-Z]+ \S+) HTTP\/1\.[01]\r\n/.exec(chunk.toString('latin1'));
        if (line && refused?.test(line[1]!)) {
          client.destroy();
          upstream.destroy();
          return;
        }
        if (line) {
          requests.push(line[1]!);
          timed.push({ request: line[1]!, at: performance.now() });
        }
        upstream.write(chunk);
      });
      client.on('end', () => upstream.end());
      upstream.pipe(client);
    });
    await new Promise<void>((resolve) => server!.listen(port, '127.0.0.1', resolve));
    port = (server!.address() as { port: number }).port;
  };
  const unlisten = async () => {
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    await new Promise<void>((resolve) => server!.close(() => resolve()));
    server = undefined;
  };
  await listen();
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    timed,
    refuse(requests) {
      refused = requests;
    },
    async set(next) {
      if (next === mode) return;
      if (mode === 'down') await listen();
      if (next === 'down') await unlisten();
      if (next === 'stall') for (const socket of sockets) socket.destroy();
      mode = next;
    },
    async close() {
      if (server) await unlisten();
    },
  };
}

/** The p-th percentile (0–100) of `values`, nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
