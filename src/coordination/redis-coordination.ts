import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { RateLimiterMemory, RateLimiterRedis } from 'rate-limiter-flexible';
import type { AccessChangeNotices } from '../domain/accounts/access-changes.ts';
import type { LimiterFactory } from '../limits/plan-limiter.ts';

const CHANNEL = 'tollwatch:access-changed';

/**
 * How long one Redis command may take before it counts as failed and the in-process limiter
 * answers instead. A Redis that stops answering without closing its connections (paused,
 * swapping, a half-dead network path) would otherwise hold every request that counts anything:
 * ioredis has no timeout of its own. A request makes at most two Redis calls one after the
 * other (a refused plan limit gives its points back), so a hung Redis costs it about a second.
 */
const COMMAND_TIMEOUT_MS = 500;

/** While Redis is thought away, how often it is asked whether it is back. */
const PROBE_INTERVAL_MS = 1000;

/**
 * What several instances share through Redis: rate-limit counters and notices that access
 * changed (secret reset, client deleted, plan or account changed, key rotated). When Redis is
 * down or hung, limits fall back to per-instance counters, and notices go only through
 * PostgreSQL's LISTEN/NOTIFY (src/store/change-notices.ts), or else the one-second cache bound;
 * both resume by themselves when Redis returns. Each transition is logged once.
 */
export class RedisCoordination implements AccessChangeNotices {
  private readonly client: Redis;
  private readonly subscriber: Redis;
  private readonly log: Logger | undefined;
  private down = false;
  private probe: NodeJS.Timeout | undefined;
  private listening = false;
  private closed = false;

  constructor(url: string, log?: Logger) {
    this.log = log;
    // No offline queue: a command while Redis is away fails at once and the insurance limiter
    // answers, instead of requests waiting for a reconnect. The command timeout does the same
    // for a Redis that is connected but silent.
    const options = { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000, commandTimeout: COMMAND_TIMEOUT_MS, lazyConnect: false };
    this.client = new Redis(url, options);
    // autoResubscribe off: ioredis's own re-SUBSCRIBE after a reconnect is a promise nobody can
    // catch, and a connection closing under it (Redis gone again, or this instance shutting
    // down) rejects it unhandled, which ends the process. The 'ready' handler below re-subscribes
    // with its failure handled.
    this.subscriber = new Redis(url, { ...options, enableOfflineQueue: true, autoResubscribe: false });
    for (const connection of [this.client, this.subscriber]) {
      connection.on('error', (err: Error) => this.wentDown(err));
      connection.on('ready', () => this.cameBack());
    }
    // Subscribe again on every (re)connection: ioredis's own resubscription is off (above), and
    // it covered only channels whose SUBSCRIBE once succeeded, so an instance started while
    // Redis was away would never have heard a notice.
    this.subscriber.on('ready', () => {
      if (this.listening) this.subscribe();
    });
  }

  /** Whether Redis is connected and answering: false from an error or a failed command until it answers again. */
  get reachable(): boolean {
    return !this.down && this.client.status === 'ready';
  }

  /** Limiters counting in Redis, each insured by an in-process one for when Redis is away. */
  limiters(): LimiterFactory {
    return (options) =>
      new RateLimiterRedis({
        ...options,
        storeClient: this.client,
        rejectIfRedisNotReady: true,
        insuranceLimiter: new InsuranceLimiter(options, () => this.wentDown(new Error('a rate-limit command failed or timed out'))),
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
    this.listening = true;
    await this.subscribe();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopProbe();
    this.listening = false;
    await Promise.allSettled([this.client.quit(), this.subscriber.quit()]);
    this.client.disconnect();
    this.subscriber.disconnect();
  }

  private subscribe(): Promise<void> {
    return this.subscriber.subscribe(CHANNEL).then(
      () => undefined,
      (err: Error) => this.wentDown(err),
    );
  }

  private wentDown(err: Error): void {
    // Errors while quitting are not an outage, and must not start a probe nobody stops.
    if (this.down || this.closed) return;
    this.down = true;
    this.log?.warn({ err: err.message }, 'redis unreachable: rate limits now count per instance until it returns');
    // A hung Redis never closes the connection, so no 'ready' will say it is back: ask it.
    this.probe = setInterval(() => {
      this.client.ping().then(
        () => this.cameBack(),
        () => {},
      );
    }, PROBE_INTERVAL_MS);
    this.probe.unref();
  }

  private cameBack(): void {
    if (!this.down) return;
    this.down = false;
    this.stopProbe();
    this.log?.info('redis reachable again: rate limits and revocation notices shared again');
  }

  private stopProbe(): void {
    clearInterval(this.probe);
    this.probe = undefined;
  }
}

/** The in-process limiter that answers whenever Redis did not: its use means Redis is away. */
class InsuranceLimiter extends RateLimiterMemory {
  private readonly onUse: () => void;

  constructor(options: ConstructorParameters<typeof RateLimiterMemory>[0], onUse: () => void) {
    super(options);
    this.onUse = onUse;
  }

  override consume(...args: Parameters<RateLimiterMemory['consume']>) {
    this.onUse();
    return super.consume(...args);
  }

  override reward(...args: Parameters<RateLimiterMemory['reward']>) {
    this.onUse();
    return super.reward(...args);
  }

  override get(...args: Parameters<RateLimiterMemory['get']>) {
    this.onUse();
    return super.get(...args);
  }
}
