import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLANS, planJson, TESTER_PLAN } from '../../src/domain/accounts/plans.ts';
import { startHarness } from '../support/harness.ts';
import { eventually } from '../support/eventually.ts';
import { cliEnvironment, runCliHere } from '../support/in-process-cli.ts';
import type { CommandRun } from '../support/run-command.ts';
import { freshDatabase, type TestDatabase } from '../support/test-database.ts';

let database: TestDatabase;
let DATABASE_URL = '';
const BIN = new URL('../../bin/tollwatch.js', import.meta.url).pathname;
/** The environment this file was started with, before it sets its own below. */
const STARTED_ENV = { ...process.env };

/**
 * Runs `tollwatch` in this process (runCli, as the executable calls it): a hundred runs here. What
 * only a real process shows is proven by the few spawns at the end of this file.
 */
const tollwatch = (...args: string[]): Promise<CommandRun> => runCliHere(args);

/** Runs the real `tollwatch` executable as an operator would. */
function spawned(...args: string[]): CommandRun {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    env: { ...STARTED_ENV, DATABASE_URL, LOG_LEVEL: 'silent' },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

async function json(...args: string[]) {
  const run = await tollwatch('--json', ...args);
  expect(run.stderr).toBe('');
  expect(run.status).toBe(0);
  expect(run.stdout.trim().split('\n')).toHaveLength(1);
  return JSON.parse(run.stdout) as Record<string, any>;
}

beforeAll(async () => {
  database = await freshDatabase();
  DATABASE_URL = database.url;
  cliEnvironment({ DATABASE_URL, LOG_LEVEL: 'silent' });
});
afterAll(() => database?.drop());

describe('operator CLI (docs/api.md §10)', () => {
  it('creates accounts and clients, printing one JSON object each', async () => {
    const account = await json('accounts', 'create', '--name', 'Fleet', '--plan', 'contributor', '--trusted');
    expect(account).toEqual({ account_id: expect.stringMatching(/^[0-9a-f-]{36}$/), name: 'Fleet', plan: 'contributor', trusted: true });

    const client = await json('clients', 'create', '--account', account.account_id, '--name', 'node-1');
    expect(client).toEqual({
      client_id: expect.any(String),
      client_secret: expect.any(String),
      account_id: account.account_id,
      permissions: ['write:events', 'read:events', 'read:phone-numbers', 'read:ip-addresses', 'write:reports'],
    });

    const listed = await json('clients', 'list', '--account', account.account_id);
    expect(listed.clients).toHaveLength(1);
    expect(JSON.stringify(listed)).not.toContain(client.client_secret);
    expect(listed.clients[0]).not.toHaveProperty('secret_hash');
  });

  it('gives non-contributor accounts every permission but write:events by default, or the ones named', async () => {
    const account = await json('accounts', 'create', '--name', 'Carrier', '--plan', 'business');
    expect((await json('clients', 'create', '--account', account.account_id, '--name', 'pbx')).permissions).toEqual([
      'read:events',
      'read:phone-numbers',
      'read:ip-addresses',
      'write:reports',
    ]);
    expect(
      (await json('clients', 'create', '--account', account.account_id, '--name', 'narrow', '--permissions', 'read:phone-numbers')).permissions,
    ).toEqual(['read:phone-numbers']);
  });

  it('lists accounts, changes plans, disables', async () => {
    const account = await json('accounts', 'create', '--name', 'Shop', '--plan', 'tester');
    expect(await json('accounts', 'set-plan', account.account_id, 'service_provider')).toMatchObject({ plan: 'service_provider' });
    expect(await json('accounts', 'disable', account.account_id)).toMatchObject({ disabled: true });
    const all = (await json('accounts', 'list')).accounts as Array<Record<string, unknown>>;
    expect(all.find((a) => a.account_id === account.account_id)).toMatchObject({ plan: 'service_provider', disabled: true });
  });

  it('resets secrets and deletes clients', async () => {
    const account = await json('accounts', 'create', '--name', 'Reset', '--plan', 'contributor');
    const client = await json('clients', 'create', '--account', account.account_id, '--name', 'n');
    const reset = await json('clients', 'reset-secret', client.client_id);
    expect(reset).toEqual({ client_id: client.client_id, client_secret: expect.any(String) });
    expect(reset.client_secret).not.toBe(client.client_secret);
    expect(await json('clients', 'delete', client.client_id)).toEqual({ client_id: client.client_id, deleted: true });
    expect((await json('clients', 'list', '--account', account.account_id)).clients).toEqual([]);
  });

  it('creates, lists and revokes node ingest URLs (docs/api.md §11)', async () => {
    const account = await json('accounts', 'create', '--name', 'Nodes', '--plan', 'contributor');
    const created = await json('ingest-urls', 'create', '--account', account.account_id, '--name', 'node-1');
    expect(created).toEqual({
      ingest_url: expect.stringMatching(/\/ingest\/twi_[A-Za-z0-9_-]{43}$/),
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      account_id: account.account_id,
      name: 'node-1',
    });
    const secret = created.ingest_url.slice(created.ingest_url.lastIndexOf('/') + 1);
    const text = await tollwatch('ingest-urls', 'create', '--account', account.account_id, '--name', 'node\u009b2J');
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/^ingest_url: \S+\/ingest\/twi_\S{43}\nid: +[0-9a-f-]{36}\n/);

    const listed = (await json('ingest-urls', 'list', '--account', account.account_id)).ingest_urls as Array<Record<string, unknown>>;
    expect(listed).toHaveLength(2);
    expect(listed[0]).toEqual({ id: created.id, account_id: account.account_id, name: 'node-1', created_at: expect.any(String), last_used_at: null, revoked_at: null });
    expect(JSON.stringify(listed)).not.toContain(secret);

    const revoked = await json('ingest-urls', 'revoke', created.id);
    expect(revoked).toMatchObject({ id: created.id, revoked_at: expect.any(String) });
    const lines = await tollwatch('ingest-urls', 'list', '--account', account.account_id);
    expect(lines.status).toBe(0);
    expect(lines.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(lines.stdout.split('\n')).toEqual([
      `${created.id}  revoked ${revoked.revoked_at}  last used: never  node-1`,
      expect.stringMatching(/^[0-9a-f-]{36}  active +last used: never  node\\x9b2J$/),
      '',
    ]);
    const entries = (await json('audit', '--account', account.account_id, '--limit', '3')).entries as Array<Record<string, unknown>>;
    expect(entries.map((e) => e.action)).toEqual(['ingest_url.revoked', 'ingest_url.created', 'ingest_url.created']);

    // Refusals: a plan that may not submit, an unknown account or URL, a missing option.
    const tester = await json('accounts', 'create', '--name', 'Looker', '--plan', 'tester');
    const notAllowed = await tollwatch('--json', 'ingest-urls', 'create', '--account', tester.account_id, '--name', 'n');
    expect(notAllowed.status).toBe(1);
    expect(notAllowed.stdout).toBe('');
    expect(notAllowed.stderr).toMatch(/^tollwatch: the tester plan may not submit events/);
    for (const args of [
      ['ingest-urls', 'revoke', '00000000-0000-0000-0000-000000000000'],
      ['ingest-urls', 'list', '--account', 'nobody'],
    ]) {
      const run = await tollwatch('--json', ...args);
      expect(run.status, args.join(' ')).toBe(1);
      expect(run.stderr).toMatch(/^tollwatch: no such /);
    }
    expect((await tollwatch('ingest-urls', 'create', '--account', account.account_id)).status).toBe(2);
  });

  it('enforces the plan’s client limit', async () => {
    const account = await json('accounts', 'create', '--name', 'Tiny', '--plan', 'tester');
    await json('clients', 'create', '--account', account.account_id, '--name', 'first');
    const second = await tollwatch('--json', 'clients', 'create', '--account', account.account_id, '--name', 'second');
    expect(second.status).toBe(1);
    expect(second.stdout).toBe('');
    expect(second.stderr).toMatch(/^tollwatch: .*at most 1 client/);
  });

  it('reports errors on standard error with a non-zero status, never a stack trace', async () => {
    for (const args of [
      ['accounts', 'create', '--name', 'X', '--plan', 'platinum'],
      ['accounts', 'set-plan', '00000000-0000-0000-0000-000000000000', 'tester'],
      ['clients', 'reset-secret', 'twc_nobody'],
      ['clients', 'delete', 'twc_nobody'],
      ['clients', 'create', '--account', 'nobody', '--name', 'x'],
      ['clients', 'create', '--account', 'nobody', '--name', 'x', '--permissions', 'root'],
    ]) {
      const run = await tollwatch('--json', ...args);
      expect(run.status, args.join(' ')).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/^tollwatch: /);
      expect(run.stderr).not.toMatch(/\n\s+at /);
    }
    const usage = await tollwatch('accounts', 'create');
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain('--name');
    expect((await tollwatch('nonsense')).status).toBe(2);
  });

  it('lists and edits plans, refusing nonsense', async () => {
    const plans = (await json('plans', 'list')).plans as Array<{ name: string }>;
    expect(plans.map((p) => p.name)).toEqual(expect.arrayContaining(['tester', 'contributor', 'business', 'service_provider', 'call_guard']));
    // A call guard's: two lookups a call at 500 calls a second (docs/call-guard.md).
    expect(plans.find((p) => p.name === 'call_guard')).toEqual(planJson(DEFAULT_PLANS.find((p) => p.name === 'call_guard')!));
    expect(plans.find((p) => p.name === 'call_guard')).toMatchObject({ may_submit: false, lookups: { limit: 1000, window_seconds: 1 } });
    expect(
      await json('plans', 'set', 'gold', '--may-submit', 'yes', '--lookups', '100/minute', '--submissions', '1000/hour', '--max-clients', 'unlimited', '--event-reads', '20/minute'),
    ).toEqual({
      name: 'gold',
      may_submit: true,
      lookups: { limit: 100, window_seconds: 60 },
      submissions: { limit: 1000, window_seconds: 3600 },
      max_clients: null,
      event_reads: { limit: 20, window_seconds: 60 },
    });
    expect(await json('plans', 'set', 'tester', '--lookups', '10/hour')).toMatchObject({ name: 'tester', lookups: { limit: 10, window_seconds: 3600 }, max_clients: 1 });
    const account = await json('accounts', 'create', '--name', 'Gold', '--plan', 'gold');
    expect(account.plan).toBe('gold');
    for (const args of [
      ['plans', 'set', 'gold', '--lookups', '10/fortnight'],
      ['plans', 'set', 'gold', '--lookups', '0/hour'],
      ['plans', 'set', 'silver', '--may-submit', 'yes'],
      ['plans', 'set', 'Bad Name'],
    ]) {
      const run = await tollwatch('--json', ...args);
      expect(run.status, args.join(' ')).toBe(1);
      expect(run.stderr).toMatch(/^tollwatch: /);
    }
  });

  it('shows the audit trail, newest first, filtered by account', async () => {
    const account = await json('accounts', 'create', '--name', 'Audited', '--plan', 'contributor');
    const client = await json('clients', 'create', '--account', account.account_id, '--name', 'n');
    await json('clients', 'reset-secret', client.client_id);
    const entries = (await json('audit', '--account', account.account_id)).entries as Array<Record<string, unknown>>;
    expect(entries.map((e) => e.action)).toEqual(['client.secret_reset', 'client.created', 'account.created']);
    expect(entries[0]).toMatchObject({ actor: 'operator', client_id: client.client_id, account_id: account.account_id });
  });

  it('lists the audit trail newest first, by account and limit, in text and JSON alike', async () => {
    const account = await json('accounts', 'create', '--name', 'Limited', '--plan', 'contributor');
    const client = await json('clients', 'create', '--account', account.account_id, '--name', 'n');
    await json('accounts', 'set-trusted', account.account_id, 'yes');
    const two = (await json('audit', '--account', account.account_id, '--limit', '2')).entries as Array<Record<string, unknown>>;
    expect(two.map((e) => e.action)).toEqual(['account.trust_changed', 'client.created']);
    // A number on every store (PostgreSQL's bigserial would otherwise arrive as a string).
    expect(two[0]).toEqual({
      id: expect.any(Number),
      at: expect.any(String),
      action: 'account.trust_changed',
      actor: 'operator',
      account_id: account.account_id,
      client_id: null,
      ip: null,
      detail: { trusted: true },
    });
    const text = await tollwatch('audit', '--account', account.account_id, '--limit', '2');
    expect(text.status).toBe(0);
    expect(text.stdout.split('\n')).toEqual([
      `${two[0]!.at}  account.trust_changed  operator  ${account.account_id}  `,
      `${two[1]!.at}  client.created         operator  ${account.account_id} ${client.client_id} `,
      '',
    ]);
    expect((await json('audit', '--limit', '1')).entries).toHaveLength(1);
    // The count parser refuses what it cannot hold exactly, rather than let the store choke on it.
    const huge = await tollwatch('audit', '--limit', '99999999999999999999');
    expect(huge.status).toBe(1);
    expect(huge.stderr).toBe('tollwatch: "99999999999999999999" is not a whole number\n');
  });

  it('audits plan changes with the operator as actor, and starts a new plan from the tester plan', async () => {
    const saved = await json('plans', 'set', 'starter', '--lookups', '7/minute');
    expect(saved).toEqual(planJson({ ...TESTER_PLAN, name: 'starter', lookups: { limit: 7, windowSeconds: 60 } }));
    const [entry] = (await json('audit', '--limit', '1')).entries as Array<Record<string, unknown>>;
    expect(entry).toMatchObject({ action: 'plan.saved', actor: 'operator', account_id: null, client_id: null, ip: null, detail: { plan: saved } });

    const changed = await json('plans', 'set', 'starter', '--submissions', '5/hour', '--may-submit', 'yes');
    expect(changed).toEqual({ ...saved, may_submit: true, submissions: { limit: 5, window_seconds: 3600 } });
    expect(((await json('audit', '--limit', '1')).entries as Array<Record<string, unknown>>)[0]).toMatchObject({ action: 'plan.saved', detail: { plan: changed } });

    // Refused changes leave no audit row.
    const before = await json('audit', '--limit', '5');
    expect((await tollwatch('plans', 'set', 'starter', '--submissions', 'none')).status).toBe(1);
    expect(await json('audit', '--limit', '5')).toEqual(before);
  });

  it('shows stored control characters as visible escapes, in text and in JSON', async () => {
    const hostile = 'twc_\u001b]0;pwned\u0007\u001b[2J\u009b31m\u007f';
    const h = await startHarness({ DATABASE_URL });
    try {
      const res = await fetch(`${h.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: hostile, client_secret: 'nope', audience: h.config.audiences[0], grant_type: 'client_credentials' }),
      });
      expect(res.status).toBe(401);
      // The token endpoint writes its audit row without waiting for it.
      await expect.poll(async () => (await h.services.audit.list({ limit: 1 }))[0]?.client_id).toBe(hostile);
    } finally {
      await h.close();
    }
    const audit = await tollwatch('audit', '--limit', '1');
    const listed = await tollwatch('--json', 'audit', '--limit', '1');
    // Names refuse C0 but take DEL and C1, so list commands meet them too.
    const account = await json('accounts', 'create', '--name', 'Evil\u009b2J\u007f');
    await json('clients', 'create', '--account', account.account_id, '--name', 'pbx\u0085');
    const accounts = await tollwatch('accounts', 'list');
    const clients = await tollwatch('clients', 'list', '--account', account.account_id);

    for (const run of [audit, accounts, clients]) {
      expect(run.status).toBe(0);
      expect(run.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    }
    expect(audit.stdout).toContain(' twc_\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\x7f ');
    expect(accounts.stdout).toContain('Evil\\x9b2J\\x7f');
    expect(clients.stdout).toContain('pbx\\x85');

    // JSON.stringify escapes C0 only; DEL and C1 are escaped too, and parse back the same.
    expect(listed.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(listed.stdout).toContain('twc_\\u001b]0;pwned\\u0007\\u001b[2J\\u009b31m\\u007f');
    expect(JSON.parse(listed.stdout).entries[0]).toMatchObject({ action: 'token.refused', actor: 'anonymous', client_id: hostile });
  });

  it('lists and rotates the signing keys; a running server signs with the new key from its next reload, and the rotation is audited', async () => {
    const h = await startHarness({ DATABASE_URL }, { keysReloadMs: 200 });
    try {
      const before = (await json('keys', 'list')).keys as Array<Record<string, unknown>>;
      const first = before[0];
      expect(before).toEqual([{ kid: expect.any(String), created_at: expect.any(String), current: true, retires_at: null }]);
      const started = Date.now();
      const rotation = await json('keys', 'rotate');
      expect(rotation).toEqual({ kid: expect.any(String), previous: { kid: first!.kid, retires_at: expect.any(String) }, removed: [] });
      const retires = Date.parse(rotation.previous.retires_at);
      expect(retires - started).toBeGreaterThanOrEqual((31 * 86_400 + 120) * 1000 - 60_000);
      expect(retires - Date.now()).toBeLessThanOrEqual((31 * 86_400 + 120) * 1000);
      const after = (await json('keys', 'list')).keys as Array<Record<string, unknown>>;
      expect(after).toEqual([
        { kid: first!.kid, created_at: first!.created_at, current: false, retires_at: rotation.previous.retires_at },
        { kid: rotation.kid, created_at: expect.any(String), current: true, retires_at: null },
      ]);
      const text = await tollwatch('keys', 'list');
      expect(text.stdout).toBe(`${first!.kid}  created ${first!.created_at}  retires ${rotation.previous.retires_at}\n${rotation.kid}  created ${after[1]!.created_at}  current\n`);
      expect(((await json('audit', '--limit', '1')).entries as Array<Record<string, unknown>>)[0]).toMatchObject({
        action: 'key.rotated',
        actor: 'operator',
        detail: { kid: rotation.kid, previous_kid: first!.kid, previous_retires_at: rotation.previous.retires_at },
      });

      // The server reads its keys again every 200 ms here: the next token after that is signed anew.
      const who = await h.account();
      const kidOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).kid as string;
      expect(await eventually('a token signed with the new key', async () => kidOf(await who.token()), (kid) => kid === rotation.kid)).toBe(rotation.kid);
      const jwks = (await (await fetch(`${h.url}/.well-known/jwks.json`)).json()) as { keys: Array<{ kid: string }> };
      expect(jwks.keys.map((k) => k.kid).sort()).toEqual([first!.kid, rotation.kid].sort());
    } finally {
      await h.app.close();
      await h.services.close();
    }
  });

  it('rebuilds the lookup aggregates', async () => {
    expect(await json('aggregates', 'rebuild')).toEqual({ rebuilt: true, seconds: expect.any(Number) });
    expect((await tollwatch('aggregates', 'rebuild')).stdout).toMatch(/^aggregates rebuilt in \d+\.\d s\n$/);
  });

  it('prints the OpenAPI document the server serves, without a running server', async () => {
    const printed = await json('openapi');
    const h = await startHarness({ DATABASE_URL, TOLLWATCH_PUBLIC_URL: 'http://localhost:8080', TOLLWATCH_AUDIENCE: 'http://localhost:8080/api' });
    try {
      const served = await (await fetch(`${h.url}/api/openapi.json`)).json();
      expect(printed).toEqual(served);
      expect(printed).toMatchObject({ openapi: '3.1.0', info: { title: 'Tollwatch API' }, servers: [{ url: 'http://localhost:8080' }] });
    } finally {
      await h.app.close();
      await h.services.close();
    }
  });
});

/**
 * The runs above call `runCli` in this process. These spawn the real executable, as an operator
 * runs it, for what only a process of its own shows: the status it exits with, standard output
 * holding the command's one JSON object and nothing a module prints while loading, standard
 * error empty on success, and no stack trace on failure.
 */
describe('the tollwatch executable, spawned', () => {
  it('exits 0 with one JSON object on standard output and nothing on standard error', () => {
    const run = spawned('--json', 'accounts', 'create', '--name', 'Spawned', '--plan', 'contributor', '--trusted');
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(run.stdout)).toEqual({ account_id: expect.stringMatching(/^[0-9a-f-]{36}$/), name: 'Spawned', plan: 'contributor', trusted: true });
  });

  it('exits 1 on an operator error, with one line on standard error and no stack trace', () => {
    const run = spawned('--json', 'accounts', 'set-plan', '00000000-0000-0000-0000-000000000000', 'tester');
    expect(run.status).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^tollwatch: [^\n]*\n$/);
  });

  it('exits 2 on a usage error', () => {
    const usage = spawned('accounts', 'create');
    expect(usage.status).toBe(2);
    expect(usage.stdout).toBe('');
    expect(usage.stderr).toContain('--name');
  });

  it('prints only its own output through npx, whatever Node the machine runs npm on', () => {
    // As a user runs it: npm from the machine's PATH (not this project's Node 24 first).
    const root = new URL('../..', import.meta.url).pathname;
    const PATH = (process.env.PATH ?? '').split(':').filter((dir) => !dir.includes('node_modules')).join(':');
    const run = spawnSync('npx', ['tollwatch', '--json', 'plans', 'list'], { cwd: root, env: { ...STARTED_ENV, PATH, DATABASE_URL }, encoding: 'utf8', timeout: 60_000 });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ plans: expect.any(Array) });
  });

  it('reports an unusable DATABASE_URL cleanly', () => {
    const run = spawnSync(process.execPath, [BIN, 'accounts', 'list'], {
      env: { ...STARTED_ENV, DATABASE_URL: 'mysql://nope' },
      encoding: 'utf8',
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/^tollwatch: DATABASE_URL/);
  });
});
