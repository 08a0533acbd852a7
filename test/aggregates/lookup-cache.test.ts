import { describe, expect, it } from 'vitest';
import type { NumberAggregate, RangeAggregate } from '../../src/domain/lookups/lookup-aggregates.ts';
import { LookupCache } from '../../src/aggregates/lookup-cache.ts';

const aggregate = (seenCount: number): NumberAggregate => ({
  seenCount,
  firstSeen: '2026-11-20T10:00:00Z',
  lastSeen: '2026-11-20T10:00:00Z',
  sourceIpCount: 1,
  sipMethods: { INVITE: seenCount },
  forms: ['+46812118532'],
  nodeCount: 1,
});

/** A cache on a hand-moved clock, and a store that counts its reads. */
function setUp(options: { ttlMs?: number; missingTtlMs?: number; maxEntries?: number } = {}) {
  let now = 1_000_000;
  const cache = new LookupCache({ ttlMs: options.ttlMs ?? 500, missingTtlMs: options.missingTtlMs, maxEntries: options.maxEntries ?? 100, now: () => now });
  const store = new Map<string, NumberAggregate>();
  let reads = 0;
  const lookup = (key: string, scopes: string[] = ['*shared*', 'a1']) =>
    cache.read('number', key, scopes, async () => {
      reads++;
      return store.get(key);
    });
  return { cache, store, lookup, reads: () => reads, advance: (ms: number) => (now += ms) };
}

