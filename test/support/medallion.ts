import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from './eventually.ts';

const RUNNER = new URL('./medallion-server.py', import.meta.url).pathname;
/** Debian's Python, where the apt packages medallion needs are installed. */
const PYTHON = '/usr/bin/python3';
const TAXII = 'application/taxii+json;version=2.1';

/**
 * OASIS's medallion TAXII 2.1 server (test/fixtures/medallion) needs Debian's python3-flask,
 * python3-flask-httpauth, python3-tz and python3-six. Why it cannot run here, or undefined;
 * throws instead when TOLLWATCH_REQUIRE_MEDALLION=1 (as in .ci/run).
 */
export function medallionMissing(): string | undefined {
  const check = spawnSync(PYTHON, ['-c', 'import flask, flask_httpauth, pytz, six, pkg_resources'], { encoding: 'utf8' });
  if (check.status === 0) return undefined;
  const why = `${PYTHON} cannot import medallion's packages (Debian: python3-flask python3-flask-httpauth python3-tz python3-six): ${(check.stderr || String(check.error ?? '')).trim().split('\n').at(-1)}`;
  if (process.env.TOLLWATCH_REQUIRE_MEDALLION === '1') throw new Error(`${why}; TOLLWATCH_REQUIRE_MEDALLION=1 makes that a failure`);
  console.warn(`\n*** medallion tests SKIPPED: ${why}. ***\n`);
  return why;
}

/** What medallion is started with: its users, its `taxii` settings and its memory backend's data ("{base}" becomes its URL) and options. */
export interface MedallionConfig {
  users: Record<string, string>;
  taxii: { max_page_size: number; [key: string]: unknown };
  data: Record<string, unknown>;
  /**
   * The backend's options besides its data: `session_timeout`, the seconds a `next` lives (30 by
   * default), and `check_interval`, the seconds between its sweeps of expired ones (10 by default).
   */
  backend?: { session_timeout?: number; check_interval?: number };
}

export interface Medallion {
  /** `http://127.0.0.1:<port>`, without a trailing slash. */
  url: string;
  /** Sends a request as a TAXII 2.1 client does, with HTTP Basic credentials. */
  request(path: string, user: string, init?: { method?: string; body?: unknown }): Promise<Response>;
  stop(): Promise<void>;
}

/** Starts medallion on a free loopback port and waits until its discovery resource answers. */
export async function startMedallion(config: MedallionConfig): Promise<Medallion> {
  const dir = mkdtempSync(join(tmpdir(), 'medallion-'));
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify(config));
  const child = spawn(PYTHON, [RUNNER, file], { stdio: ['ignore', 'pipe', 'pipe'] });
  const reap = () => child.kill('SIGKILL');
  process.once('exit', reap);
  child.once('exit', () => process.removeListener('exit', reap));
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  // Werkzeug logs each request on stderr: kept for a failure's message, not printed.
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr = (stderr + text).slice(-4000)));
  const port = await eventually(
    'medallion to print its port',
    () => {
      if (child.exitCode !== null) throw new Error(`medallion exited with ${child.exitCode}: ${stderr}`);
      return /^listening (\d+)$/m.exec(stdout)?.[1];
    },
    (seen) => seen !== undefined,
    { everyMs: 50 },
  );
  const url = `http://127.0.0.1:${port}`;
  const passwords = config.users;
  const request: Medallion['request'] = (path, user, init = {}) =>
    fetch(`${url}${path}`, {
      method: init.method ?? 'GET',
      headers: {
        accept: TAXII,
        authorization: `Basic ${Buffer.from(`${user}:${passwords[user] ?? ''}`).toString('base64')}`,
        ...(init.body === undefined ? {} : { 'content-type': TAXII }),
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
  const [user] = Object.keys(passwords);
  await eventually('medallion to answer its discovery resource', () => request('/taxii2/', user!).then((res) => res.status, (err: Error) => err.message), (status) => status === 200, { everyMs: 50 });
  return {
    url,
    request,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await new Promise((resolve) => child.once('exit', resolve));
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
