import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAILURE_ACTIONS } from '../../src/domain/accounts/audit.ts';
import { SHARED_SCOPE } from '../../src/domain/visibility.ts';
import { ACCOUNT_ERASURE, SqlAccountErasure, tableOfCatalogName, TABLES_WITHOUT_ACCOUNT_DATA } from '../../src/store/repositories/account-erasure.ts';
import { alertsSettled, catalog, fillAccount, postEvents, rowsMentioning, type FilledAccount } from '../support/account-data.ts';
import { FAST_ALERTS } from '../support/alert-receiver.ts';
import { startHarness, type Harness } from '../support/harness.ts';
import { cliEnvironment, runCliHere } from '../support/in-process-cli.ts';
import { eventually } from '../support/eventually.ts';
import { freshDatabase, type TestDatabase } from '../support/test-database.ts';
import { WebClient } from '../dashboard/web-client.ts';

const tollwatch = (...args: string[]) => runCliHere(['--json', ...args]);

/** Every table's rows naming any of `values`, by table. */
async function mentions(h: Harness, values: string[]): Promise<Record<string, string[]>> {
  const found: Record<string, string[]> = {};
  for (const [table, columns] of await catalog(h.services.database.db)) {
    const rows = await rowsMentioning(h.services.database.db, table, columns, values);
    if (rows.length > 0) found[table] = rows;
  }
  return found;
}

