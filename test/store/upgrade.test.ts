import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { freshDatabase, TEST_STORE, type TestDatabase } from '../support/test-database.ts';

type Client = { client_id: string; client_secret: string; account_id: string; permissions: string[] };
type Account = { account_id: string; name: string; plan: string; trusted: boolean };

/** What the earlier release's store held, recorded when the fixture was made (its README says how). */
interface Expected {
  commit: string;
  accounts: Record<'fleet' | 'other' | 'viewer' | 'disabled', Account>;
  clients: { fleetNode: Client; otherNode: Client; viewerClient: Client; reset: Client & { new_secret: string }; deleted: Client };
  events: Record<string, string[]>;
  lookups: Record<string, { status: number; body: Record<string, unknown> }>;
  kids: string[];
}

const FIXTURES = new URL('../fixtures/upgrade/', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(join(FIXTURES, `${TEST_STORE}.expected.json`), 'utf8')) as Expected;
const LOG = new Map(
  readFileSync(new URL('../fixtures/sentrypeer_json.log', import.meta.url), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, string>)
    .map((event) => [event.event_uuid!, event]),
);

/** The fixture's store, restored where this test may change it: a copy of the file, or a new database loaded from the dump. */
async function restoredStore(): Promise<TestDatabase> {
  if (TEST_STORE === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'tollwatch-upgrade-'));
    copyFileSync(join(FIXTURES, 'sqlite-store.db'), join(dir, 'store.db'));
    return { url: `sqlite:${join(dir, 'store.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const database = await freshDatabase();
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    await client.query(readFileSync(join(FIXTURES, 'postgres-store.sql'), 'utf8'));
  } finally {
    await client.end();
  }
  return database;
}

/**
 * A store written by an earlier release (commit 0a04a6b, migrations 001 to 004 of today's 013)
 * opens under today's code with everything in it intact: accounts and plans, clients and their
 * secrets (as hashes: the recorded secrets still work, the replaced and deleted ones do not),
 * signing keys (now sealed at rest), every event field for field, and the lookups answered then.
 */
describe(`upgrading a store made by an earlier release (${expected.commit.slice(0, 7)})`, () => {
  let store: TestDatabase;
  let server: ServerProcess;

  beforeAll(async () => {
    store = await restoredStore();
    // Today's server migrates the store as it starts, as an operator's upgrade would.
    server = await startServerProcess({ DATABASE_URL: store.url });
  });
  afterAll(async () => {
    await server?.stop();
    await store?.drop();
  });

  async function tokenFor(client: { client_id: string; client_secret: string }): Promise<{ status: number; token?: string }> {
    const res = await fetch(`${server.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: client.client_id, client_secret: client.client_secret, audience: `${server.url}/api`, grant_type: 'client_credentials' }),
    });
    const body = (await res.json()) as { access_token?: string };
    return { status: res.status, token: body.access_token };
  }

  it('keeps every client secret that worked, and none that did not', async () => {
    const { fleetNode, otherNode, viewerClient, reset, deleted } = expected.clients;
    for (const client of [fleetNode, otherNode, viewerClient, { client_id: reset.client_id, client_secret: reset.new_secret }]) {
      expect((await tokenFor(client)).status, client.client_id).toBe(200);
    }
    expect((await tokenFor(reset)).status).toBe(401);
    expect((await tokenFor(deleted)).status).toBe(401);
  });

  it('keeps the signing keys: every key the earlier release published is still published', async () => {
    const jwks = (await (await fetch(`${server.url}/.well-known/jwks.json`)).json()) as { keys: Array<{ kid: string }> };
    expect(jwks.keys.map((k) => k.kid)).toEqual(expect.arrayContaining(expected.kids));
  });

  it('keeps every event, field for field, with its owner', async () => {
    for (const node of [expected.clients.fleetNode, expected.clients.otherNode]) {
      const { token } = await tokenFor(node);
      const page = (await (await fetch(`${server.url}/api/events?limit=1000`, { headers: { authorization: `Bearer ${token}` } })).json()) as { data: Array<Record<string, string>> };
      expect(page.data.map((e) => e.event_uuid).sort()).toEqual([...expected.events[node.account_id]!].sort());
      for (const event of page.data) expect(event).toMatchObject(LOG.get(event.event_uuid!)!);
    }
  });

  it('answers the lookups the earlier release answered, with the same counts', async () => {
    const { token } = await tokenFor(expected.clients.viewerClient);
    for (const [number, then] of Object.entries(expected.lookups)) {
      const res = await fetch(`${server.url}/api/phone-numbers/${encodeURIComponent(number)}`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status, number).toBe(then.status);
      const { message: _said, ...counted } = then.body;
      expect(await res.json(), number).toMatchObject(counted);
    }
  });

  it('keeps accounts and plans as they were', async () => {
    const { accounts } = cli(store.url, 'accounts', 'list') as { accounts: Array<Account & { disabled: boolean }> };
    for (const [role, account] of Object.entries(expected.accounts)) {
      expect(accounts.find((a) => a.account_id === account.account_id), role).toMatchObject({ ...account, disabled: role === 'disabled' });
    }
    const { plans } = cli(store.url, 'plans', 'list') as { plans: Array<Record<string, unknown>> };
    expect(plans.find((p) => p.name === 'upgrade_plan')).toMatchObject({
      may_submit: true,
      lookups: { limit: 120, window_seconds: 60 },
      submissions: { limit: 5000, window_seconds: 3600 },
      max_clients: 7,
    });
  });
});
