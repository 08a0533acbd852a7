import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startAnsweringProxy, type AnsweringProxy } from '../support/answering-proxy.ts';
import { sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { runCommand } from '../support/run-command.ts';

const MAIN = new URL('../../cli/src/main.ts', import.meta.url).pathname;

/**
 * `tollwatch-cli` (cli/, docs/clients.md) run from its sources as a user runs it: settings stored
 * by `setup`, tokens cached between runs, lookups from arguments and from standard input. The
 * packed package is tried on each supported Node in packages.test.ts.
 */
describe('tollwatch-cli, the user CLI', () => {
  let h: Harness;
  let who: TestAccount;
  let proxy: AnsweringProxy;
  let home: string;
  let mode: 'forward' | 'hang' = 'forward';

  /** Runs the CLI with a config directory of the test's and no Tollwatch variables but those given. */
  const cli = (args: string[], options: { input?: string; env?: Record<string, string>; dir?: string } = {}) => {
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('TOLLWATCH_')));
    return runCommand(process.execPath, [MAIN, ...args], { env: { ...env, TOLLWATCH_CONFIG_DIR: options.dir ?? home, ...options.env }, input: options.input ?? '' });
  };
  const tokenRequests = () => proxy.requests.filter((r) => r.path === '/oauth/token').length;
  const setUp = (dir = home) => cli(['setup', '--url', proxy.url, '--client-id', who.clientId], { input: `${who.clientSecret}\n`, dir });

  beforeAll(async () => {
    h = await startHarness();
    who = await h.account();
    proxy = await startAnsweringProxy(h.url, (r) => (mode === 'hang' && r.path.startsWith('/api/') ? 'hang' : 'forward'));
    for (const called_number of ['+46812118532', '+441632960001']) {
      const res = await who.api('/api/events', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(sampleEvent({ called_number, source_ip: '203.0.113.7' })) });
      expect(res.status).toBe(201);
    }
    await h.settled();
  });
  afterEach(() => {
    mode = 'forward';
  });
  afterAll(async () => {
    await proxy?.close();
    await h?.close();
  });

  beforeAll(() => {
    home = mkdtempSync(join(tmpdir(), 'tollwatch-cli-home-'));
    return () => rmSync(home, { recursive: true, force: true });
  });

  it('setup checks the credentials and stores them readable by the owner only', async () => {
    const run = await setUp();
    expect(run).toMatchObject({ status: 0, stderr: '' });
    const file = join(home, 'config.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(home).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ url: proxy.url, client_id: who.clientId, client_secret: who.clientSecret });
  });

  it('setup with a wrong secret says so, exits 2 and stores nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollwatch-cli-wrong-'));
    try {
      const run = await cli(['setup', '--url', proxy.url, '--client-id', who.clientId], { input: 'not-the-secret\n', dir });
      expect(run.status).toBe(2);
      expect(run.stderr).toContain('refused the credentials (invalid_client');
      expect(existsSync(join(dir, 'config.json'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('looks a number up with the stored settings, and later runs reuse the cached token', async () => {
    const before = tokenRequests();
    const first = await cli(['lookup', '0046812118532']);
    expect(first).toMatchObject({ status: 0, stderr: '' });
    expect(first.stdout).toMatch(/^0046812118532 {2}SEEN/);
    expect(first.stdout).toContain('score ');
    const second = await cli(['ip', '192.0.2.99']);
    expect(second).toMatchObject({ status: 1, stderr: '' });
    expect(second.stdout).toContain('192.0.2.99  not seen');
    // setup's token served both runs.
    expect(tokenRequests()).toBe(before);
    const [cached] = readdirSync(join(home, 'tokens'));
    expect(statSync(join(home, 'tokens', cached!)).mode & 0o777).toBe(0o600);
  });

  it('reads values from standard input and sends them 1,000 to a request, one line of JSON each, in order', async () => {
    const values = Array.from({ length: 2_500 }, (_, i) => `+1555${String(i).padStart(7, '0')}`);
    values[1_234] = '+46812118532';
    const before = proxy.requests.length;
    const run = await cli(['lookup', '--json'], { input: `${values.join('\n')}\n\n` });
    expect(run).toMatchObject({ status: 0, stderr: '' });
    const lines = run.stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as { phone_number: string; found: boolean });
    expect(lines.map((l) => l.phone_number)).toEqual(values);
    expect(lines.filter((l) => l.found).map((l) => l.phone_number)).toEqual(['+46812118532']);
    expect(proxy.requests.slice(before).map((r) => r.path)).toEqual(['/api/phone-numbers/lookup', '/api/phone-numbers/lookup', '/api/phone-numbers/lookup']);
  });

  it('writes CSV with a header, and exits 1 when nothing was seen, 2 when a value was invalid and nothing seen', async () => {
    const none = await cli(['lookup', '--csv', '-'], { input: '+15550000001\n+15550000002\n' });
    expect(none.status).toBe(1);
    expect(none.stdout).toBe('input,found,score,seen_count,first_seen,last_seen,reasons,error\n+15550000001,false,,,,,,\n+15550000002,false,,,,,,\n');
    const invalid = await cli(['lookup', '-'], { input: '+15550000001\n=cmd|x\n' });
    expect(invalid.status).toBe(2);
    expect(invalid.stdout).toContain('=cmd|x  invalid  invalid_phone_number');
    const csv = await cli(['lookup', '--csv', '-'], { input: '=cmd|x\n+441632960001\n' });
    expect(csv.status).toBe(0);
    // A spreadsheet would run the first cell: it is guarded.
    expect(csv.stdout.split('\n')[1]).toBe("'=cmd|x,,,,,,,invalid_phone_number");
    expect(csv.stdout.split('\n')[2]).toMatch(/^\+441632960001,true,\d+,1,/);
  });

  it('asks privately with --private: 5 hex digits of the hash, never the number', async () => {
    const before = proxy.requests.length;
    const run = await cli(['lookup', '--private', '+46 8 121 185 32']);
    expect(run).toMatchObject({ status: 0, stderr: '' });
    expect(run.stdout).toContain('+46812118532  SEEN  1 time');
    const sent = proxy.requests.slice(before);
    expect(sent.map((r) => r.path)).toEqual([expect.stringMatching(/^\/api\/phone-numbers\/range\/[0-9a-f]{5}$/)]);
  });

  it('gives up at --timeout with exit 2 and says why', async () => {
    mode = 'hang';
    const run = await cli(['lookup', '--timeout', '0.3', '+46812118532']);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain("no answer within the call's deadline of 300 ms");
  });

  it('the environment overrides the config file, setting by setting', async () => {
    const run = await cli(['lookup', '+46812118532'], { env: { TOLLWATCH_CLIENT_SECRET: 'wrong-secret' } });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('refused the credentials');
    const config = await cli(['config'], { env: { TOLLWATCH_CLIENT_SECRET: 'wrong-secret' } });
    expect(config.status).toBe(0);
    expect(config.stdout).toContain(`url            ${proxy.url}  (config file)`);
    expect(config.stdout).toContain('client secret  set  (environment)');
    expect(config.stdout).not.toContain('wrong-secret');
    expect(config.stdout).not.toContain(who.clientSecret);
  });

  it('refuses a config file others can read, and says how to fix it', async () => {
    const file = join(home, 'config.json');
    chmodSync(file, 0o644);
    try {
      const run = await cli(['lookup', '+46812118532']);
      expect(run.status).toBe(2);
      expect(run.stderr).toContain(`can be read by others (it holds a client secret): chmod 600 ${file}`);
    } finally {
      chmodSync(file, 0o600);
    }
  });

  it('without settings, says how to set up; usage errors exit 2', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollwatch-cli-empty-'));
    try {
      const run = await cli(['lookup', '+46812118532'], { dir });
      expect(run).toMatchObject({ status: 2, stdout: '' });
      expect(run.stderr).toContain('not set up: run `tollwatch-cli setup`, or set TOLLWATCH_URL, TOLLWATCH_CLIENT_ID, TOLLWATCH_CLIENT_SECRET');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect((await cli(['lookup', '--json', '--csv', 'x'])).status).toBe(2);
    expect((await cli(['ip', '--private', '192.0.2.1'])).status).toBe(2);
    expect((await cli(['lookup', '--timeout', 'soon', 'x'])).stderr).toContain('--timeout: seconds');
    expect((await cli(['frobnicate'])).stderr).toContain('unknown command "frobnicate"');
    expect((await cli(['--help'])).stdout).toContain('tollwatch-cli lookup');
  });
});
