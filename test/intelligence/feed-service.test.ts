import { describe, expect, it } from 'vitest';
import type { Account } from '../../src/domain/accounts/accounts.ts';
import { FeedService, MAX_FEED_ENTRIES, type FeedEntry, type FeedsRepository, type KeptAggregate } from '../../src/domain/intelligence/feed-service.ts';
import type { IpAggregate, NumberAggregate } from '../../src/domain/lookups/lookup-aggregates.ts';

const account = { account_id: 'a1', trusted: false } as Account;

/** A repository of `n` busy addresses, most recent first, that records what it was asked. */
function fakeRepo(n: number, position = 7) {
  const asked: Array<{ scopes: string[]; since: string }> = [];
  const repo: FeedsRepository = {
    foldPosition: async () => position,
    keptAmong: async () => new Set<string>(),
    async *recentNumbers(): AsyncIterable<KeptAggregate<NumberAggregate>> {},
    async *recentRanges() {},
    async *recentAddresses(scopes, since): AsyncIterable<KeptAggregate<IpAggregate>> {
      asked.push({ scopes, since });
      const lastSeen = new Date().toISOString().replace('Z', '000000Z');
      for (let i = 0; i < n; i += 1) {
        const busy = i % 2 === 0;
        yield {
          key: `10.0.${i >> 8}.${i & 255}`,
          aggregate: { seenCount: busy ? 500 : 1, firstSeen: lastSeen, lastSeen, calledNumberCount: busy ? 50 : 1, userAgents: [], transports: {}, nodeCount: busy ? 4 : 1 },
          publishedAt: lastSeen,
          changedAt: lastSeen,
        };
      }
    },
  };
  return { repo, asked };
}

async function collect(entries: AsyncIterable<FeedEntry>): Promise<FeedEntry[]> {
  const out: FeedEntry[] = [];
  for await (const e of entries) out.push(e);
  return out;
}

describe('FeedService (docs/api.md §14)', () => {
  it('stops at 100,000 entries, keeping the order it is given', async () => {
    const { repo } = fakeRepo(2 * MAX_FEED_ENTRIES + 10);
    const service = new FeedService(repo);
    const feed = await service.feed(account, 'ip-addresses', service.parseQuery({}, 'text'));
    const entries = await collect(feed.entries);
    expect(entries).toHaveLength(MAX_FEED_ENTRIES);
    // Only the busy half reaches the default min_score of 50.
    expect(entries[0]!.value).toBe('10.0.0.0');
    expect(entries[1]!.value).toBe('10.0.0.2');
    expect(entries.every((e) => e.score >= 50)).toBe(true);
  });

  it('reads only rows that can still reach min_score: half-life × log2(100 / (min − ½)) days', async () => {
    const now = new Date('2026-11-23T12:34:56Z');
    const { repo, asked } = fakeRepo(0);
    const service = new FeedService(repo, undefined, { halfLifeDays: 30 }, () => now);
    const read = async (query: Record<string, string>) => collect((await service.feed(account, 'ip-addresses', service.parseQuery(query, 'text'))).entries);
    await read({ min_score: '50' });
    const days = (Date.parse('2026-11-23T12:00:00Z') - Date.parse(asked[0]!.since)) / 86_400_000;
    expect(days).toBeCloseTo(30 * Math.log2(100 / 49.5), 6);
    expect(asked[0]!.scopes).toEqual(['*shared*', 'a1']);
    // A later `since` wins; min_score 0 reads everything.
    await read({ min_score: '50', since: '2026-11-23T00:00:00Z' });
    expect(asked[1]!.since).toBe('2026-11-23T00:00:00.000000000Z');
    await read({ min_score: '0' });
    expect(asked[2]!.since).toBe('1970-01-01T00:00:00.000000000Z');
  });

  it('one ETag per fold position, hour and query; scores as of the hour', async () => {
    let now = new Date('2026-11-23T12:10:00Z');
    // The deployment's one key (the store's feed-tag secret): the same tag on every instance.
    const key = Buffer.alloc(32, 7);
    const tag = async (position: number, query: Record<string, string> = {}, tagKey = key) => {
      const service = new FeedService(fakeRepo(0, position).repo, undefined, undefined, () => now, tagKey);
      const feed = await service.feed(account, 'ip-addresses', service.parseQuery(query, 'text'));
      expect(feed.scoredAt.toISOString()).toBe(`${now.toISOString().slice(0, 13)}:00:00.000Z`);
      return feed.etag;
    };
    const first = await tag(7);
    now = new Date('2026-11-23T12:59:59Z');
    expect(await tag(7)).toBe(first);
    expect(await tag(8)).not.toBe(first);
    expect(await tag(7, { format: 'csv' })).not.toBe(first);
    expect(await tag(7, { min_score: '51' })).not.toBe(first);
    // Another key, another tag: nothing in it can be recomputed without the key.
    expect(await tag(7, {}, Buffer.alloc(32, 8))).not.toBe(first);
    now = new Date('2026-11-23T13:00:00Z');
    expect(await tag(7)).not.toBe(first);
  });
});