/** The shared data set's rows of every aggregate table, as JSON lines. */
async function sharedRows(h: Harness): Promise<Record<string, string[]>> {
  const shared: Record<string, string[]> = {};
  for (const erasure of ACCOUNT_ERASURE.filter((e) => e.aggregates)) {
    const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(erasure.table)} where scope = ${SHARED_SCOPE}`.execute(h.services.database.db);
    shared[erasure.table] = rows.map((row) => JSON.stringify(row)).sort();
  }
  return shared;
}

/** Closing an account (docs/guarantees.md, "Leaving"): refused at once, then every row of it gone, and nothing else touched. */
describe('closing an account', () => {
  let database: TestDatabase;
  let h: Harness;
  let leaving: FilledAccount;
  let staying: FilledAccount;

  beforeAll(async () => {
    database = await freshDatabase();
    // The CLI runs in this process on the test's store, as the executable would (test/cli/users-commands.test.ts).
    cliEnvironment({ DATABASE_URL: database.url, LOG_LEVEL: 'silent' });
    h = await startHarness({ DATABASE_URL: database.url, TOLLWATCH_ALLOW_PRIVATE_TARGETS: 'on' }, { alerts: FAST_ALERTS });
    // Its own events (its own scope), then, trusted, events into the shared data set.
    leaving = await fillAccount(h, { events: 12, trustedEvents: 6 });
    staying = await fillAccount(h, { events: 8 });
    // Another trusted account's events in the shared data set, to the same numbers.
    const contributor = await h.account({ trusted: true });
    await postEvents(contributor, 6, 'shared');
    await h.settled();
  });
  afterAll(async () => {
    await h?.close();
    await database?.drop();
  });

  it('knows every table of the store: erased for a closing account, or holding no account data', async () => {
    const known = new Set([...ACCOUNT_ERASURE.map((e) => e.table), ...Object.keys(TABLES_WITHOUT_ACCOUNT_DATA)]);
    const unknown = [...(await catalog(h.services.database.db)).keys()].filter((table) => !known.has(tableOfCatalogName(table)));
    // A new table must be listed in src/store/repositories/account-erasure.ts, one way or the other.
    expect(unknown).toEqual([]);
  });

  it('refuses its tokens and sessions at once, erases every row naming it, and touches no other account or the shared data set', async () => {
    const id = leaving.owner.account.account_id;
    const token = await leaving.owner.token();
    expect((await leaving.owner.api('/api/events?limit=1', { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    expect((await leaving.browser.get('/overview')).status).toBe(200);
    // Every table holds the fixture's rows of it before (so the check after is not vacuous).
    const before = await mentions(h, leaving.identifiers);
    for (const table of ['accounts', 'clients', 'users', 'user_sessions', 'user_invitations', 'events', 'audit_log', 'integrations', 'alerts', 'alert_deliveries', 'ingest_urls', 'node_names', 'allowlist_entries', 'value_reports']) {
      expect(before[table]?.length ?? 0, table).toBeGreaterThan(0);
    }
    const ownScope = await sql<{ n: number | string }>`select count(*) as n from number_aggregates where scope = ${id}`.execute(h.services.database.db);
    expect(Number(ownScope.rows[0]!.n)).toBeGreaterThan(0);
    await alertsSettled(h);
    const othersBefore = await mentions(h, staying.identifiers);
    const sharedBefore = await sharedRows(h);
    expect(sharedBefore.number_aggregates!.length).toBeGreaterThan(0);

    // The operator's export first: a new file, whole, never written over.
    const file = join(mkdtempSync(join(tmpdir(), 'tollwatch-export-')), 'account.ndjson');
    const exported = await tollwatch('accounts', 'export', id, '--output', file);
    expect(exported.status, exported.stderr).toBe(0);
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n').map((line) => JSON.parse(line) as { type: string; counts?: Record<string, number> });
    expect(lines.at(-1)).toMatchObject({ type: 'manifest', counts: { account: 1, client: 2, user: 3, event: 18 } });
    for (const secret of leaving.secrets) expect(readFileSync(file, 'utf8').includes(secret)).toBe(false);
    const again = await tollwatch('accounts', 'export', id, '--output', file);
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/^tollwatch: EEXIST/);
    expect(readFileSync(file, 'utf8').split('\n')).toHaveLength(lines.length + 1);
    expect((await h.services.audit.list({ accountId: id, limit: 10 })).filter((e) => e.action === 'account.exported')).toHaveLength(2);

    // A wrong confirmation changes nothing.
    const refused = await tollwatch('accounts', 'close', id, '--confirm', staying.owner.account.account_id);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('--confirm must repeat the account id');
    expect((await leaving.owner.api('/api/events?limit=1', { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);

    const closed = await tollwatch('accounts', 'close', id, '--confirm', id);
    expect(closed.status, closed.stderr).toBe(0);
    const report = JSON.parse(closed.stdout) as { closed: boolean; erased: Record<string, number> };
    expect(report.closed).toBe(true);
    expect(report.erased.events).toBe(18);

    // Nothing names it but the one audit entry of its closing, which names no person.
    const left = await mentions(h, leaving.identifiers);
    const audit = (left.audit_log ?? []).map((line) => JSON.parse(line) as Record<string, unknown>);
    delete left.audit_log;
    expect(left).toEqual({});
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ action: 'account.closed', actor: 'operator', account_id: id, client_id: null, ip: null });
    const detail = JSON.parse(String(audit[0]!.detail)) as { erased: Record<string, number> };
    expect(detail.erased).toMatchObject({ events: 18, clients: 2, users: 3 });
    for (const email of leaving.identifiers.filter((v) => v.includes('@'))) expect(String(audit[0]!.detail)).not.toContain(email);
    expect(String(audit[0]!.detail)).not.toContain(leaving.owner.account.name);
    // The token issued before is refused over HTTP, and so are the credentials; the session is over.
    const after = await fetch(`${h.url}/api/events?limit=1`, { headers: { authorization: `Bearer ${token}` } });
    expect(after.status).toBe(401);
    const grant = await fetch(`${h.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: leaving.owner.clientId, client_secret: leaving.owner.clientSecret, grant_type: 'client_credentials', audience: h.config.audiences[0] }),
    });
    expect(grant.status).toBe(401);
    const page = await leaving.browser.get('/overview');
    expect(page.status).toBe(303);
    expect(page.location).toMatch(/^\/sign-in/);
    expect((await new WebClient(h.url).signIn(leaving.ownerEmail, leaving.ownerPassword)).status).toBe(401);

    // Those refusals are audited as any failed authentication is (under the failure rows' cap
    // and retention): with the client id the caller presented, never more.
    const refusals = ((await mentions(h, leaving.identifiers)).audit_log ?? []).map((line) => JSON.parse(line) as { action: string }).filter((row) => row.action !== 'account.closed');
    expect(refusals.map((row) => row.action).every((action) => (FAILURE_ACTIONS as readonly string[]).includes(action))).toBe(true);

    // Its own scope's aggregates are gone: lookups' own counts go with its events.
    for (const erasure of ACCOUNT_ERASURE.filter((e) => e.aggregates)) {
      const { rows } = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(erasure.table)} where scope = ${id}`.execute(h.services.database.db);
      expect(Number(rows[0]!.n), erasure.table).toBe(0);
    }

    // Another account's every row is as it was; the shared data set too.
    expect(await mentions(h, staying.identifiers)).toEqual(othersBefore);
    expect(await sharedRows(h)).toEqual(sharedBefore);
    expect((await staying.owner.api('/api/events?limit=100')).status).toBe(200);
    expect((await staying.browser.get('/overview')).status).toBe(200);

    // Closing it again: no such account.
    const closedAgain = await tollwatch('accounts', 'close', id, '--confirm', id);
    expect(closedAgain.status).toBe(1);
    expect(closedAgain.stderr).toContain('no such account');
  });

  it('finishes an account left closing by a crash: still refused meanwhile, erased by the next maintenance pass', async () => {
    const half = await fillAccount(h, { events: 7 });
    const id = half.owner.account.account_id;
    const token = await half.owner.token();
    // Finishing is for marked accounts only: an open one loses nothing.
    expect(await h.services.accountClosing.finish(id)).toBeUndefined();
    expect(Object.keys(await mentions(h, half.identifiers))).toEqual(expect.arrayContaining(['accounts', 'events', 'users', 'clients']));
    // What a process that stopped after the mark (sessions ended with it) and one batch leaves behind.
    const store = new SqlAccountErasure(h.services.database.db, h.services.database.caps);
    expect(await store.beginClosing(id, 'owner', new Date().toISOString())).toBe(true);
    expect(await h.services.database.db.selectFrom('user_sessions').select('id_hash').where('user_id', 'in', (eb) => eb.selectFrom('users').select('user_id').where('account_id', '=', id)).execute()).toEqual([]);
    expect(await store.eraseBatch(id)).toEqual({ table: 'user_invitations', rows: 3 });
    // A process that stopped before announcing the mark: the server refuses by its cache bound (1 s) instead of at once.
    await eventually('the token refused', async () => (await fetch(`${h.url}/api/events?limit=1`, { headers: { authorization: `Bearer ${token}` } })).status, (status) => status === 401);
    expect((await half.browser.get('/overview')).status).toBe(303);
    // An operator cannot enable it again.
    const enable = await tollwatch('accounts', 'enable', id);
    expect(enable.status).toBe(1);
    expect(enable.stderr).toContain('no such account');
    expect(await h.services.accountClosing.progress(id)).toMatchObject({ erased: { user_invitations: 3 } });
    // Nor export what is left of it.
    const exported = await tollwatch('accounts', 'export', id, '--output', join(mkdtempSync(join(tmpdir(), 'tollwatch-export-')), 'half.ndjson'));
    expect(exported.status).toBe(1);
    expect(exported.stderr).toContain('no such account');

    // The maintenance pass (run at start, then hourly) finishes it.
    h.services.storeMaintenance.start();
    const closedRow = await eventually(
      'the closing finished',
      async () => (await mentions(h, half.identifiers)).audit_log ?? [],
      (rows) => rows.some((row) => row.includes('account.closed')),
    );
    h.services.storeMaintenance.stop();
    const left = await mentions(h, half.identifiers);
    expect(Object.keys(left)).toEqual(['audit_log']);
    expect(closedRow).toHaveLength(1);
    const entry = JSON.parse(closedRow[0]!) as { actor: string; detail: string };
    expect(entry.actor).toBe('owner');
    expect(JSON.parse(entry.detail)).toMatchObject({ erased: { user_invitations: 3, events: 7, users: 3 } });
    expect(await h.services.accountClosing.finishAll()).toEqual([]);
  });
});
