import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postEvent, sampleEvent, startHarness, type Harness } from '../support/harness.ts';

/**
 * Lookups answer from memory (docs/api.md §7): an event stored by this instance is seen at once,
 * one stored and folded by another process within 1 s, although the instances here keep what
 * they read for a minute (TOLLWATCH_LOOKUP_CACHE_MS): each learns from the fold's position what
 * others folded, and forgets everything when another process rebuilds the aggregates.
 */
describe('lookup freshness', () => {
  const CACHE_MS = 60_000;
  /** Within the contract's 1 s with room for a loaded machine; far below the cache's minute. */
  const SEEN_WITHIN_MS = 3000;
  let first: Harness;
  let second: Harness;

  beforeAll(async () => {
    first = await startHarness({ TOLLWATCH_LOOKUP_CACHE_MS: String(CACHE_MS) });
    second = await startHarness({ DATABASE_URL: first.config.databaseUrl, TOLLWATCH_LOOKUP_CACHE_MS: String(CACHE_MS) });
  });
  afterAll(async () => {
    await second.app.close();
    await second.services.close();
    await first?.close();
  });

  /** A request to the second instance with a token of an account made on the first. */
  const onSecond = async (path: string, token: string) => fetch(`${second.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  const seenCount = async (res: Response) => (res.status === 200 ? ((await res.json()) as { seen_count: number }).seen_count : res.status);
  /** Asks until the answer is `expected` or SEEN_WITHIN_MS have passed; the last answer. */
  const eventually = async (ask: () => Promise<number>, expected: number) => {
    const until = Date.now() + SEEN_WITHIN_MS;
    let answer = await ask();
    while (answer !== expected && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      answer = await ask();
    }
    return answer;
  };

  /** An account's event on a new number, folded in and answered (so kept) by the second instance. */
  const seenOnceBySecond = async () => {
    const who = await first.account();
    const number = `+4420${Math.floor(Math.random() * 1e8)}`;
    const token = await who.token();
    const seenOnSecond = async () => seenCount(await onSecond(`/api/phone-numbers/${encodeURIComponent(number)}`, token));
    // Never seen: answered from the second instance's known keys once loaded (by its lookups
    // of earlier tests), which must then learn of the number from the first instance's fold.
    expect(await seenOnSecond()).toBe(404);
    expect((await postEvent(who, sampleEvent({ called_number: number }))).status).toBe(201);
    expect(await eventually(seenOnSecond, 1)).toBe(1);
    return { who, number, seenOnSecond };
  };

  it('sees an event at once on the instance that stored it, numbers and addresses alike', async () => {
    const who = await first.account();
    const number = `+4420${Math.floor(Math.random() * 1e8)}`;
    const path = `/api/phone-numbers/${encodeURIComponent(number)}`;
    const address = `/api/ip-addresses/192.0.2.${Math.floor(Math.random() * 250)}`;
    // Both answers are kept in memory now: "not seen".
    expect((await who.api(path)).status).toBe(404);
    expect((await who.api(address)).status).toBe(404);
    const ip = address.slice(address.lastIndexOf('/') + 1);
    expect((await postEvent(who, sampleEvent({ called_number: number, source_ip: ip }))).status).toBe(201);
    expect(await seenCount(await who.api(path))).toBe(1);
    expect(await seenCount(await who.api(address))).toBe(1);
    // A batch too.
    const batch = [sampleEvent({ called_number: number, source_ip: ip }), sampleEvent({ called_number: number, source_ip: ip })];
    expect((await who.api('/api/events/batch', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(batch) })).status).toBe(200);
    expect(await seenCount(await who.api(path))).toBe(3);
    expect(await seenCount(await who.api(address))).toBe(3);
  });

  it('sees an event that another instance stored and folded within 1 s, though it keeps answers for a minute', async () => {
    const { who, number, seenOnSecond } = await seenOnceBySecond();
    // Kept in the second instance's memory now; the first stores and folds another event.
    expect(await seenOnSecond()).toBe(1);
    expect((await postEvent(who, sampleEvent({ called_number: number }))).status).toBe(201);
    // Folded by the first at once, before the second's next turn could fold it itself.
    await first.services.aggregateFolder.settle();
    expect(await eventually(seenOnSecond, 2)).toBe(2);
  });

  it('forgets everything it kept when another process rebuilds the aggregates', async () => {
    const { who, seenOnSecond } = await seenOnceBySecond();
    // The event goes (as a retention run removes events) and the first process rebuilds: the
    // fold's position does not move, yet the number's aggregate is gone.
    await first.services.database.db.deleteFrom('events').where('account_id', '=', who.account.account_id).execute();
    await first.services.rebuildAggregates();
    expect(await eventually(seenOnSecond, 404)).toBe(404);
  });
});
