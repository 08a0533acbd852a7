import { RateLimiterCluster, RateLimiterMemory, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { RateWindow } from '../domain/plans.ts';

/** Route groups with their own allowance (docs/api.md §9). */
export type LimitGroup = 'lookups' | 'submissions' | 'event_reads';

/** Where a caller stands in its window after a request. */
export interface LimitState {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

/** Makes the counter for one (group, limit, window); the store behind it is the factory's choice. */
export type LimiterFactory = (options: { keyPrefix: string; points: number; duration: number }) => RateLimiterAbstract;

/** Counters in this process only: right for one instance. */
export const memoryLimiters: LimiterFactory = (options) => new RateLimiterMemory(options);

/**
 * How long a worker waits for the cluster's primary to count. The primary answers in well
 * under a millisecond; a primary that cannot answer in this long is saturated or gone, and a
 * request must not wait on it (as with a hung Redis, whose commands get 500 ms too).
 */
const CLUSTER_TIMEOUT_MS = 500;

/**
 * A counter kept by the cluster's primary, insured by one in this process: when the primary does
 * not answer in time, or cannot be asked, this worker counts alone until it answers again. A
 * slow coordination call then costs a looser limit for a moment, never a failed request (5xx).
 */
class InsuredClusterLimiter extends RateLimiterCluster {
  private readonly insurance: RateLimiterMemory;

  constructor(options: { keyPrefix: string; points: number; duration: number }) {
    super({ ...options, timeoutMs: CLUSTER_TIMEOUT_MS });
    this.insurance = new RateLimiterMemory(options);
  }

  override consume(key: string | number, points?: number, options?: { [key: string]: unknown }): Promise<RateLimiterRes> {
    return insured(super.consume(key, points, options), () => this.insurance.consume(key, points, options));
  }

  override reward(key: string | number, points?: number, options?: { [key: string]: unknown }): Promise<RateLimiterRes> {
    return insured(super.reward(key, points, options), () => this.insurance.reward(key, points, options));
  }

  override get(key: string | number, options?: { [key: string]: unknown }): Promise<RateLimiterRes | null> {
    return insured(super.get(key, options), () => this.insurance.get(key, options));
  }
}

/** The primary's answer; the insurance's when the primary failed to give one (a refusal is an answer). */
async function insured<T>(primary: Promise<T>, insurance: () => Promise<T>): Promise<T> {
  try {
    return await primary;
  } catch (err) {
    if (err instanceof RateLimiterRes) throw err;
    return insurance();
  }
}

/** Counters kept by the cluster's primary process, shared by its workers (WORKERS without Redis). */
export const clusterLimiters: LimiterFactory = (options) => new InsuredClusterLimiter(options);

/**
 * Per-account, per-group allowances over fixed windows. A counter exists per distinct
 * (group, limit, window), so an operator's plan change applies from the next request.
 */
export class PlanLimiter {
  private readonly factory: LimiterFactory;
  private readonly limiters = new Map<string, RateLimiterAbstract>();

  constructor(factory: LimiterFactory) {
    this.factory = factory;
  }

  /** Spends `points` of an account's allowance; a refused request spends nothing. */
  async consume(group: LimitGroup, accountId: string, window: RateWindow, points = 1): Promise<LimitState> {
    const limiter = this.limiterFor(group, window);
    try {
      const res = await limiter.consume(accountId, points);
      return stateOf(window, res, true);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      // Give the points back: a refused batch must not eat the allowance of later requests.
      const after = await limiter.reward(accountId, points).catch(() => rejection);
      return stateOf(window, after instanceof RateLimiterRes ? after : rejection, false);
    }
  }

  private limiterFor(group: LimitGroup, window: RateWindow): RateLimiterAbstract {
    const keyPrefix = `tollwatch:rl:${group}:${window.limit}:${window.windowSeconds}`;
    let limiter = this.limiters.get(keyPrefix);
    if (!limiter) {
      limiter = this.factory({ keyPrefix, points: window.limit, duration: window.windowSeconds });
      this.limiters.set(keyPrefix, limiter);
    }
    return limiter;
  }
}

function stateOf(window: RateWindow, res: RateLimiterRes, allowed: boolean): LimitState {
  return {
    allowed,
    limit: window.limit,
    remaining: Math.max(0, window.limit - res.consumedPoints),
    resetSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
  };
}