describe('LookupCache', () => {
  it('answers from memory until the TTL, then reads again', async () => {
    const t = setUp({ ttlMs: 500 });
    t.store.set('4681', aggregate(1));
    expect(await t.lookup('4681')).toEqual(aggregate(1));
    t.store.set('4681', aggregate(2));
    t.advance(499);
    expect((await t.lookup('4681'))?.seenCount).toBe(1);
    expect(t.reads()).toBe(1);
    t.advance(1);
    expect((await t.lookup('4681'))?.seenCount).toBe(2);
    expect(t.reads()).toBe(2);
  });

  it('keeps negative entries: a number never seen is not read again within the TTL', async () => {
    const t = setUp();
    expect(await t.lookup('999')).toBeUndefined();
    expect(await t.lookup('999')).toBeUndefined();
    expect(t.reads()).toBe(1);
  });

  it('keeps "never seen" for its own, shorter lifetime, and found aggregates for theirs', async () => {
    const t = setUp({ ttlMs: 60_000, missingTtlMs: 1000 });
    t.store.set('4681', aggregate(1));
    await t.lookup('4681');
    await t.lookup('999');
    t.advance(1000);
    await t.lookup('4681');
    await t.lookup('999');
    expect(t.reads()).toBe(3);
    // A stream of numbers never seen is let go behind a found key that lives on.
    for (let i = 0; i < 50; i++) await t.lookup(`new${i}`);
    t.advance(1000);
    await t.lookup('last');
    expect(t.cache.size).toBe(2);
    expect((await t.lookup('4681'))?.seenCount).toBe(1);
  });

  it('answers a key read again with the other kind of answer from that read only', async () => {
    const t = setUp({ ttlMs: 60_000, missingTtlMs: 1000 });
    await t.lookup('4681');
    t.store.set('4681', aggregate(1));
    t.advance(1000);
    expect((await t.lookup('4681'))?.seenCount).toBe(1);
    expect(t.cache.size).toBe(1);
    t.store.delete('4681');
    t.cache.invalidate([{ kind: 'number', key: '4681' }]);
    expect(await t.lookup('4681')).toBeUndefined();
    expect(await t.lookup('4681')).toBeUndefined();
    expect(t.cache.size).toBe(1);
    expect(t.reads()).toBe(3);
  });

  it('keeps each set of readable scopes apart', async () => {
    const t = setUp();
    t.store.set('4681', aggregate(1));
    await t.lookup('4681', ['*shared*', 'a1']);
    await t.lookup('4681', ['*shared*', 'a2']);
    await t.lookup('4681', ['*shared*']);
    expect(t.reads()).toBe(3);
    expect(t.cache.size).toBe(3);
  });

  it('drops every scope of an invalidated key at once, and only that key', async () => {
    const t = setUp();
    t.store.set('4681', aggregate(1));
    await t.lookup('4681', ['*shared*', 'a1']);
    await t.lookup('4681', ['*shared*']);
    await t.lookup('999');
    t.store.set('4681', aggregate(2));
    t.cache.invalidate([{ kind: 'number', key: '4681' }]);
    expect((await t.lookup('4681', ['*shared*', 'a1']))?.seenCount).toBe(2);
    expect((await t.lookup('4681', ['*shared*']))?.seenCount).toBe(2);
    expect(t.reads()).toBe(5);
    await t.lookup('999');
    expect(t.reads()).toBe(5);
  });

  it('works out again from a fold step’s rows what they alone give, keeps what the step did not touch, and drops the rest', async () => {
    const t = setUp({ ttlMs: 500 });
    const sole = (seenCount: number, scope: string) => ({ ...aggregate(seenCount), soleScope: scope });
    t.store.set('4681', sole(1, '*shared*'));
    await t.lookup('4681', ['*shared*']); // one scope read
    await t.lookup('4681', ['*shared*', 'a1']); // two read, one held the key
    await t.lookup('4682', ['*shared*', 'a1']); // never seen
    await t.lookup('4683', ['a3']); // a scope the step does not write
    t.store.set('4681', aggregate(5)); // a union of two scopes' rows:
    await t.lookup('4681', ['*shared*', 'a2']); // both held the key
    await t.lookup('4681', ['*shared*', 'a4']); // and the step writes both
    expect(t.reads()).toBe(6);
    t.advance(400);
    // The step wrote 4681 and 4682 in the shared scope, 4681 in a4's, 4683 in a5's (no entry read
    // a5), and 4684, never asked about.
    const rows: Record<string, string[]> = { '4681': ['*shared*', 'a4'], '4682': ['*shared*'], '4683': ['a5'], '4684': ['*shared*'] };
    const asked: string[] = [];
    t.cache.refresh(
      Object.keys(rows).map((key) => ({ kind: 'number' as const, key })),
      {
        scopes: (_kind, key) => rows[key] ?? [],
        value: (kind, key, scope) => {
          asked.push(`${kind} ${key} ${scope}`);
          return sole(Number(key) - 4670, scope);
        },
      },
    );
    expect(asked.sort()).toEqual(['number 4681 *shared*', 'number 4681 *shared*', 'number 4682 *shared*']);
    const kept = (key: string, scopes: string[]) => t.cache.fresh('number', key, scopes)?.value?.seenCount;
    expect(kept('4681', ['*shared*'])).toBe(11);
    expect(kept('4681', ['*shared*', 'a1'])).toBe(11);
    expect(kept('4682', ['*shared*', 'a1'])).toBe(12);
    // Untouched by the step: kept as it was, with its own lifetime.
    expect(t.cache.fresh('number', '4683', ['a3'])).toEqual({ value: undefined });
    // Two scopes that both held the key, or both written: read again.
    expect(t.cache.fresh('number', '4681', ['*shared*', 'a2'])).toBeUndefined();
    expect(t.cache.fresh('number', '4681', ['*shared*', 'a4'])).toBeUndefined();
    // Nothing kept that nobody asked about.
    expect(t.cache.fresh('number', '4684', ['*shared*'])).toBeUndefined();
    // A refreshed value lives a whole lifetime from the refresh.
    t.advance(499);
    expect(kept('4681', ['*shared*'])).toBe(11);
    expect(t.cache.fresh('number', '4683', ['a3'])).toBeUndefined();
  });

  it('does not keep a read that a refresh overtook', async () => {
    const t = setUp();
    t.store.set('4681', aggregate(1));
    await t.lookup('4681', ['*shared*']);
    t.advance(1000);
    let release!: () => void;
    const slow = t.cache.read('number', '4681', ['*shared*'], async () => {
      const old = t.store.get('4681');
      await new Promise<void>((resolve) => (release = resolve));
      return old;
    });
    t.cache.refresh([{ kind: 'number', key: '4681' }], { scopes: () => ['*shared*'], value: () => aggregate(2) });
    release();
    expect((await slow)?.seenCount).toBe(1);
    expect(t.cache.fresh('number', '4681', ['*shared*'])?.value?.seenCount).toBe(2);
  });

  it('tells kinds apart: an address change leaves a number of the same text alone', async () => {
    const t = setUp();
    await t.lookup('1');
    t.cache.invalidate([{ kind: 'ip', key: '1' }]);
    await t.lookup('1');
    expect(t.reads()).toBe(1);
  });

  it('keeps a range apart from a number written as its prefix, read, kept and dropped alone', async () => {
    const t = setUp();
    const prefix = '+468121185';
    t.store.set(prefix, aggregate(3));
    const range: RangeAggregate = { numberCount: 2, seenCount: 9, firstSeen: '2026-11-20T10:00:00Z', lastSeen: '2026-11-20T10:00:00Z', sourceIpCount: 2, nodeCount: 1, inviteCount: 9 };
    expect(await t.cache.read('range', prefix, ['*shared*', 'a1'], async () => range)).toBe(range);
    expect((await t.lookup(prefix))?.seenCount).toBe(3);
    expect(t.reads()).toBe(1);
    expect(t.cache.fresh('range', prefix, ['*shared*', 'a1'])?.value).toBe(range);
    expect(t.cache.fresh('number', prefix, ['*shared*', 'a1'])?.value?.seenCount).toBe(3);
    expect(t.cache.fresh('range', prefix, ['*shared*'])).toBeUndefined();
    t.cache.invalidate([{ kind: 'range', key: prefix }]);
    expect(t.cache.fresh('range', prefix, ['*shared*', 'a1'])).toBeUndefined();
    expect(t.cache.fresh('number', prefix, ['*shared*', 'a1'])?.value?.seenCount).toBe(3);
    expect(t.cache.size).toBe(1);
  });

  it('does not keep a read that a change overtook', async () => {
    const t = setUp();
    t.store.set('4681', aggregate(1));
    let release!: () => void;
    const slow = t.cache.read('number', '4681', ['*shared*'], async () => {
      const old = t.store.get('4681');
      await new Promise<void>((resolve) => (release = resolve));
      return old;
    });
    t.store.set('4681', aggregate(2));
    t.cache.invalidate([{ kind: 'number', key: '4681' }]);
    release();
    expect((await slow)?.seenCount).toBe(1);
    expect((await t.lookup('4681', ['*shared*']))?.seenCount).toBe(2);
  });

  it('holds at most maxEntries, evicting the key kept longest ago', async () => {
    const t = setUp({ maxEntries: 3 });
    for (const key of ['1', '2', '3']) await t.lookup(key);
    await t.lookup('1');
    await t.lookup('4');
    expect(t.cache.size).toBe(3);
    const before = t.reads();
    await t.lookup('2');
    await t.lookup('3');
    await t.lookup('4');
    expect(t.reads()).toBe(before);
    await t.lookup('1');
    expect(t.reads()).toBe(before + 1);
  });

  it('lets go of expired keys as new ones are read, keeping about a TTL of lookups', async () => {
    const t = setUp({ ttlMs: 500, maxEntries: 100 });
    for (let i = 0; i < 50; i++) await t.lookup(`old${i}`);
    t.advance(300);
    // Answered from memory: not read again, so it expires with the others.
    await t.lookup('old0');
    for (let i = 0; i < 10; i++) await t.lookup(`mid${i}`);
    expect(t.cache.size).toBe(60);
    expect(t.reads()).toBe(60);
    t.advance(250);
    // Every old key has expired and goes; the mid keys (read at 300) have not.
    await t.lookup('new');
    expect(t.cache.size).toBe(11);
    t.advance(300);
    // Everything but the last key expired: the scan stops at the first fresh key, which is that one.
    await t.lookup('newer');
    expect(t.cache.size).toBe(2);
  });

  it('forgets everything on clear(), and caches nothing with a TTL of 0', async () => {
    const t = setUp();
    await t.lookup('1');
    t.cache.clear();
    expect(t.cache.size).toBe(0);
    await t.lookup('1');
    expect(t.reads()).toBe(2);
    const off = setUp({ ttlMs: 0 });
    await off.lookup('1');
    await off.lookup('1');
    expect(off.reads()).toBe(2);
    expect(off.cache.size).toBe(0);
  });
});