describe('FeedService: ranges=include (docs/api.md §14)', () => {
  /** `n` busy numbers and `n` busy ranges, all seen now; records the `since` each read was given. */
  function rangedRepo(n: number) {
    const asked: Record<string, string[]> = { numbers: [], ranges: [] };
    const lastSeen = new Date().toISOString().replace('Z', '000000Z');
    const repo: FeedsRepository = {
      foldPosition: async () => 7,
      keptAmong: async () => new Set<string>(),
      async *recentNumbers(_scopes, since): AsyncIterable<KeptAggregate<NumberAggregate>> {
        asked.numbers!.push(since);
        for (let i = 0; i < n; i += 1) {
          yield { key: `+4681${String(i).padStart(8, '0')}`, aggregate: { seenCount: 500, firstSeen: lastSeen, lastSeen, sourceIpCount: 50, sipMethods: { INVITE: 500 }, forms: [], nodeCount: 4 }, publishedAt: lastSeen, changedAt: lastSeen };
        }
      },
      async *recentAddresses() {},
      async *recentRanges(_scopes, since) {
        asked.ranges!.push(since);
        for (let i = 0; i < n; i += 1) yield { prefix: `+4690${String(i).padStart(6, '0')}`, aggregate: { seenCount: 50, firstSeen: lastSeen, lastSeen, numberCount: 20, sourceIpCount: 20, nodeCount: 4, inviteCount: 50 } };
      },
    };
    return { repo, asked };
  }

  it('bounds numbers and ranges together at 100,000 entries', async () => {
    const { repo } = rangedRepo(60_000);
    const service = new FeedService(repo);
    const entries = await collect((await service.feed(account, 'phone-numbers', service.parseQuery({ ranges: 'include' }, 'text'))).entries);
    expect(entries).toHaveLength(MAX_FEED_ENTRIES);
    expect(entries.filter((e) => e.range).length).toBeGreaterThan(0);
    expect(entries.filter((e) => !e.range).length).toBeGreaterThan(0);
  });

  it('reads ranges with the same "can still reach min_score" bound as numbers, and none without ranges=include', async () => {
    const { repo, asked } = rangedRepo(0);
    const service = new FeedService(repo);
    await collect((await service.feed(account, 'phone-numbers', service.parseQuery({ min_score: '70', ranges: 'include' }, 'text'))).entries);
    expect(asked.ranges).toEqual(asked.numbers);
    await collect((await service.feed(account, 'phone-numbers', service.parseQuery({ min_score: '70' }, 'text'))).entries);
    expect(asked.ranges).toHaveLength(1);
    expect(asked.numbers).toHaveLength(2);
  });

  it('keeps the ETag of a request without ranges as it was, and gives one with them its own', async () => {
    const { repo } = rangedRepo(0);
    const key = new Uint8Array(32);
    const now = () => new Date('2026-11-23T12:34:56Z');
    const service = new FeedService(repo, undefined, undefined, now, key);
    const tag = async (query: Record<string, string>) => (await service.feed(account, 'phone-numbers', service.parseQuery(query, 'text'))).etag;
    expect(await tag({ ranges: 'exclude' })).toBe(await tag({}));
    expect(await tag({ ranges: 'include' })).not.toBe(await tag({}));
  });
});
