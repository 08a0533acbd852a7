import { execFileSync } from 'node:child_process';
import { get, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.ts';
import { postEvent, sampleEvent, startHarness, type Harness } from '../support/harness.ts';
import { cli, contributorToken, startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { freshDatabase, type TestDatabase } from '../support/test-database.ts';
import { eventually } from '../support/eventually.ts';

function statusOnNewConnection(url: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false, headers: { authorization: `Bearer ${token}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    }).on('error', reject);
  });
}

describe('WORKERS=2: two processes on one port', () => {
  let database: TestDatabase;
  let server: ServerProcess;

  beforeAll(async () => {
    database = await freshDatabase();
    server = await startServerProcess({ DATABASE_URL: database.url, WORKERS: '2' });
  });
  afterAll(async () => {
    await server?.stop();
    await database?.drop();
  });

  it('serves, and counts a rate limit across both workers (the primary keeps the counters)', async () => {
    const account = cli(database.url, 'accounts', 'create', '--name', 'w', '--plan', 'tester');
    const client = cli(database.url, 'clients', 'create', '--account', account.account_id, '--name', 'n');
    const res = await fetch(`${server.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: client.client_id, client_secret: client.client_secret, audience: `${server.url}/api`, grant_type: 'client_credentials' }),
    });
    const token = ((await res.json()) as { access_token: string }).access_token;
    const statuses: number[] = [];
    // A fresh connection per request: the cluster's primary deals connections to its workers in
    // turn, so the requests alternate, and per-worker counters would allow all eight.
    for (let i = 0; i < 8; i++) statuses.push(await statusOnNewConnection(`${server.url}/api/phone-numbers/100`, token));
    expect(statuses).toEqual([404, 404, 404, 404, 404, 429, 429, 429]);
  });

  it('answers failed authentication under load with 401 or 429 only, never a 5xx (no Redis)', async () => {
    // 600 failures at once, 64 at a time, all counted by the primary: its answers queue behind
    // one another, and a count it is late with must cost a looser limit, not a failed request.
    const statuses = new Map<number, number>();
    const one = async () => {
      const status = await statusOnNewConnection(`${server.url}/api/phone-numbers/100`, 'forged.token.value');
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    };
    for (let round = 0; round < 600 / 64; round++) await Promise.all(Array.from({ length: 64 }, one));
    expect([...statuses.keys()].every((status) => status === 401 || status === 429), JSON.stringify([...statuses])).toBe(true);
    expect(statuses.get(429)).toBeGreaterThan(0);
  });

  it('keeps one sign-in lock for both workers (no Redis): guesses count on either, the right password is refused on both', async () => {
    const account = cli(database.url, 'accounts', 'create', '--name', 'w', '--plan', 'contributor');
    const invited = cli(database.url, 'users', 'invite', '--account', account.account_id, '--email', 'guessed@example.test');
    const password = 'the right password, at last';
    expect(await postFormOnNewConnections(server.url, new URL(invited.link).pathname, { password, confirm: password })).toBe(303);
    // Ten wrong guesses (the default bound per email in 15 minutes), dealt to both workers.
    for (let i = 0; i < 10; i++) expect(await postFormOnNewConnections(server.url, '/sign-in', { email: 'guessed@example.test', password: `guess ${i}` })).toBe(401);
    for (let i = 0; i < 2; i++) expect(await postFormOnNewConnections(server.url, '/sign-in', { email: 'guessed@example.test', password })).toBe(429);
  });
});

/**
 * A dashboard form sent as a browser would, but each request on a connection of its own, so the
 * cluster's primary deals them to its workers in turn: GET the page for its form cookie and CSRF
 * token, then POST the fields. Answers the POST's status.
 */
async function postFormOnNewConnections(base: string, path: string, fields: Record<string, string>): Promise<number> {
  const page = await new Promise<{ cookie: string; csrf: string }>((resolve, reject) => {
    get(`${base}${path}`, { agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (s: string) => (body += s));
      res.on('end', () => resolve({ cookie: (res.headers['set-cookie'] ?? []).map((c) => c.split(';')[0]).join('; '), csrf: /name="_csrf" value="([^"]+)"/.exec(body)?.[1] ?? '' }));
    }).on('error', reject);
  });
  const body = new URLSearchParams({ ...fields, _csrf: page.csrf }).toString();
  return new Promise((resolve, reject) => {
    const post = request(`${base}${path}`, { method: 'POST', agent: false, headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: page.cookie } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    post.on('error', reject);
    post.end(body);
  });
}

describe('WORKERS=2 with a retention: maintenance survives the death of its worker', () => {
  let database: TestDatabase;
  let server: ServerProcess;

  beforeAll(async () => {
    database = await freshDatabase();
    server = await startServerProcess({ DATABASE_URL: database.url, WORKERS: '2', TOLLWATCH_RETENTION_DAYS: '1' });
  });
  afterAll(async () => {
    await server?.stop();
    await database?.drop();
  });

  it('hands maintenance to a live worker, which applies the retention at once', async () => {
    const token = await contributorToken(server, database.url);
    const api = (path: string, init: RequestInit = {}) => fetch(`${server.url}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } });
    // Older than the retention, but acknowledged: the pass at start-up ran before it existed.
    const old = sampleEvent({ event_timestamp: '2020-01-01 00:00:00' });
    expect((await api('/api/events', { method: 'POST', body: JSON.stringify(old) })).status).toBe(201);
    expect((await api(`/api/events/${old.event_uuid}`)).status).toBe(200);

    // Every worker dies at once; their replacements have new ids.
    const workers = execFileSync('pgrep', ['-P', String(server.child.pid)], { encoding: 'utf8' }).trim().split('\n').map(Number);
    expect(workers).toHaveLength(2);
    for (const pid of workers) process.kill(pid, 'SIGKILL');

    // Replacement workers start, one is appointed, and its first pass removes the old event.
    // (Until they listen, connections are refused.)
    // On a loaded machine two Node processes starting side by side take many seconds.
    const status = await eventually('the old event removed by a replacement worker (0: refused)', () => api(`/api/events/${old.event_uuid}`).then((res) => res.status, () => 0), (s) => s === 404, { timeoutMs: 100_000, everyMs: 200 });
    expect(status).toBe(404);
    // The primary lived through it: it still serves the port (its death would refuse all).
    expect(server.child.exitCode).toBeNull();
  }, 120_000);
});

describe('DATABASE_READ_URL: lookups read the replica', () => {
  let h: Harness;
  let replica: TestDatabase;

  beforeAll(async () => {
    // A stand-in replica that never receives the primary's writes: where lookups read shows.
    replica = await freshDatabase();
    await (await openDatabase(replica.url)).close();
    h = await startHarness({ DATABASE_READ_URL: replica.url });
  });
  afterAll(async () => {
    await h?.close();
    await replica?.drop();
  });

  it('sends lookups to the read URL and everything else to the primary', async () => {
    const fleet = await h.account({ trusted: true });
    const other = await h.account();
    const event = sampleEvent({ called_number: '+390662279016' });
    expect((await postEvent(fleet, event)).status).toBe(201);
    expect((await fleet.api(`/api/events/${event.event_uuid}`)).status).toBe(200);
    await h.settled();
    // The shared data set holds it on the primary; another account's lookup reads the stand-in.
    // (The submitter's own lookups read the primary until a replica has replayed the fold: a real
    // replica's test, test/durability/replica-reads.test.ts.)
    expect((await other.api('/api/phone-numbers/%2B390662279016')).status).toBe(404);
  });
});
