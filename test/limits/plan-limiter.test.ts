import { RateLimiterMemory } from 'rate-limiter-flexible';
import { describe, expect, it } from 'vitest';
import { LeasedWindows, leaseSize, LocalWindows, PlanLimiter } from '../../src/limits/plan-limiter.ts';

describe('allowances counted in this process', () => {
  it('admits exactly the limit per window, then refuses without spending, and starts again when the window ends', () => {
    let now = 0;
    const windows = new LocalWindows(3, 60_000, () => now);
    const states = Array.from({ length: 4 }, () => windows.consume('a', 1));
    expect(states.map((s) => s.allowed)).toEqual([true, true, true, false]);
    expect(states.map((s) => s.remaining)).toEqual([2, 1, 0, 0]);
    expect(states[3]!.resetSeconds).toBe(60);
    // A refused batch of 2 spends nothing, so 1 still fits later in another window… and here:
    now = 59_500;
    expect(windows.consume('a', 2)).toMatchObject({ allowed: false, resetSeconds: 1 });
    expect(windows.consume('b', 3)).toMatchObject({ allowed: true, remaining: 0 });
    now = 60_000;
    expect(windows.consume('a', 1)).toMatchObject({ allowed: true, remaining: 2, resetSeconds: 60 });
  });

  it('answers without a promise', () => {
    const limiter = new PlanLimiter();
    const state = limiter.consume('lookups', 'a', { limit: 10, windowSeconds: 1 });
    expect(state).not.toBeInstanceOf(Promise);
  });

  it('keeps counting when the plan table is read again (new window objects, same limits)', () => {
    const limiter = new PlanLimiter();
    limiter.consume('lookups', 'a', { limit: 2, windowSeconds: 60 });
    limiter.consume('lookups', 'a', { limit: 2, windowSeconds: 60 });
    expect(limiter.consume('lookups', 'a', { limit: 2, windowSeconds: 60 })).toMatchObject({ allowed: false });
  });
});

describe('allowances leased from a shared counter', () => {
  /** Two instances leasing from one shared counter, as two servers from one Redis. */
  function twoInstances(limit: number) {
    const shared = new RateLimiterMemory({ keyPrefix: `t${Math.random()}`, points: limit, duration: 60 });
    return { shared, instances: [new LeasedWindows(shared, limit), new LeasedWindows(shared, limit)] };
  }

  it('counts a small limit one by one: exact across instances', async () => {
    const { instances } = twoInstances(5);
    const allowed: boolean[] = [];
    for (let i = 0; i < 6; i++) allowed.push((await instances[i % 2]!.consume('a', 1)).allowed);
    expect(allowed).toEqual([true, true, true, true, true, false]);
  });

  it('never admits more than the limit together, and loses at most a lease less one per instance', async () => {
    const limit = 1000;
    const lease = leaseSize(limit);
    expect(lease).toBe(10);
    const { instances } = twoInstances(limit);
    let admitted = 0;
    // Uneven traffic: the first instance gets three requests for each one of the second.
    for (let i = 0; i < 2 * limit; i++) if ((await instances[i % 4 === 3 ? 1 : 0]!.consume('a', 1)).allowed) admitted++;
    expect(admitted).toBeLessThanOrEqual(limit);
    expect(admitted).toBeGreaterThanOrEqual(limit - 2 * (lease - 1));
  });

  it('asks the shared counter once per lease, and once for concurrent requests that find none', async () => {
    const { shared, instances } = twoInstances(10_000);
    let calls = 0;
    const consume = shared.consume.bind(shared);
    shared.consume = (...args) => {
      calls++;
      return consume(...args);
    };
    const states = await Promise.all(Array.from({ length: 50 }, () => instances[0]!.consume('a', 1)));
    expect(states.every((s) => s.allowed)).toBe(true);
    expect(calls).toBe(Math.ceil(50 / leaseSize(10_000)));
  });

  it('admits a request that fits though a whole lease does not, and a refusal spends nothing', async () => {
    const { shared, instances } = twoInstances(1000);
    await shared.consume('a', 995);
    expect(await instances[0]!.consume('a', 3)).toMatchObject({ allowed: true, remaining: 2 });
    expect(await instances[1]!.consume('a', 3)).toMatchObject({ allowed: false, remaining: 2 });
    expect((await shared.get('a'))?.consumedPoints).toBe(998);
  });
});
