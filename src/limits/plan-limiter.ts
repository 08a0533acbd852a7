import { RateLimiterCluster, RateLimiterMemory, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { RateWindow } from '../domain/plans.ts';

/** Route groups with their own allowance (docs/api.md §9). */
export type LimitGroup = 'lookups' | 'submissions';

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

/** Counters kept by the cluster's primary process, shared by its workers (WORKERS without Redis). */
export const clusterLimiters: LimiterFactory = (options) => new RateLimiterCluster({ ...options, timeoutMs: 2000 });

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
