import { describe, expect, it } from 'vitest';
import type { Account, AccountsRepository, Client } from '../../src/domain/accounts/accounts.ts';
import { CredentialsCache } from '../../src/oauth/credentials-cache.ts';

const account: Account = { account_id: 'a1', name: 'a', plan: 'tester', trusted: false, disabled: false, created_at: '2026-11-01T00:00:00Z' };
const client: Client = { client_id: 'c1', account_id: 'a1', name: 'c', permissions: [], secret_hash: 'x', secret_version: 1, created_at: '2026-11-01T00:00:00Z' };

/** A store whose reads wait until released, counting them. */
function slowStore() {
  let reads = 0;
  let version = 1;
  const waiting: Array<() => void> = [];
  const repo = {
    findClient: async () => {
      reads++;
      const seen = version;
      await new Promise<void>((resolve) => waiting.push(resolve));
      return { ...client, secret_version: seen };
    },
    findAccount: async () => account,
  } as unknown as AccountsRepository;
  return {
    repo,
    reads: () => reads,
    release: () => waiting.splice(0).forEach((resolve) => resolve()),
    /** Newest read first: an older read then finishes last, as a slow one may. */
    releaseNewestFirst: () => waiting.splice(0).reverse().forEach((resolve) => resolve()),
    reset: () => version++,
  };
}

describe('CredentialsCache', () => {
  it('reads a client once for every request that finds its entry out of date at the same time', async () => {
    const store = slowStore();
    const cache = new CredentialsCache(store.repo, 1000);
    const many = Array.from({ length: 20 }, () => cache.entry('c1'));
    await new Promise((resolve) => setImmediate(resolve));
    store.release();
    const entries = await Promise.all(many);
    expect(store.reads()).toBe(1);
    expect(new Set(entries).size).toBe(1);
    expect(cache.fresh('c1')).toBe(entries[0]);
  });

  it('neither keeps nor lets anyone join a read that a change overtook', async () => {
    const store = slowStore();
    const cache = new CredentialsCache(store.repo, 1000);
    const before = cache.entry('c1');
    await new Promise((resolve) => setImmediate(resolve));
    // The secret is reset and this process is told while the first read is still out.
    store.reset();
    cache.clear();
    const after = cache.entry('c1');
    await new Promise((resolve) => setImmediate(resolve));
    store.releaseNewestFirst();
    expect((await before).found?.client.secret_version).toBe(1);
    expect((await after).found?.client.secret_version).toBe(2);
    expect(store.reads()).toBe(2);
    expect(cache.fresh('c1')?.found?.client.secret_version).toBe(2);
  });
});
