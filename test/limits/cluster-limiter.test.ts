import { RateLimiterRes } from 'rate-limiter-flexible';
import { describe, expect, it } from 'vitest';
import { clusterLimiters } from '../../src/limits/plan-limiter.ts';

describe('counters kept by the cluster primary (WORKERS without Redis)', () => {
  it('count in this process when the primary cannot be asked, rather than failing the request', async () => {
    // This process is no cluster worker: there is no primary to ask, as when it hangs or dies.
    const limiter = clusterLimiters({ keyPrefix: 'test', points: 2, duration: 60 });
    const first = await limiter.consume('k');
    const second = await limiter.consume('k');
    expect([first.remainingPoints, second.remainingPoints]).toEqual([1, 0]);
    // Over the limit is still a refusal (a RateLimiterRes), not an error: a 429, never a 5xx.
    const third = await limiter.consume('k').catch((refusal: unknown) => refusal);
    expect(third).toBeInstanceOf(RateLimiterRes);
    expect((await limiter.reward('k')).consumedPoints).toBe(2);
  });
});
