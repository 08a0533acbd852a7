import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { freePort } from './server-process.ts';

/** The Redis server tests use. */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Undefined when Redis answers; otherwise why not. */
export async function redisUnreachable(url = TEST_REDIS_URL): Promise<string | undefined> {
  const client = new Redis(url, { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  // The failure is the answer here, not an event for ioredis to print as unhandled.
  client.on('error', () => {});
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

/** Whether a `redis-server` binary is there to start private servers with. */
export const redisServerMissing = spawnSync('redis-server', ['--version']).status !== 0;

/** A redis-server of one test's own, on a free port: it may be paused, stopped and started. */
export interface PrivateRedis {
  url: string;
  start(): Promise<void>;
  /** SIGSTOP: the server keeps its connections but answers nothing (a hung server). */
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

/** A private Redis on a free port; started unless `started` is false. */
export async function privateRedis({ started = true } = {}): Promise<PrivateRedis> {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  const redis: PrivateRedis = {
    url,
    async start() {
      child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
      for (let i = 0; i < 100 && (await redisUnreachable(url)); i++) await new Promise((resolve) => setTimeout(resolve, 50));
      if (await redisUnreachable(url)) throw new Error(`redis-server did not start on port ${port}`);
    },
    pause() {
      child?.kill('SIGSTOP');
    },
    resume() {
      child?.kill('SIGCONT');
    },
    async stop() {
      const running = child;
      child = undefined;
      if (!running || running.exitCode !== null || running.signalCode !== null) return;
      running.kill('SIGCONT');
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGTERM');
      await exited;
    },
  };
  if (started) await redis.start();
  return redis;
}
