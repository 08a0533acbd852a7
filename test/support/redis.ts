import { Redis } from 'ioredis';

/** The Redis server tests use. */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Undefined when Redis answers; otherwise why not. */
export async function redisUnreachable(url = TEST_REDIS_URL): Promise<string | undefined> {
  const client = new Redis(url, { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  try {
    await client.connect();
    await client.ping();
    return undefined;
  } catch (err) {
    return (err as Error).message;
  } finally {
    client.disconnect();
  }
}
