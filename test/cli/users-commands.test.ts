import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness.ts';
import { cliEnvironment, runCliHere } from '../support/in-process-cli.ts';
import { freshDatabase, type TestDatabase } from '../support/test-database.ts';
import { WebClient } from '../dashboard/web-client.ts';

let database: TestDatabase;

/**
 * `tollwatch` run in this process on the test's store (its DATABASE_URL and public URL set below),
 * beside a harness answering the links: test/cli/operator-cli.test.ts spawns the executable itself.
 */
const tollwatch = (...args: string[]) => runCliHere(args);

async function json(...args: string[]) {
  const run = await tollwatch('--json', ...args);
  expect(run.stderr).toBe('');
  expect(run.status).toBe(0);
  return JSON.parse(run.stdout) as Record<string, any>;
}

describe('operator CLI: users (docs/cli.md, "Dashboard users")', () => {
  let h: Harness;
  let accountId: string;

  beforeAll(async () => {
    database = await freshDatabase();
    cliEnvironment({ DATABASE_URL: database.url, TOLLWATCH_PUBLIC_URL: 'https://dash.example.test', LOG_LEVEL: 'silent' });
    accountId = (await json('accounts', 'create', '--name', 'Fleet', '--plan', 'contributor')).account_id;
    h = await startHarness({ DATABASE_URL: database.url });
  });
  afterAll(async () => {
    await h?.close();
    await database?.drop();
  });

  it('invites an owner with a one-time link that sets a password, then lists them', async () => {
    const invited = await json('users', 'invite', '--account', accountId, '--email', 'Owner@Example.test');
    expect(invited).toEqual({
      user_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      account_id: accountId,
      email: 'owner@example.test',
      role: 'owner',
      link: expect.stringMatching(/^https:\/\/dash\.example\.test\/invitations\/twu_[\w-]{43}$/),
      expires_at: expect.any(String),
    });
    const hours = (Date.parse(invited.expires_at) - Date.now()) / 3_600_000;
    expect(hours).toBeGreaterThan(71.9);
    expect(hours).toBeLessThanOrEqual(72);
    const browser = new WebClient(h.url);
    const path = new URL(invited.link).pathname;
    await browser.get(path);
    expect((await browser.post(path, { password: 'twelve chars long', confirm: 'twelve chars long' })).status).toBe(303);
    expect((await browser.signIn('owner@example.test', 'twelve chars long')).status).toBe(303);
    const listed = await json('users', 'list', '--account', accountId);
    expect(listed.users).toEqual([expect.objectContaining({ email: 'owner@example.test', role: 'owner', disabled: false, password_set: true })]);
    expect(JSON.stringify(listed)).not.toContain('scrypt');
  });

  it('disables a user, ending their sessions at once, and enables them again', async () => {
    const invited = await json('users', 'invite', '--account', accountId, '--email', 'member@example.test', '--role', 'member');
    await h.services.users.acceptInvitation(new URL(invited.link).pathname.split('/').pop()!, 'a member password');
    const browser = new WebClient(h.url);
    expect((await browser.signIn('member@example.test', 'a member password')).status).toBe(303);
    expect((await browser.get('/overview')).status).toBe(200);
    expect((await json('users', 'disable', invited.user_id)).user.disabled).toBe(true);
    expect((await browser.get('/overview')).status).toBe(303);
    expect((await json('users', 'enable', invited.user_id)).user.disabled).toBe(false);
    expect((await browser.signIn('member@example.test', 'a member password')).status).toBe(303);
  });

  it('resets a password with a new link; the old link stops working', async () => {
    const invited = await json('users', 'invite', '--account', accountId, '--email', 'forgetful@example.test');
    const reset = await json('users', 'reset-password', invited.user_id);
    expect(reset.link).not.toBe(invited.link);
    const browser = new WebClient(h.url);
    expect((await browser.get(new URL(invited.link).pathname)).status).toBe(404);
    expect((await browser.get(new URL(reset.link).pathname)).status).toBe(200);
    const audit = await h.services.audit.list({ accountId, limit: 50 });
    expect(audit.filter((a) => a.action === 'user.password_reset' && a.actor === 'operator')).toHaveLength(1);
  });

  it('invites an operator, of no account', async () => {
    const invited = await json('users', 'invite', '--operator', '--email', 'ops@example.test');
    expect(invited).toMatchObject({ account_id: null, role: 'operator' });
    expect((await json('users', 'list', '--operators')).users.map((u: { email: string }) => u.email)).toEqual(['ops@example.test']);
  });

  it('refuses what cannot be done, exit status 1 and a line on standard error', async () => {
    for (const args of [
      ['users', 'invite', '--email', 'nobody@example.test'],
      ['users', 'invite', '--account', accountId, '--operator', '--email', 'both@example.test'],
      ['users', 'invite', '--account', accountId, '--email', 'owner@example.test'],
      ['users', 'invite', '--account', accountId, '--email', 'not-an-email'],
      ['users', 'invite', '--account', accountId, '--email', 'x@example.test', '--role', 'admin'],
      ['users', 'invite', '--account', '00000000-0000-4000-8000-000000000000', '--email', 'y@example.test'],
      ['users', 'disable', 'no-such-user'],
    ]) {
      const run = await tollwatch('--json', ...args);
      expect(run.status, args.join(' ')).toBe(1);
      expect(run.stdout, args.join(' ')).toBe('');
      expect(run.stderr, args.join(' ')).toMatch(/^tollwatch: .+\n$/);
    }
  });
});
