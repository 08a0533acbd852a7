import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postEvent, sampleEvent, startHarness, type Harness } from '../support/harness.ts';

/**
 * Lookups answer from memory for a short while (TOLLWATCH_LOOKUP_CACHE_MS; docs/api.md §7): an
 * event stored by this instance is seen at once, one stored by another process within that time.
 */
describe('lookup freshness', () => {
  const CACHE_MS = 1500;
  let first: Harness;
  let second: Harness;

  beforeAll(async () => {
    first = await startHarness({ TOLLWATCH_LOOKUP_CACHE_MS: String(CACHE_MS) });
    second = await startHarness({ DATABASE_URL: first.config.databaseUrl, TOLLWATCH_LOOKUP_CACHE_MS: String(CACHE_MS) });
  });
  afterAll(async () => {
    await second.app.close();
    await second.services.close();
    await first.close();
  });

  /** A request to the second instance with a token of an account made on the first. */
  const onSecond = async (path: string, token: string) => fetch(`${second.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  const seenCount = async (res: Response) => (res.status === 200 ? ((await res.json()) as { seen_count: number }).seen_count : res.status);

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

  it('sees an event stored by another process within TOLLWATCH_LOOKUP_CACHE_MS', async () => {
    const who = await first.account();
    const number = `+4420${Math.floor(Math.random() * 1e8)}`;
    const path = `/api/phone-numbers/${encodeURIComponent(number)}`;
    const token = await who.token();
    const asked = Date.now();
    expect((await onSecond(path, token)).status).toBe(404);
    // The entry was kept between these two moments.
    const answered = Date.now();
    expect((await postEvent(who, sampleEvent({ called_number: number }))).status).toBe(201);
    // The second instance was not told: it answers from memory until its entry expires…
    if (Date.now() - asked < CACHE_MS - 200) expect((await onSecond(path, token)).status).toBe(404);
    // …and from the store once it has.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, answered + CACHE_MS + 1 - Date.now())));
    expect(await seenCount(await onSecond(path, token))).toBe(1);
  });
});
