import { describe, expect, it } from 'vitest';
import { HealthProbe } from '../../src/metrics/health-probe.ts';

describe('HealthProbe: the store gauge of a scrape', () => {
  it('is true when the ping resolves, false when it rejects', async () => {
    expect(await new HealthProbe(async () => {}, 1000).answers()).toBe(true);
    expect(await new HealthProbe(async () => Promise.reject(new Error('down')), 1000).answers()).toBe(false);
  });

  it('answers false within its timeout when the ping hangs, and never pings again while that ping hangs', async () => {
    let pings = 0;
    let release: () => void = () => {};
    const probe = new HealthProbe(() => {
      pings++;
      return new Promise<void>((resolve) => (release = resolve));
    }, 100);
    const started = performance.now();
    expect(await probe.answers()).toBe(false);
    expect(performance.now() - started).toBeLessThan(1000);
    // Two more scrapes, one of them concurrent: still the one hanging ping.
    expect(await Promise.all([probe.answers(), probe.answers()])).toEqual([false, false]);
    expect(pings).toBe(1);
    // Once it answers, the next scrape asks afresh.
    release();
    await new Promise((resolve) => setImmediate(resolve));
    const next = probe.answers();
    release();
    expect(await next).toBe(true);
    expect(pings).toBe(2);
  });
});
