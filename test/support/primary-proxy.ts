import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from './eventually.ts';
import { isPrimary } from './primary-check.ts';
import { freePort } from './server-process.ts';

const CHECK_SERVER = new URL('./primary-check-server.ts', import.meta.url).pathname;

/** Whether Debian's haproxy is there. */
export const haproxyMissing = spawnSync('haproxy', ['-v']).status !== 0;

/**
 * A front door that leads only to the primary, as a deployment with Patroni has: HAProxy in TCP
 * mode, checking each node over HTTP every 200 ms against checks (primary-check-server.ts) that answer 200 only where
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
  const checker = spawn(process.execPath, [CHECK_SERVER, ...nodePorts.map(String)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const reapChecker = () => checker.kill('SIGKILL');
  process.once('exit', reapChecker);
  const checkerPorts = await new Promise<number[]>((resolve, reject) => {
    let out = '';
    checker.stdout!.setEncoding('utf8').on('data', (text: string) => {
      out += text;
      if (out.includes('\n')) resolve(JSON.parse(out) as number[]);
    });
    checker.once('exit', (code) => reject(new Error(`the primary checks exited with ${code}`)));
  });
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
      process.removeListener('exit', reapChecker);
      if (checker.exitCode === null && checker.signalCode === null) {
        const exited = new Promise((resolve) => checker.once('exit', resolve));
        checker.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

