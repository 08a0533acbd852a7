import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { SERVER_NODE_FLAGS } from '../../src/node-flags.ts';
import { eventually } from './eventually.ts';
import { runCommand, type CommandRun } from './run-command.ts';

const ROOT = new URL('../../', import.meta.url).pathname;

/** A free loopback port. */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** The real server in a child process, as an operator runs it. */
export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** What it logged (JSON lines at LOG_LEVEL, `error` unless the test set another). */
  logged: string[];
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** Starts `src/server.ts` with `env` and waits until /readyz answers. */
export async function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, `${ROOT}src/server.ts`], {
    // Errors only: a server that shuts down after an uncaught error says why in the test's output.
    env: { ...process.env, LOG_LEVEL: 'error', PORT: String(port), HOST: '127.0.0.1', TOLLWATCH_PUBLIC_URL: url, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const logged: string[] = [];
  child.stdout!.setEncoding('utf8').on('data', (lines: string) => {
    logged.push(...lines.split('\n').filter((line) => line !== ''));
    process.stderr.write(lines.replace(/^(?=.)/gm, `[server ${port}] `));
  });
  // A test that times out never calls stop(): the server must not outlive the test run.
  const reap = () => child.kill('SIGKILL');
  process.once('exit', reap);
  child.once('exit', () => process.removeListener('exit', reap));
  // Ready, or a failure that says so: a server still starting after the deadline is not handed
  // to the test as if it were up.
  await eventually(`the server on port ${port} to be ready`, async () => {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    return fetch(`${url}/readyz`).then((res) => res.status, (err: Error) => err.message);
  }, (status) => status === 200, { timeoutMs: 90_000, everyMs: 100 });
  return {
    url,
    child,
    logged,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

/** Runs the operator CLI on a store and returns its one JSON object. */
export function cli(databaseUrl: string, ...args: string[]): Record<string, any> {
  const run = spawnSync(process.execPath, [`${ROOT}bin/tollwatch.js`, '--json', ...args], {
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' },
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`tollwatch ${args.join(' ')}: ${run.stderr}`);
  return JSON.parse(run.stdout) as Record<string, any>;
}

/** What a CLI run left: its exit status and its two streams. */
export type CliRun = CommandRun;

/**
 * Runs the `tollwatch` executable with extra environment, asynchronously: for tests whose harness,
 * serving in the test's own process, must keep answering while the CLI runs.
 */
export function spawnCli(env: Record<string, string>, ...args: string[]): Promise<CliRun> {
  return runCommand(process.execPath, [`${ROOT}bin/tollwatch.js`, ...args], { env: { ...process.env, LOG_LEVEL: 'silent', ...env } });
}

/** A contributor account and a fresh token on a running server, for its public address (`publicUrl`: the one TOLLWATCH_PUBLIC_URL names). */
export async function contributorToken(server: ServerProcess, databaseUrl: string, publicUrl = server.url): Promise<string> {
  const account = cli(databaseUrl, 'accounts', 'create', '--name', 'fault test', '--plan', 'contributor');
  const client = cli(databaseUrl, 'clients', 'create', '--account', account.account_id, '--name', 'node');
  const res = await fetch(`${server.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_id: client.client_id, client_secret: client.client_secret, audience: `${publicUrl}/api`, grant_type: 'client_credentials' }),
  });
  return ((await res.json()) as { access_token: string }).access_token;
}
