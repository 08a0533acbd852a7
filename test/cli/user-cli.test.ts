import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { runCommand, type CommandRun } from '../support/run-command.ts';

const BIN = new URL('../../bin/tollwatch.js', import.meta.url).pathname;

/**
 * Runs the real `tollwatch` executable as a user would, asynchronously: the server answering it
 * runs in this process, which a synchronous spawn would block.
 */
function tollwatch(env: Record<string, string>, args: string[], input?: string): Promise<CommandRun> {
  // A store nobody can open: the user commands must never try.
  return runCommand(process.execPath, [BIN, ...args], { env: { ...process.env, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', ...env }, input: input ?? '', timeoutMs: 30_000 });
}

describe('user CLI: lookup, ip, submit through the API (docs/cli.md)', () => {
  let h: Harness;
  let who: TestAccount;
  let env: Record<string, string>;
  let dir: string;

  beforeAll(async () => {
    h = await startHarness();
    who = await h.account();
    env = { TOLLWATCH_URL: h.url, TOLLWATCH_CLIENT_ID: who.clientId, TOLLWATCH_CLIENT_SECRET: who.clientSecret };
    dir = mkdtempSync(join(tmpdir(), 'tollwatch-cli-'));
    const res = await who.api('/api/events', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(sampleEvent({ called_number: '0046812118532', source_ip: '203.0.113.7', sip_user_agent: 'evil\u001b[2Jscanner' })),
    });
    expect(res.status).toBe(201);
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await h?.close();
  });

  it('lookup: a number seen exits 0 with a readable answer', async () => {
    const run = await tollwatch(env, ['lookup', '+46812118532']);
    expect(run).toMatchObject({ status: 0, stderr: '' });
    expect(run.stdout).toMatch(/^\+46812118532 {2}SEEN {2}Attackers have tried to call this number 1 time\./);
    expect(run.stdout).toContain('written as        0046812118532');
    expect(run.stdout).toContain('SIP methods       INVITE 1');
  });

  it('lookup: a number not seen exits 1', async () => {
    const run = await tollwatch(env, ['lookup', 'tel:+1-555-0100']);
    expect(run).toMatchObject({ status: 1, stderr: '' });
    expect(run.stdout).toBe('+15550100  not seen  No probes to this number have been seen.\n');
  });

  it('--json prints the server’s answer as one JSON object, whatever the exit status', async () => {
    const found = await tollwatch(env, ['--json', 'lookup', '0046812118532']);
    expect(found.status).toBe(0);
    expect(found.stdout.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(found.stdout)).toMatchObject({ phone_number: '0046812118532', found: true, seen_count: 1, country: 'SE' });
    const missing = await tollwatch(env, ['--json', 'ip', '192.0.2.200']);
    expect(missing.status).toBe(1);
    expect(JSON.parse(missing.stdout)).toEqual({ ip_address: '192.0.2.200', found: false, message: expect.any(String) });
  });

  it('ip: an address seen exits 0, and control characters from the server are escaped', async () => {
    const run = await tollwatch(env, ['ip', '203.0.113.7']);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('user agents       evil\\x1b[2Jscanner 1');
    expect(run.stdout).not.toContain('\u001b');
    const json = await tollwatch(env, ['--json', 'ip', '203.0.113.7']);
    expect(json.stdout).not.toContain('\u001b');
    expect(JSON.parse(json.stdout).user_agents).toEqual([{ user_agent: 'evil\u001b[2Jscanner', count: 1 }]);
  });

  it('bad credentials exit 2 with a message on stderr and nothing on stdout', async () => {
    for (const args of [['lookup', '+46812118532'], ['--json', 'ip', '192.0.2.1']]) {
      const run = await tollwatch({ ...env, TOLLWATCH_CLIENT_SECRET: 'wrong' }, args);
      expect(run.status).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/^tollwatch: the server refused the credentials \(invalid_client: .*\): check TOLLWATCH_CLIENT_ID and TOLLWATCH_CLIENT_SECRET\n$/);
    }
  });

  it('other errors exit 2 too: a value the server refuses, missing settings, an unreachable server', async () => {
    const invalid = await tollwatch(env, ['lookup', 'not a number!']);
    expect(invalid).toMatchObject({ status: 2, stdout: '' });
    expect(invalid.stderr).toMatch(/^tollwatch: .*\(invalid_phone_number\)\n$/);
    const unset = await tollwatch({ TOLLWATCH_URL: '', TOLLWATCH_CLIENT_ID: '', TOLLWATCH_CLIENT_SECRET: '' }, ['lookup', '+1']);
    expect(unset).toMatchObject({ status: 2, stdout: '' });
    expect(unset.stderr).toBe("tollwatch: set TOLLWATCH_URL, TOLLWATCH_CLIENT_ID, TOLLWATCH_CLIENT_SECRET (the server's address and your API client's credentials)\n");
    const closed = await freeClosedUrl();
    const unreachable = await tollwatch({ ...env, TOLLWATCH_URL: closed }, ['ip', '192.0.2.1']);
    expect(unreachable).toMatchObject({ status: 2, stdout: '' });
    expect(unreachable.stderr).toMatch(new RegExp(`^tollwatch: cannot reach ${closed.replaceAll('.', '\\.')}: fetch failed`));
    expect(unreachable.stderr).not.toMatch(/\n\s+at /);
  });

  it('submit: NDJSON from a file, in batches; a second run finds every event stored', async () => {
    const submitter = await h.account();
    const submitterEnv = { ...env, TOLLWATCH_CLIENT_ID: submitter.clientId, TOLLWATCH_CLIENT_SECRET: submitter.clientSecret };
    const events = Array.from({ length: 1_203 }, () => sampleEvent());
    const file = join(dir, 'events.ndjson');
    writeFileSync(file, `${events.map((e) => JSON.stringify(e)).join('\n')}\n\n`);
    const first = await tollwatch(submitterEnv, ['submit', file]);
    expect(first).toMatchObject({ status: 0, stderr: '' });
    expect(first.stdout).toBe(`1203 events from ${file}: 1203 created, 0 already stored, 0 conflicting, 0 invalid\n`);
    const again = await tollwatch(submitterEnv, ['--json', 'submit', file]);
    expect(again.status).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({ created: 0, replayed: 1_203, conflict: 0, invalid: 0, refused: [] });
    const listed = await submitter.api('/api/events?limit=1000');
    expect(((await listed.json()) as { data: unknown[] }).data).toHaveLength(1000);
  });

  it('submit -: NDJSON from standard input; refused lines are named and exit 1', async () => {
    const submitter = await h.account();
    const submitterEnv = { ...env, TOLLWATCH_CLIENT_ID: submitter.clientId, TOLLWATCH_CLIENT_SECRET: submitter.clientSecret };
    const good = sampleEvent();
    const input = [JSON.stringify(good), '{not json', JSON.stringify(sampleEvent({ transport_type: 'SCTP' })), JSON.stringify({ ...good, sip_message: 'other' })].join('\n');
    const run = await tollwatch(submitterEnv, ['submit', '-'], input);
    expect(run).toMatchObject({ status: 1, stderr: '' });
    expect(run.stdout.split('\n')).toEqual([
      '4 events from standard input: 1 created, 0 already stored, 1 conflicting, 2 invalid',
      '  line 2: invalid; line is not JSON',
      expect.stringMatching(/^ {2}line 3: invalid [0-9a-f-]{36}; transport_type must /),
      `  line 4: conflict ${good.event_uuid}`,
      '',
    ]);
    const json = await tollwatch(submitterEnv, ['--json', 'submit', '-'], JSON.stringify(good));
    expect(JSON.parse(json.stdout)).toEqual({ created: 0, replayed: 1, conflict: 0, invalid: 0, refused: [] });
  });

  it('submit: an unreadable file exits 2', async () => {
    const run = await tollwatch(env, ['submit', join(dir, 'missing.ndjson')]);
    expect(run).toMatchObject({ status: 2, stdout: '' });
    expect(run.stderr).toMatch(/^tollwatch: ENOENT/);
  });
});

/** The address of a loopback port nothing listens on. */
async function freeClosedUrl(): Promise<string> {
  const { freePort } = await import('../support/server-process.ts');
  return `http://127.0.0.1:${await freePort()}`;
}
