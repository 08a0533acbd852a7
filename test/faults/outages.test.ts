import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.ts';
import { sampleEvent } from '../support/harness.ts';
import { privateClusterMissing, startPrivateCluster, type PrivateCluster } from '../support/private-postgres.ts';
import { privateRedis, redisServerMissing, redisUnreachable, type PrivateRedis } from '../support/redis.ts';
import { contributorToken, startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { rateLimitOf } from '../support/rate-limit.ts';

/**
 * Stops and starts PostgreSQL and Redis under load: a cluster and a redis-server of this test's
 * own, on free ports, never the machine's (others use those: a test that stopped them cut
 * their connections, and brought Redis back without its persistence). Runs in the outages
 * project, one file at a time, since it loads the machine.
 */
const missing = privateClusterMissing() ?? (redisServerMissing ? 'no redis-server binary to start a private Redis' : undefined);
if (missing) {
  if (process.env.TOLLWATCH_REQUIRE_POSTGRES === '1') throw new Error(`outage tests cannot run: ${missing}`);
  console.warn(`*** outage tests SKIPPED: ${missing} ***`);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(missing !== undefined)('store and Redis outages under load, two instances', () => {
  let cluster: PrivateCluster;
  let redis: PrivateRedis;
  let databaseUrl: string;
  let server: ServerProcess;
  let second: ServerProcess;
  let token: string;

  const postgres = (action: 'stop' | 'start') => (action === 'stop' ? cluster.stop() : cluster.start());

  beforeAll(async () => {
    // Two instances' pools, their LISTEN connections, the CLI and this test's own client.
    cluster = await startPrivateCluster({ maxConnections: 100 });
    redis = await privateRedis();
    databaseUrl = cluster.adminUrl;
    // One public address for both, as behind a load balancer: a token's audience is good on either.
    server = await startServerProcess({ DATABASE_URL: databaseUrl, REDIS_URL: redis.url, TOLLWATCH_PUBLIC_URL: 'http://tollwatch.test' });
    second = await startServerProcess({ DATABASE_URL: databaseUrl, REDIS_URL: redis.url, TOLLWATCH_PUBLIC_URL: 'http://tollwatch.test' });
    token = await contributorToken(server, databaseUrl, 'http://tollwatch.test');
  });
  afterAll(async () => {
    await server?.stop();
    await second?.stop();
    await redis?.stop();
    cluster?.remove();
  });

  it('loses no acknowledged event across a PostgreSQL stop and start, answers 503 meanwhile, and recovers within 5 s', async () => {
    const acknowledged = new Set<string>();
    const statuses = new Map<number, number>();
    // Acknowledgements by instance: the load must land on both.
    const perInstance = [0, 0];
    let retryAfterMissing = 0;
    let running = true;
    // Half the loops load each instance; a token from one is good on both.
    const loop = async (_: unknown, i: number) => {
      const target = i % 2 ? second : server;
      while (running) {
        const event = sampleEvent();
        try {
          const res = await fetch(`${target.url}/api/events`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify(event),
          });
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          if (res.status === 201 || res.status === 200) {
            acknowledged.add(String(event.event_uuid));
            perInstance[i % 2]! += 1;
          }
          if (res.status === 503 && !res.headers.get('retry-after')) retryAfterMissing += 1;
          await res.arrayBuffer();
        } catch {
          // A refused connection is not an acknowledgement; nothing to record.
        }
      }
    };
    const loops = Array.from({ length: 8 }, loop);

    // Intake under way on both instances before the outage: a count, not a time (a busy
    // PostgreSQL acknowledged 9 events in the first second once).
    await eventually('events acknowledged before the outage', () => acknowledged.size, (n) => n > 20);
    postgres('stop');
    await sleep(500);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(503);
    expect((await fetch(`${second.url}/readyz`)).status).toBe(503);
    await sleep(2000);
    postgres('start');
    const restarted = Date.now();
    // Service resumes by itself: the first acknowledgement after the restart.
    const afterRestart = acknowledged.size;
    while (acknowledged.size === afterRestart && Date.now() - restarted < 15_000) await sleep(50);
    const recoveredIn = Date.now() - restarted;
    await sleep(1000);
    running = false;
    await Promise.all(loops);

    expect(statuses.get(503) ?? 0).toBeGreaterThan(0);
    expect(perInstance.every((n) => n > 0), `acknowledged by each instance: ${perInstance.join(', ')}`).toBe(true);
    expect(retryAfterMissing).toBe(0);
    expect([...statuses.keys()].filter((s) => s >= 500 && s !== 503)).toEqual([]);
    expect(recoveredIn).toBeLessThan(5000);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    expect((await fetch(`${second.url}/readyz`)).status).toBe(200);

    // Every acknowledged event is in the store.
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const { rows } = await client.query<{ event_uuid: string }>('select event_uuid from events');
      const stored = new Set(rows.map((r) => r.event_uuid));
      const lost = [...acknowledged].filter((uuid) => !stored.has(uuid));
      expect(lost).toEqual([]);
    } finally {
      await client.end();
    }
  });

  it('answers only 503 (never a 500) across repeated PostgreSQL outages during batch intake, and loses nothing acknowledged', async () => {
    // A verifier saw one 500 in two such runs: a ROLLBACK on a connection the outage broke raised
    // an error store-errors.ts did not know. Three outages, batches from four loops on two instances.
    const acknowledged = new Set<string>();
    const statuses = new Map<number, number>();
    // Acknowledgements by instance: the load must land on both.
    const perInstance = [0, 0];
    let running = true;
    const loop = async (_: unknown, i: number) => {
      const target = i % 2 ? second : server;
      while (running) {
        const events = Array.from({ length: 50 }, () => sampleEvent());
        try {
          const res = await fetch(`${target.url}/api/events/batch`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify(events),
          });
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          if (res.status === 200) {
            const { results } = (await res.json()) as { results: Array<{ event_uuid: string; status: string }> };
            for (const r of results) if (r.status === 'created' || r.status === 'replayed') acknowledged.add(r.event_uuid);
            perInstance[i % 2]! += 1;
          } else await res.arrayBuffer();
        } catch {
          // A refused connection acknowledges nothing.
        }
      }
    };
    const loops = Array.from({ length: 4 }, loop);
    const loggedBefore = [server.logged.length, second.logged.length];
    for (let outage = 0; outage < 3; outage++) {
      await sleep(1500);
      postgres('stop');
      await sleep(2000 + outage * 1000);
      postgres('start');
      const restarted = Date.now();
      const count = acknowledged.size;
      while (acknowledged.size === count && Date.now() - restarted < 15_000) await sleep(50);
    }
    await sleep(1000);
    running = false;
    await Promise.all(loops);

    expect(statuses.get(503) ?? 0).toBeGreaterThan(0);
    expect(perInstance.every((n) => n > 0), `acknowledged by each instance: ${perInstance.join(', ')}`).toBe(true);
    expect([...statuses.keys()].filter((s) => s >= 500 && s !== 503)).toEqual([]);
    // Nor a fault logged as one: a store outage is a warning, never "unhandled error".
    const faults = [...server.logged.slice(loggedBefore[0]), ...second.logged.slice(loggedBefore[1])].filter((line) => line.includes('unhandled error'));
    expect(faults).toEqual([]);
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const { rows } = await client.query<{ event_uuid: string }>('select event_uuid from events');
      const stored = new Set(rows.map((r) => r.event_uuid));
      expect([...acknowledged].filter((uuid) => !stored.has(uuid))).toEqual([]);
    } finally {
      await client.end();
    }
  });

  it('keeps serving while Redis is down, and shares again when it returns', async () => {
    await redis.stop();
    await sleep(300);
    for (let i = 0; i < 20; i++) {
      const res = await fetch(`${server.url}/api/phone-numbers/100`, { headers: { authorization: `Bearer ${token}` } });
      expect([200, 404]).toContain(res.status);
      expect(rateLimitOf(res)?.quota).toBe(3600);
    }
    await redis.start();
    for (let i = 0; i < 100 && (await redisUnreachable(redis.url)); i++) await sleep(100);
    await sleep(2500);
    const res = await fetch(`${server.url}/api/phone-numbers/100`, { headers: { authorization: `Bearer ${token}` } });
    expect([200, 404]).toContain(res.status);
  });
});
