import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.ts';
import { sampleEvent } from '../support/harness.ts';
import { cli, startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { mountSmallDisk, smallDiskUnavailable, type SmallDisk } from '../support/small-disk.ts';
import { startPrivateCluster } from '../support/private-postgres.ts';
import { POSTGRES_ADMIN_URL, TEST_STORE } from '../support/test-database.ts';

const MiB = 1024 * 1024;
const unavailable = smallDiskUnavailable();
if (unavailable && process.env.TOLLWATCH_REQUIRE_DISK_FAULTS === '1') throw new Error(`${unavailable}; TOLLWATCH_REQUIRE_DISK_FAULTS=1 makes that a failure`);

/**
 * The store on the small disk: the SQLite file and its WAL, or a PostgreSQL database in a
 * tablespace there, in a cluster of its own (test/support/private-postgres.ts says why).
 */
async function storeOn(disk: SmallDisk): Promise<{ url: string; drop(): Promise<void> }> {
  if (TEST_STORE === 'sqlite') return { url: `sqlite:${join(disk.dir, 'store.db')}`, drop: async () => {} };
  const cluster = await startPrivateCluster();
  const client = new pg.Client({ connectionString: cluster.adminUrl });
  await client.connect();
  try {
    await client.query(`create tablespace small_disk location '${disk.dir}'`);
    await client.query('create database tollwatch tablespace small_disk');
  } finally {
    await client.end();
  }
  const url = new URL(cluster.adminUrl);
  url.pathname = '/tollwatch';
  return { url: url.toString(), drop: async () => cluster.remove() };
}

/**
 * A disk that fills up (docs/guarantees.md §5): intake answers 503 with Retry-After and
 * acknowledges nothing it did not store, lookups keep answering, and once there is room again
 * the service resumes by itself with every acknowledged event there. Before, SQLite ended the
 * transaction itself on SQLITE_FULL and the rollback that followed failed, so every request
 * answered 500 ("cannot rollback - no transaction is active").
 */
describe.skipIf(unavailable)('a disk that fills up', () => {
  let disk: SmallDisk;
  let store: { url: string; drop(): Promise<void> };
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    disk = mountSmallDisk(64 * MiB, TEST_STORE === 'postgres' ? { owner: 'postgres' } : {});
    store = await storeOn(disk);
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    await store?.drop();
    disk?.remove();
  });

  it('answers 503 while full, acknowledges only what it stored, keeps looking up, and resumes by itself', async () => {
    cli(store.url, 'plans', 'set', 'disk_test', '--may-submit', 'yes', '--lookups', '100/second', '--submissions', '1000000/hour', '--event-reads', '1000000/hour');
    const account = cli(store.url, 'accounts', 'create', '--name', 'disk', '--plan', 'disk_test');
    const client = cli(store.url, 'clients', 'create', '--account', account.account_id, '--name', 'node');
    server = await startServerProcess({ DATABASE_URL: store.url });
    const { url } = server;
    const token = ((await (await fetch(`${url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: client.client_id, client_secret: client.client_secret, audience: `${url}/api`, grant_type: 'client_credentials' }),
    })).json()) as { access_token: string }).access_token;
    const api = (path: string, init: RequestInit = {}) => fetch(`${url}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers } });

    // One event folded in before the disk fills: what a lookup must still answer while it is full
    // (the fold is refused then too, so without it the number would be unknown, and 404).
    const first = sampleEvent();
    expect((await api('/api/events', { method: 'POST', body: JSON.stringify(first) })).status).toBe(201);
    const counted = async () => ((await (await api('/api/phone-numbers/0046812118532')).json()) as { seen_count?: number }).seen_count;
    await eventually('the first event to be counted', counted, (n) => n === 1);
    const acknowledged: string[] = [first.event_uuid as string];

    // About 3 MiB of room: some 50 events of 60 KB each, then none.
    disk.resize(disk.used() + 3 * MiB);
    const statuses = new Map<number, number>();
    let refusedInARow = 0;
    for (let i = 0; i < 600 && refusedInARow < 20; i++) {
      // Random, so that PostgreSQL's compression of long values cannot shrink it.
      const event = sampleEvent({ sip_message: `OPTIONS sip:100@192.0.2.1 SIP/2.0\r\nX-Pad: ${randomBytes(45_000).toString('base64')}\r\n\r\n` });
      const res = await api('/api/events', { method: 'POST', body: JSON.stringify(event) });
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status === 201) {
        acknowledged.push(event.event_uuid as string);
        refusedInARow = 0;
        await res.arrayBuffer();
        continue;
      }
      expect(res.status, await res.clone().text()).toBe(503);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await res.json()).toMatchObject({ error: 'unavailable', status: 503 });
      refusedInARow += 1;
    }
    expect(acknowledged.length).toBeGreaterThan(1);
    expect(statuses.get(503)).toBeGreaterThanOrEqual(20);
    expect([...statuses.keys()].sort()).toEqual([201, 503]);

    // Full, it still answers lookups and reads.
    const lookup = await api('/api/phone-numbers/0046812118532');
    expect(lookup.status).toBe(200);
    expect(((await lookup.json()) as { seen_count: number }).seen_count).toBeGreaterThanOrEqual(1);
    expect((await api(`/api/events/${acknowledged[0]}`)).status).toBe(200);
    // The full disk stays this test's own: the server other test files share still checkpoints,
    // as their CREATE and DROP DATABASE need it to.
    if (TEST_STORE === 'postgres') {
      const shared = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
      await shared.connect();
      await shared.query('checkpoint').finally(() => shared.end());
    }

    // Room again: intake resumes with no restart, and everything acknowledged is there.
    disk.resize(256 * MiB);
    const resumed = sampleEvent();
    await eventually('intake to resume', async () => (await api('/api/events', { method: 'POST', body: JSON.stringify(resumed) })).status, (s) => s === 201 || s === 200);
    acknowledged.push(resumed.event_uuid as string);
    for (const uuid of acknowledged) {
      const res = await api(`/api/events/${uuid}`);
      expect(res.status, uuid).toBe(200);
      await res.arrayBuffer();
    }
    // The fold, refused meanwhile too, catches up: the number counts every acknowledged event.
    await eventually('the fold to catch up', counted, (n) => n === acknowledged.length);
  });

  it.skipIf(TEST_STORE !== 'sqlite')('refuses a backup onto a full disk, leaving no partial file and the store as it was', async () => {
    disk.resize(256 * MiB); // room for the good backup, whatever the test before left
    const small = mountSmallDisk(256 * 1024);
    try {
      const target = join(small.dir, 'backup.db');
      const run = spawnSync(process.execPath, [new URL('../../bin/tollwatch.js', import.meta.url).pathname, 'backup', target], {
        env: { ...process.env, DATABASE_URL: store.url, LOG_LEVEL: 'silent' },
        encoding: 'utf8',
      });
      expect(run.status).not.toBe(0);
      expect(run.stderr).toMatch(/full|space/i);
      expect(existsSync(target)).toBe(false);
      expect(existsSync(`${target}-journal`)).toBe(false);
      // The store is untouched: a backup onto room enough is whole.
      const roomy = join(disk.dir, 'backup.db');
      const again = spawnSync(process.execPath, [new URL('../../bin/tollwatch.js', import.meta.url).pathname, '--json', 'backup', roomy], {
        env: { ...process.env, DATABASE_URL: store.url, LOG_LEVEL: 'silent' },
        encoding: 'utf8',
      });
      expect(again.status, again.stderr).toBe(0);
    } finally {
      small.remove();
    }
  });
});
