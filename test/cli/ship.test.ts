import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, copyFileSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProgressLine } from '../../src/cli/progress-line.ts';
import { startAnsweringProxy } from '../support/answering-proxy.ts';
import { sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';

const BIN = new URL('../../bin/tollwatch.js', import.meta.url).pathname;
const FIXTURE = new URL('../fixtures/sentrypeer_json.log', import.meta.url).pathname;

interface Run {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * The real `tollwatch ship`, started asynchronously (the server answering it runs in this
 * process): the child, and its end.
 */
function ship(env: Record<string, string>, args: string[]): { child: ChildProcess; done: Promise<Run> } {
  const child = spawn(process.execPath, [BIN, 'ship', ...args], {
    // A store nobody can open: a user command must never try.
    env: { ...process.env, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
  const done = new Promise<Run>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr });
    });
  });
  return { child, done };
}

/** Every event uuid the account holds, read back through the API page by page (docs/api.md §8). */
async function storedUuids(who: TestAccount): Promise<string[]> {
  const uuids: string[] = [];
  let cursor: string | null = null;
  do {
    const res = await who.api(`/api/events?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(res.status).toBe(200);
    const page = (await res.json()) as { data: Array<{ event_uuid: string }>; next_cursor: string | null };
    uuids.push(...page.data.map((e) => e.event_uuid));
    cursor = page.next_cursor;
  } while (cursor);
  return uuids;
}

/** Waits until `check` holds, polling. */
async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const uuidsOf = (lines: string[]) => lines.map((l) => (JSON.parse(l) as { event_uuid: string }).event_uuid);
const eventLines = (n: number) => Array.from({ length: n }, () => JSON.stringify(sampleEvent()));
const stateOf = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as { offset: number; line: number; ino: string; log: string };

describe('tollwatch ship: a SentryPeer JSON log through the batch route (docs/cli.md)', () => {
  let h: Harness;
  let dir: string;

  beforeAll(async () => {
    h = await startHarness();
    dir = mkdtempSync(join(tmpdir(), 'tollwatch-ship-'));
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await h?.close();
  });

  /** A fresh account, its environment for the CLI, and a folder of its own for logs. */
  async function shipperAccount(url = h.url) {
    const who = await h.account();
    const folder = mkdtempSync(join(dir, 'case-'));
    return { who, env: { TOLLWATCH_URL: url, TOLLWATCH_CLIENT_ID: who.clientId, TOLLWATCH_CLIENT_SECRET: who.clientSecret }, folder };
  }

  it('ships the fixture log, keeping its offset beside it; a second run sends nothing', async () => {
    const { who, env, folder } = await shipperAccount();
    const log = join(folder, 'sentrypeer_json.log');
    copyFileSync(FIXTURE, log);
    const lines = readFileSync(log, 'utf8').trimEnd().split('\n');
    const first = await ship(env, [log]).done;
    expect(first).toMatchObject({ status: 0, stderr: '' });
    expect(first.stdout).toBe(`${lines.length} events from ${log}: ${lines.length} created, 0 already stored, 0 conflicting, 0 invalid\n`);
    expect((await storedUuids(who)).sort()).toEqual(uuidsOf(lines).sort());
    const state = stateOf(`${log}.tollwatch-state`);
    expect(state).toMatchObject({ offset: statSync(log).size, line: lines.length, ino: String(statSync(log, { bigint: true }).ino) });

    const again = await ship(env, ['--batch-size', '7', log]).done;
    expect(again).toMatchObject({ status: 0, stderr: '' });
    expect(again.stdout).toBe(`0 events from ${log}: 0 created, 0 already stored, 0 conflicting, 0 invalid\n`);
  });

  it('killed mid-file (SIGKILL) and restarted: the account holds each line’s event exactly once', async () => {
    const { who, env, folder } = await shipperAccount();
    const log = join(folder, 'node.log');
    const state = join(folder, 'shipper.state');
    const lines = [...readFileSync(FIXTURE, 'utf8').trimEnd().split('\n'), ...eventLines(1_500)];
    writeFileSync(log, `${lines.join('\n')}\n`);
    const size = statSync(log).size;

    const killed = ship(env, ['--state', state, '--batch-size', '5', log]);
    await until(() => existsSync(state) && stateOf(state).offset > 0, 'a first acknowledged batch');
    killed.child.kill('SIGKILL');
    expect((await killed.done).signal).toBe('SIGKILL');
    const before = stateOf(state);
    expect(before.offset).toBeLessThan(size);
    const storedBefore = (await storedUuids(who)).length;
    expect(storedBefore).toBeLessThan(lines.length);
    // Everything acknowledged is stored; at most the one batch in flight is stored unacknowledged.
    expect(storedBefore - before.line).toBeGreaterThanOrEqual(0);
    expect(storedBefore - before.line).toBeLessThanOrEqual(5);

    const resumed = await ship(env, ['--json', '--state', state, '--batch-size', '100', log]).done;
    expect(resumed).toMatchObject({ status: 0, stderr: '' });
    const totals = JSON.parse(resumed.stdout) as { created: number; replayed: number; conflict: number; invalid: number };
    expect(totals).toMatchObject({ conflict: 0, invalid: 0 });
    expect(totals.created + totals.replayed).toBe(lines.length - before.line);
    expect(totals.created).toBe(lines.length - storedBefore);

    const stored = await storedUuids(who);
    expect(stored).toHaveLength(lines.length);
    expect(new Set(stored).size).toBe(lines.length);
    expect(stored.sort()).toEqual(uuidsOf(lines).sort());
    expect(stateOf(state)).toMatchObject({ offset: size, line: lines.length });
  });

  it('follows a log across rotation (renamed, a new file) and truncation; the state survives a restart', async () => {
    const { who, env, folder } = await shipperAccount();
    const log = join(folder, 'sentrypeer_json.log');
    const state = `${log}.tollwatch-state`;
    const first = eventLines(10);
    writeFileSync(log, `${first.join('\n')}\n`);
    const follower = ship(env, ['--follow', '--poll-interval', '50', '--batch-size', '4', log]);
    await until(async () => (await storedUuids(who)).length === 10, 'the first 10 events');

    // Lines written just before the rename land in the old file, then the node starts a new one.
    const late = eventLines(3);
    appendFileSync(log, `${late.join('\n')}\n`);
    renameSync(log, `${log}.1`);
    const second = eventLines(7);
    writeFileSync(log, `${second.join('\n')}\n`);
    await until(async () => (await storedUuids(who)).length === 20, 'the rotated and the new file’s events');
    await until(() => stateOf(state).offset === statSync(log).size, 'the new file’s offset');
    expect(stateOf(state).ino).toBe(String(statSync(log, { bigint: true }).ino));

    // copytruncate: the same file emptied, then written again.
    truncateSync(log, 0);
    const third = eventLines(2);
    writeFileSync(log, `${third.join('\n')}\n`);
    await until(async () => (await storedUuids(who)).length === 22, 'the truncated file’s events');

    follower.child.kill('SIGTERM');
    const stopped = await follower.done;
    expect(stopped.status).toBe(0);
    expect(stopped.stdout).toBe(`22 events from ${log}: 22 created, 0 already stored, 0 conflicting, 0 invalid\n`);
    expect(stopped.stderr).toContain(`tollwatch: ${log} was rotated; shipping the new file from its start\n`);
    expect(stopped.stderr).toContain(`tollwatch: ${log} was truncated or rewritten; shipping it from its start\n`);
    expect((await storedUuids(who)).sort()).toEqual(uuidsOf([...first, ...late, ...second, ...third]).sort());
    expect(stateOf(state)).toMatchObject({ offset: statSync(log).size, line: 2 });

    const restarted = await ship(env, [log]).done;
    expect(restarted).toMatchObject({ status: 0, stderr: '' });
    expect(restarted.stdout).toBe(`0 events from ${log}: 0 created, 0 already stored, 0 conflicting, 0 invalid\n`);
  });

  it('restarted after a rotation it did not see: finishes the old file first, found by its identity', async () => {
    const { who, env, folder } = await shipperAccount();
    const log = join(folder, 'sentrypeer_json.log');
    const before = eventLines(5);
    writeFileSync(log, `${before.join('\n')}\n`);
    expect((await ship(env, [log]).done).status).toBe(0);
    const unshipped = eventLines(3);
    appendFileSync(log, `${unshipped.join('\n')}\n`);
    renameSync(log, `${log}.1`);
    const fresh = eventLines(4);
    writeFileSync(log, `${fresh.join('\n')}\n`);

    const run = await ship(env, [log]).done;
    expect(run.status).toBe(0);
    expect(run.stderr).toBe(`tollwatch: ${log} was rotated while not shipping; finishing ${log}.1 first\n`);
    expect(run.stdout).toBe(`7 events from ${log}: 7 created, 0 already stored, 0 conflicting, 0 invalid\n`);
    expect((await storedUuids(who)).sort()).toEqual(uuidsOf([...before, ...unshipped, ...fresh]).sort());
  });

  it('reports and skips lines that are no events; a last line still being written waits for its newline', async () => {
    const { who, env, folder } = await shipperAccount();
    const log = join(folder, 'sentrypeer_json.log');
    const good = eventLines(2);
    const bad = sampleEvent({ transport_type: 'SCTP' });
    const partial = JSON.stringify(sampleEvent());
    writeFileSync(log, `${good[0]}\n{not json\n${JSON.stringify(bad)}\n\n${good[1]}\n${partial.slice(0, 100)}`);

    const first = await ship(env, [log]).done;
    expect(first.status).toBe(1);
    expect(first.stdout).toBe(`4 events from ${log}: 2 created, 0 already stored, 0 conflicting, 2 invalid\n`);
    expect(first.stderr.split('\n')).toEqual([
      `tollwatch: ${log} line 2: not JSON; skipped`,
      expect.stringMatching(new RegExp(`^tollwatch: ${log} line 3: invalid ${bad.event_uuid as string}; transport_type must be one of: UDP, TCP, TLS; skipped$`)),
      `tollwatch: ${log} line 6 is not finished (no newline yet); the next run ships it`,
      '',
    ]);
    expect((await storedUuids(who)).sort()).toEqual(uuidsOf(good).sort());

    appendFileSync(log, `${partial.slice(100)}\n`);
    const second = await ship(env, [log]).done;
    expect(second).toMatchObject({ status: 0, stderr: '' });
    expect(second.stdout).toBe(`1 events from ${log}: 1 created, 0 already stored, 0 conflicting, 0 invalid\n`);
    expect((await storedUuids(who)).sort()).toEqual(uuidsOf([...good, partial]).sort());
  });

  it('waits out an outage longer than the SDK’s own retries, sending the same lines again', async () => {
    let refused = 0;
    const proxy = await startAnsweringProxy(h.url, (r) =>
      r.path === '/api/events/batch' && refused++ < 6
        ? {
            status: 503,
            headers: { 'content-type': 'application/problem+json', 'retry-after': '0' },
            body: JSON.stringify({ type: 'http://tollwatch.test/problems#unavailable', title: 'Unavailable', status: 503, detail: 'try later', error: 'unavailable' }),
          }
        : 'forward',
    );
    try {
      const { who, env, folder } = await shipperAccount(proxy.url);
      const log = join(folder, 'sentrypeer_json.log');
      copyFileSync(FIXTURE, log);
      const run = await ship(env, [log]).done;
      expect(run.status).toBe(0);
      expect(run.stderr).toMatch(/^tollwatch: the server answered 503 \(unavailable\); sending the same lines again in \d+ s\n$/);
      expect(run.stdout).toBe(`26 events from ${log}: 26 created, 0 already stored, 0 conflicting, 0 invalid\n`);
      expect(await storedUuids(who)).toHaveLength(26);
      expect(proxy.requests.filter((r) => r.path === '/api/events/batch')).toHaveLength(7);
    } finally {
      await proxy.close();
    }
  }, 180_000);

  it('exits 2 on a log that does not exist (without --follow), or on credentials the server refuses', async () => {
    const { env, folder } = await shipperAccount();
    const missing = await ship(env, [join(folder, 'missing.log')]).done;
    expect(missing).toMatchObject({ status: 2, stdout: '' });
    expect(missing.stderr).toBe(`tollwatch: cannot read ${join(folder, 'missing.log')}: no such file\n`);
    const log = join(folder, 'sentrypeer_json.log');
    copyFileSync(FIXTURE, log);
    const refused = await ship({ ...env, TOLLWATCH_CLIENT_SECRET: 'wrong' }, [log]).done;
    expect(refused).toMatchObject({ status: 2, stdout: '' });
    expect(refused.stderr).toMatch(/^tollwatch: the server refused the credentials \(invalid_client/);
    // Nothing was acknowledged, so nothing was recorded: the next run starts from the top.
    expect(existsSync(`${log}.tollwatch-state`)).toBe(false);
  });

  it('draws its progress line only on a terminal', () => {
    const written: string[] = [];
    const terminal = { isTTY: true, columns: 40, write: (s: string) => written.push(s) } as unknown as NodeJS.WriteStream;
    const line = new ProgressLine(terminal);
    line.update('ship line 1');
    line.print('tollwatch: a report');
    line.clear();
    expect(written.join('')).toBe('\rship line 1\u001b[K\r\u001b[Ktollwatch: a report\n\rship line 1\u001b[K\r\u001b[K');
    const piped: string[] = [];
    const pipe = new ProgressLine({ write: (s: string) => piped.push(s) } as unknown as NodeJS.WriteStream);
    pipe.update('ship line 1');
    pipe.print('tollwatch: a report');
    pipe.clear();
    expect(piped).toEqual(['tollwatch: a report\n']);
  });
});
