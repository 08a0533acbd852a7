import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { eventually } from './eventually.ts';
import { freePort } from './server-process.ts';

/** Whether Debian's haproxy is there. */
export const haproxyMissing = spawnSync('haproxy', ['-v']).status !== 0;

/**
 * A front door that leads only to the primary, as a deployment with Patroni has: HAProxy in TCP
 * mode, checking each node over HTTP every 200 ms against a checker that answers 200 only where
 * `pg_is_in_recovery()` is false (Patroni's REST `/primary` plays that part there). With
 * HAProxy's defaults a connection sent to a dead node hung until the client's connect timeout:
 * `retries 1`, `timeout connect 1s` and marking a node down on its first connection error make
 * it fail fast instead (a 503 from Tollwatch). Sessions to a node marked down are cut, so no
 * pooled connection stays on a demoted primary.
 */
export interface PrimaryProxy {
  /** A superuser URL of the `postgres` database through the proxy. */
  url: string;
  stop(): Promise<void>;
}

export async function startPrimaryProxy(nodePorts: number[]): Promise<PrimaryProxy> {
  const checkers: Server[] = [];
  const checkerPorts: number[] = [];
  const checks = nodePorts.map((port) => new PrimaryCheck(port));
  for (const check of checks) {
    const checker = createServer((_, res) => {
      void check.isPrimary().then((primary) => res.writeHead(primary ? 200 : 503).end(primary ? 'primary' : 'not the primary'));
    });
    await new Promise<void>((resolve) => checker.listen(0, '127.0.0.1', resolve));
    checkers.push(checker);
    checkerPorts.push((checker.address() as { port: number }).port);
  }
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'tollwatch-haproxy-'));
  const config = join(dir, 'haproxy.cfg');
  writeFileSync(config, [
    'global',
    '  maxconn 2000',
    'defaults',
    '  mode tcp',
    '  retries 1',
    '  timeout connect 1s',
    '  timeout check 2s',
    // Pooled and LISTENing connections idle for long; the store's own timeouts bound statements.
    '  timeout client 1h',
    '  timeout server 1h',
    'listen postgres',
    `  bind 127.0.0.1:${port}`,
    // Until its first check a node counts as up: the first that is, rather than one at random,
    // and a connection refused by a node is tried once more on another.
    '  balance first',
    '  option redispatch',
    '  option httpchk GET /',
    '  http-check expect status 200',
    '  default-server inter 200ms fall 2 rise 1 on-marked-down shutdown-sessions observe layer4 error-limit 1 on-error mark-down',
    ...nodePorts.map((nodePort, i) => `  server node${i} 127.0.0.1:${nodePort} check port ${checkerPorts[i]}`),
    '',
  ].join('\n'));
  // -db: in the foreground, no daemon, so that its PID is the child's and stop() ends it.
  const child: ChildProcess = spawn('haproxy', ['-db', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (text: string) => {
    stderr += text;
    // When it marks a node up or down, and why: a failure's first clue.
    process.stderr.write(text.replace(/^(?=.)/gm, '[haproxy] '));
  });
  const reap = () => child.kill('SIGKILL');
  process.once('exit', reap);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  // Ready once it leads to the primary and has found every other node down (it says so).
  await eventually('the proxy to lead to the primary, every other node checked', async () => {
    if (child.exitCode !== null) throw new Error(`haproxy exited with ${child.exitCode}: ${stderr}`);
    const nodes = await Promise.all(nodePorts.map(async (nodePort, i) => (await isPrimary(nodePort)) || stderr.includes(`postgres/node${i} is DOWN`)));
    return nodes.every(Boolean) && (await isPrimary(port));
  }, (ready) => ready);
  return {
    url,
    async stop() {
      process.removeListener('exit', reap);
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      for (const checker of checkers) checker.closeAllConnections();
      await Promise.all(checkers.map((checker) => new Promise((resolve) => checker.close(resolve))));
      await Promise.all(checks.map((check) => check.close()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Asks one node, over a connection kept open between checks, whether it is the primary. A new
 * connection per check (a backend forked every 200 ms) took over a second on this loaded
 * machine: the check timed out and HAProxy marked a healthy primary down, cutting every session.
 */
class PrimaryCheck {
  private client: pg.Client | undefined;
  private readonly port: number;

  constructor(port: number) {
    this.port = port;
  }

  /** Whether the node answers and is not in recovery; false when it cannot be asked. */
  async isPrimary(): Promise<boolean> {
    try {
      if (!this.client) {
        const client = new pg.Client({ host: '127.0.0.1', port: this.port, user: 'postgres', database: 'postgres', connectionTimeoutMillis: 1500, query_timeout: 1500 });
        client.on('error', () => {});
        this.client = client;
        await client.connect();
      }
      const { rows } = await this.client.query<{ recovering: boolean }>('select pg_is_in_recovery() as recovering');
      return rows[0]?.recovering === false;
    } catch {
      const broken = this.client;
      this.client = undefined;
      await broken?.end().catch(() => {});
      return false;
    }
  }

  async close(): Promise<void> {
    await this.client?.end().catch(() => {});
    this.client = undefined;
  }
}

/** Whether the server (or proxy) on `port` answers on a new connection and is not in recovery. */
async function isPrimary(port: number): Promise<boolean> {
  const check = new PrimaryCheck(port);
  try {
    return await check.isPrimary();
  } finally {
    await check.close();
  }
}
