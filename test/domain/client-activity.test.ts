import { afterEach, describe, expect, it, vi } from 'vitest';
import { ClientActivity, type ClientActivityRepository, type ClientUses } from '../../src/domain/accounts/client-activity.ts';

/**
 * How ClientActivity gathers clients' uses and writes them in batches, over a repository that
 * keeps what it is handed (the SQL statement and its "latest wins" are exercised on both stores
 * in test/dashboard/client-last-use.test.ts).
 */
function recording(fail = 0) {
  const batches: ClientUses[][] = [];
  let failures = fail;
  const repo: ClientActivityRepository = {
    async recordUses(uses) {
      if (failures > 0) {
        failures -= 1;
        throw new Error('store away');
      }
      batches.push(uses);
    },
  };
  return { repo, batches };
}

const T0 = Date.parse('2026-11-23T11:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

describe("clients' last use", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('writes nothing per call: every client used since the last flush in one batch, each with its latest use', async () => {
    const { repo, batches } = recording();
    const activity = new ClientActivity(repo, 30_000, (err) => {
      throw err;
    });
    for (let i = 0; i < 100; i += 1) activity.called('a', `198.51.100.${i % 7}`, T0 + i);
    activity.called('b', '203.0.113.9', T0 + 5);
    activity.tokenIssued('b', '203.0.113.8', T0 + 3);
    // A request that finished after a later one does not take its place.
    activity.called('b', '203.0.113.1', T0 + 1);
    expect(batches).toEqual([]);
    await activity.flush();
    expect(batches).toEqual([
      [
        { clientId: 'a', call: { at: iso(T0 + 99), address: '198.51.100.1' } },
        { clientId: 'b', token: { at: iso(T0 + 3), address: '203.0.113.8' }, call: { at: iso(T0 + 5), address: '203.0.113.9' } },
      ],
    ]);
    // Only what changed since: nothing, then one client.
    await activity.flush();
    expect(batches).toHaveLength(1);
    activity.called('a', '198.51.100.50', T0 + 200);
    await activity.flush();
    expect(batches[1]).toEqual([{ clientId: 'a', call: { at: iso(T0 + 200), address: '198.51.100.50' } }]);
  });

  it('flushes by itself once the interval has passed after a use, and not before', async () => {
    vi.useFakeTimers();
    const { repo, batches } = recording();
    const activity = new ClientActivity(repo, 30_000, (err) => {
      throw err;
    });
    activity.called('a', '198.51.100.1', T0);
    await vi.advanceTimersByTimeAsync(29_999);
    expect(batches).toEqual([]);
    activity.called('a', '198.51.100.2', T0 + 1);
    await vi.advanceTimersByTimeAsync(1);
    expect(batches).toEqual([[{ clientId: 'a', call: { at: iso(T0 + 1), address: '198.51.100.2' } }]]);
    // Idle: no timer, no write.
    await vi.advanceTimersByTimeAsync(120_000);
    expect(batches).toHaveLength(1);
  });

  it('keeps a batch the store refused for the next flush, merged with later uses', async () => {
    const { repo, batches } = recording(1);
    const errors: unknown[] = [];
    const activity = new ClientActivity(repo, 30_000, (err) => void errors.push(err));
    activity.called('a', '198.51.100.1', T0 + 10);
    activity.tokenIssued('b', null, T0);
    await activity.flush();
    expect(errors).toHaveLength(1);
    expect(batches).toEqual([]);
    activity.called('a', '198.51.100.2', T0 + 5);
    await activity.close();
    expect(batches).toEqual([
      [
        { clientId: 'a', call: { at: iso(T0 + 10), address: '198.51.100.1' } },
        { clientId: 'b', token: { at: iso(T0), address: null } },
      ],
    ]);
  });
});
