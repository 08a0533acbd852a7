import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCommand, type CommandRun } from './run-command.ts';

/**
 * A network namespace of a test's own (`unshare -n`, root only) for the firewall sync's tests and
 * bench: nft and ipset there change nothing of the machine's firewall, and go when it goes. A
 * command run in it (`run`) reaches a server of the test's at `url`, 127.0.0.1:8080 inside: a
 * relay there passes each connection through a Unix socket (files cross namespaces, loopbacks do
 * not) to the test's bridge, which passes it to `target` on the machine's loopback. `down()` closes
 * the bridge, so the server is unreachable from inside until `up()`.
 */
export interface FirewallNamespace {
  /** The server's address as seen from inside. */
  url: string;
  /** A process in the namespace, for `nsenter -t <pid> -n`. */
  pid: string;
  /** Runs a command inside the namespace. */
  run(command: string, args: string[], options?: { env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number }): Promise<CommandRun>;
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

/** Why the namespace cannot be made here, or undefined. */
export function firewallNamespaceMissing(): string | undefined {
  if (process.getuid?.() !== 0) return 'nft and ipset in a network namespace of the test’s own need root';
  return undefined;
}

/** Which of nft, ipset, unshare and nsenter is missing (Debian packages nftables, ipset, util-linux). */
export function firewallToolsMissing(): string[] {
  return ['nft', 'ipset', 'unshare', 'nsenter', 'ip'].filter((tool) => spawnSync('sh', ['-c', `command -v ${tool} || test -x /usr/sbin/${tool}`]).status !== 0);
}

const INSIDE_PORT = 8080;

// Inside the namespace: 127.0.0.1:8080 to the Unix socket, one connection for one.
const RELAY = `
const net = require('node:net');
const [port, path] = process.argv.slice(1);
net.createServer((client) => {
  const up = net.connect(path);
  client.pipe(up).pipe(client);
  up.on('error', () => client.destroy());
  client.on('error', () => up.destroy());
}).listen(Number(port), '127.0.0.1', () => console.log('ready'));
`;

export async function startFirewallNamespace(target: string): Promise<FirewallNamespace> {
  const dir = mkdtempSync(join(tmpdir(), 'tollwatch-firewall-ns-'));
  const socket = join(dir, 'bridge.sock');
  const { hostname, port } = new URL(target);
  let bridge: Server | undefined;
  const up = async () => {
    if (bridge) return;
    const server = createServer((inside) => {
      const out = connect(Number(port), hostname);
      inside.pipe(out).pipe(inside);
      out.on('error', () => inside.destroy());
      inside.on('error', () => out.destroy());
    });
    await new Promise<void>((resolve) => server.listen(socket, resolve));
    bridge = server;
  };
  const down = async () => {
    const server = bridge;
    bridge = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(socket, { force: true });
  };
  await up();
  // unshare execs sh, which execs node: the relay's pid is the child's, and it holds the namespace.
  const holder: ChildProcess = spawn('unshare', ['-n', 'sh', '-c', 'ip link set lo up && exec "$0" -e "$1" "$2" "$3"', process.execPath, RELAY, String(INSIDE_PORT), socket], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  holder.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  await new Promise<void>((resolve, reject) => {
    holder.stdout!.setEncoding('utf8').on('data', (s: string) => s.includes('ready') && resolve());
    holder.once('exit', (code) => reject(new Error(`the namespace's relay exited ${code}: ${stderr}`)));
  });
  const pid = String(holder.pid);
  return {
    url: `http://127.0.0.1:${INSIDE_PORT}`,
    pid,
    run: (command, args, options = {}) => runCommand('nsenter', ['-t', pid, '-n', command, ...args], options),
    up,
    down,
    async close() {
      holder.kill('SIGKILL');
      await down();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The i-th of `count` distinct source addresses: seven in ten IPv4 from 198.18.0.0/15 (the
 * benchmarking range, 131,072 addresses), the rest IPv6 from 2001:db8:f00::/48.
 */
export function distinctAddress(i: number, count: number): string {
  const v4 = Math.round(count * 0.7);
  if (i < v4) return `198.${18 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;
  const j = i - v4;
  return `2001:db8:f00::${(j >> 16).toString(16)}:${(j & 0xffff).toString(16)}`;
}

/**
 * Submits one event from each of `count` distinct addresses (distinctAddress), 1,000 a batch,
 * as `submit` stores a batch: a feed of that many addresses, for the 100,000-element runs.
 */
export async function submitDistinctAddresses(count: number, submit: (batch: Array<Record<string, unknown>>) => Promise<void>, event: (source_ip: string) => Record<string, unknown>): Promise<void> {
  for (let start = 0; start < count; start += 1000) {
    const batch = [];
    for (let i = start; i < Math.min(count, start + 1000); i++) batch.push(event(distinctAddress(i, count)));
    await submit(batch);
  }
}
