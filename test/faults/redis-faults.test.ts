import { Redis } from 'ioredis';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { RedisCoordination } from '../../src/coordination/redis-coordination.ts';
import { startHarness } from '../support/harness.ts';
import { privateRedis, redisServerMissing } from '../support/redis.ts';

/**
 * Redis faults that closed connections do not show: a server that stops answering, and one
 * that was not there when the instance started. Each test runs a redis-server of its own, so
 * unlike outages.test.ts nothing shared is taken away.
 */
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(50)) if (await condition()) return true;
  return condition();
}

describe.skipIf(redisServerMissing)('Redis faults', () => {
  it('a hung Redis (SIGSTOP) holds no request more than about a second; fallback and return are logged once', async () => {
    const redis = await privateRedis();
    const lines: Array<{ msg?: string }> = [];
    const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const h = await startHarness({ REDIS_URL: redis.url }, { log });
    try {
      const who = await h.account();
      expect((await who.api('/api/phone-numbers/100')).status).toBe(404);
      const tokenBody = (secret: string) =>
        JSON.stringify({ client_id: who.clientId, client_secret: secret, audience: 'http://tollwatch.test/api', grant_type: 'client_credentials' });
      // Without a bound these would wait for Redis forever; the signal makes that a failure.
      const timed = async (path: string, init: RequestInit = {}) => {
        const started = performance.now();
        const res = await fetch(`${h.url}${path}`, { ...init, signal: AbortSignal.timeout(4000) });
        await res.arrayBuffer();
        return { status: res.status, ms: performance.now() - started };
      };
      const token = await who.token();
      const bearer = { authorization: `Bearer ${token}` };
      const post = (body: string) => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body });

      redis.pause();
      for (let round = 0; round < 2; round++) {
        const results = await Promise.all([
          timed('/api/phone-numbers/100', { headers: bearer }),
          timed('/api/ip-addresses/192.0.2.1', { headers: bearer }),
          timed('/api/phone-numbers/100', { headers: { authorization: 'Bearer forged' } }),
          timed('/oauth/token', post(tokenBody('wrong'))),
          timed('/oauth/token', post(tokenBody(who.clientSecret))),
        ]);
        expect(results.map((r) => r.status)).toEqual([404, 404, 401, 401, 200]);
        for (const { ms } of results) expect(ms).toBeLessThan(1500);
      }
      expect(lines.filter((l) => l.msg?.startsWith('redis unreachable'))).toHaveLength(1);

      redis.resume();
      expect(await until(() => lines.some((l) => l.msg?.startsWith('redis reachable again')), 5000)).toBe(true);
      const after = await timed('/api/phone-numbers/100', { headers: bearer });
      expect(after.status).toBe(404);
      expect(lines.filter((l) => l.msg?.startsWith('redis unreachable'))).toHaveLength(1);
      expect(lines.filter((l) => l.msg?.startsWith('redis reachable again'))).toHaveLength(1);
    } finally {
      redis.resume();
      await h.close();
      await redis.stop();
    }
  });

  it('an instance started while Redis was down subscribes to access-change notices once it is up', async () => {
    const redis = await privateRedis({ started: false });
    const coordination = new RedisCoordination(redis.url);
    const publisher = new Redis(redis.url, { lazyConnect: true });
    publisher.on('error', () => {});
    let notices = 0;
    try {
      await coordination.onAccessChange(() => {
        notices += 1;
      });
      await redis.start();
      await publisher.connect();
      // PUBLISH answers how many subscribers received the message.
      let received = 0;
      await until(async () => (received = await publisher.publish('tollwatch:access-changed', 'test')) > 0, 8000);
      expect(received).toBe(1);
      expect(await until(() => notices > 0, 2000)).toBe(true);
    } finally {
      publisher.disconnect();
      await coordination.close();
      await redis.stop();
    }
  });

  it('an instance subscribed before Redis restarted hears notices again after it, and once each', async () => {
    const redis = await privateRedis();
    const coordination = new RedisCoordination(redis.url);
    let notices = 0;
    const publisher = () => {
      const client = new Redis(redis.url, { lazyConnect: true });
      client.on('error', () => {});
      return client;
    };
    const first = publisher();
    try {
      await coordination.onAccessChange(() => {
        notices += 1;
      });
      await first.connect();
      expect(await until(async () => (await first.publish('tollwatch:access-changed', 'before')) === 1, 4000)).toBe(true);
      first.disconnect();
      await redis.stop();
      await redis.start();
      const second = publisher();
      await second.connect();
      notices = 0;
      // One subscription on the new server, not two: ioredis's own resubscription is off.
      let received = 0;
      await until(async () => (received = await second.publish('tollwatch:access-changed', 'after')) > 0, 8000);
      second.disconnect();
      expect(received).toBe(1);
      expect(await until(() => notices > 0, 2000)).toBe(true);
    } finally {
      first.disconnect();
      await coordination.close();
      await redis.stop();
    }
  });
});
