import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { RateLimiterMemory, RateLimiterRedis } from 'rate-limiter-flexible';
import type { LimiterFactory } from '../limits/plan-limiter.ts';

const CHANNEL = 'tollwatch:access-changed';

/**
 * What several instances share through Redis: rate-limit counters and notices that access
 * changed (secret reset, client deleted, plan or account changed). When Redis is down, limits
 * fall back to per-instance counters and notices to the one-second cache bound; both resume
 * by themselves when Redis returns. Each transition is logged once.
 */
export class RedisCoordination {
  private readonly client: Redis;
  private readonly subscriber: Redis;
  private readonly log: Logger | undefined;
  private down = false;

  constructor(url: string, log?: Logger) {
    this.log = log;
    // No offline queue: a command while Redis is away fails at once and the insurance limiter
    // answers, instead of requests waiting for a reconnect.
    const options = { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000, lazyConnect: false };
    this.client = new Redis(url, options);
    this.subscriber = new Redis(url, { ...options, enableOfflineQueue: true });
    for (const connection of [this.client, this.subscriber]) {
      connection.on('error', (err: Error) => this.wentDown(err));
      connection.on('ready', () => this.cameBack());
    }
  }

  /** Limiters counting in Redis, each insured by an in-process one for when Redis is away. */
  limiters(): LimiterFactory {
    return (options) =>
      new RateLimiterRedis({
        ...options,
        storeClient: this.client,
        rejectIfRedisNotReady: true,
        insuranceLimiter: new RateLimiterMemory(options),
      });
  }

  /** Tells every instance that access changed. Best effort: the cache bound covers a miss. */
  announceAccessChange(): void {
    this.client.publish(CHANNEL, String(Date.now())).catch(() => {});
  }

  /** Calls `onChange` whenever any instance announces an access change. */
  async onAccessChange(onChange: () => void): Promise<void> {
    this.subscriber.on('message', (channel: string) => {
      if (channel === CHANNEL) onChange();
    });
    await this.subscriber.subscribe(CHANNEL).catch((err: Error) => this.wentDown(err));
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.client.quit(), this.subscriber.quit()]);
    this.client.disconnect();
    this.subscriber.disconnect();
  }

  private wentDown(err: Error): void {
    if (this.down) return;
    this.down = true;
    this.log?.warn({ err: err.message }, 'redis unreachable: rate limits now count per instance until it returns');
  }

  private cameBack(): void {
    if (!this.down) return;
    this.down = false;
    this.log?.info('redis reachable again: rate limits and revocation notices shared again');
  }
}
