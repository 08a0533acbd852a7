import { describe, expect, it } from 'vitest';
import type { Account } from '../../src/domain/accounts/accounts.ts';
import type { IpAggregate, LookupsRepository, NumberAggregate } from '../../src/domain/lookups/lookup-aggregates.ts';
import { LookupCache } from '../../src/aggregates/lookup-cache.ts';
import { LookupService } from '../../src/domain/lookups/lookup-service.ts';

const account: Account = { account_id: 'a1', name: 'a', plan: 'tester', trusted: false, disabled: false, created_at: '2026-11-01T00:00:00Z' };

const seenOnce: NumberAggregate = {
  seenCount: 1,
  firstSeen: '2026-11-20T10:00:00.000000000Z',
  lastSeen: '2026-11-20T10:00:00.000000000Z',
  sourceIpCount: 1,
  sipMethods: { INVITE: 1 },
  forms: ['0046812118532'],
  nodeCount: 1,
};

const address: IpAggregate = {
  seenCount: 1,
  firstSeen: '2026-11-20T10:00:00.000000000Z',
  lastSeen: '2026-11-20T10:00:00.000000000Z',
  calledNumberCount: 1,
  userAgents: [{ user_agent: 'friendly-scanner', count: 1 }],
  transports: { UDP: 1 },
  nodeCount: 1,
};

/** A service over a store that counts its reads, with a clock for the cache and one for the scores. */
function setUp(knownKeys?: { mayExist(kind: 'number' | 'ip' | 'range', key: string): boolean }) {
  let now = Date.parse('2026-11-21T10:00:00Z');
  let scoredAt = now;
  let reads = 0;
  const repo: LookupsRepository = {
    phoneNumber: async () => (reads++, { ...seenOnce }),
    ipAddress: async () => (reads++, { ...address }),
    numbersByHashPrefix: async () => [],
    numberRange: async () => undefined,
  };
  const cache = new LookupCache({ ttlMs: 500, maxEntries: 100, now: () => now });
  const service = new LookupService(repo, { cache, now: () => new Date(scoredAt), ...(knownKeys ? { knownKeys } : {}) });
  return {
    service,
    reads: () => reads,
    advance: (ms: number) => {
      now += ms;
      scoredAt += ms;
    },
    /** Moves the scores' clock alone. */
    age: (ms: number) => (scoredAt += ms),
  };
}

describe('LookupService answers', () => {
  it('answer "never seen" without reading the store when the known keys rule the key out, and read it otherwise', async () => {
    const asked: string[] = [];
    const t = setUp({ mayExist: (kind, key) => (asked.push(`${kind}:${key}`), key === '+46812118532' || key === '192.0.2.1') });
    expect((await t.service.phoneNumber(account, '+46812118999')).found).toBe(false);
    expect((await t.service.ipAddress(account, '198.51.100.1')).found).toBe(false);
    expect(t.reads()).toBe(0);
    expect((await t.service.phoneNumber(account, '0046812118532')).found).toBe(true);
    expect((await t.service.ipAddress(account, '192.0.2.1')).found).toBe(true);
    expect(t.reads()).toBe(2);
    // A number's range is asked of the filter too, after the number (docs/scoring.md, "Ranges").
    expect(asked).toEqual(['number:+46812118999', 'range:+468121189', 'ip:198.51.100.1', 'number:+46812118532', 'range:+468121185', 'ip:192.0.2.1']);
  });

  it('are worked out once per kept aggregate: the score is as of its read until the cache reads it again', async () => {
    const t = setUp();
    const first = await t.service.phoneNumber(account, '+46812118532');
    // A year later by the scores' clock, still within the cache's lifetime by the cache's.
    t.age(365 * 86_400_000);
    t.advance(499);
    const again = await t.service.phoneNumber(account, '0046812118532');
    expect(t.reads()).toBe(1);
    expect(again).toEqual({ ...first, phone_number: '0046812118532' });
    t.advance(1);
    const later = await t.service.phoneNumber(account, '+46812118532');
    expect(t.reads()).toBe(2);
    expect(later.found && first.found && later.score < first.score).toBe(true);
  });

  it('name the value as each caller wrote it, whatever answer was worked out before', async () => {
    const t = setUp();
    const forms = ['+46812118532', 'tel:+46812118532', '+46 8 121 185 32'];
    const answers = await Promise.all(forms.map((form) => t.service.phoneNumber(account, form)));
    expect(answers.map((a) => a.phone_number)).toEqual(['+46812118532', '+46812118532', '+46812118532']);
    const ip = await t.service.ipAddress(account, '2001:0db8::0007');
    expect(ip).toMatchObject({ ip_address: '2001:db8::7', found: true, seen_count: 1 });
  });
});
