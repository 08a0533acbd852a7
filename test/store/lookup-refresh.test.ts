import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalisePhoneNumber } from '../../src/domain/phone-number.ts';
import { readScopesOf } from '../../src/domain/visibility.ts';
import { postEvent, sampleEvent, saveUnlimitedPlan, startHarness, type Harness, type TestAccount } from '../support/harness.ts';

const NUMBER = '+15550107001';
const KEY = normalisePhoneNumber(NUMBER)!.key;
const ADDRESS = '198.51.100.71';

/**
 * What lookups keep in memory across a fold step of this process (src/aggregates/lookup-cache.ts,
 * `refresh`): worked out again from the rows the step wrote where those alone give the answer,
 * left alone where the step wrote none of the reader's scopes, dropped otherwise; and whatever
 * is kept answers exactly as a read of the store does.
 */
describe('lookups kept across a fold', () => {
  let h: Harness;
  let fleet: TestAccount;
  let reader: TestAccount;
  let privateNode: TestAccount;

  beforeAll(async () => {
    h = await startHarness();
    const plan = await saveUnlimitedPlan(h);
    fleet = await h.account({ plan, trusted: true });
    reader = await h.account({ plan });
    privateNode = await h.account({ plan });
    expect((await postEvent(fleet, sampleEvent({ called_number: NUMBER, source_ip: ADDRESS }))).status).toBe(201);
    await h.settled();
  });
  afterAll(() => h?.close());

  const kept = (who: TestAccount, kind: 'number' | 'ip', key: string) => h.services.lookupCache.fresh(kind, key, readScopesOf(who.account));
  const ask = async (who: TestAccount) => [await (await who.api(`/api/phone-numbers/${encodeURIComponent(NUMBER)}`)).json(), await (await who.api(`/api/ip-addresses/${ADDRESS}`)).json()];
  /** The answers of `who`, from memory, then as the store has them (memory cleared). */
  async function keptAndStored(who: TestAccount): Promise<[unknown, unknown]> {
    const fromMemory = await ask(who);
    h.services.lookupCache.clear();
    return [fromMemory, await ask(who)];
  }

  it('works out a reader’s kept answers again from the shared rows a fleet’s events changed', async () => {
    await ask(reader); // read, and kept
    for (const source_ip of [ADDRESS, '198.51.100.72', '198.51.100.73']) {
      expect((await postEvent(fleet, sampleEvent({ called_number: NUMBER, source_ip, sip_method: 'OPTIONS' }))).status).toBe(201);
    }
    await h.settled();
    expect(kept(reader, 'number', KEY)?.value).toMatchObject({ seenCount: 4, sourceIpCount: 3, sipMethods: { INVITE: 1, OPTIONS: 3 } });
    expect(kept(reader, 'ip', ADDRESS)?.value).toMatchObject({ seenCount: 2, calledNumberCount: 1 });
    const [fromMemory, stored] = await keptAndStored(reader);
    expect(fromMemory).toEqual(stored);
  });

  it('leaves a reader’s answers alone when another account’s private events change only its own scope', async () => {
    await ask(reader);
    await ask(privateNode);
    const before = kept(reader, 'number', KEY);
    expect((await postEvent(privateNode, sampleEvent({ called_number: NUMBER, source_ip: '203.0.113.71' }))).status).toBe(201);
    await h.settled();
    expect(before?.value).toMatchObject({ seenCount: 4 });
    // The very value kept before: not worked out again, not read again.
    expect(kept(reader, 'number', KEY)?.value).toBe(before!.value);
    // The private account's own answer was the shared row alone; now its own scope holds a row
    // too, and their distinct union is for the store to count.
    expect(kept(privateNode, 'number', KEY)).toBeUndefined();
    const [fromMemory, stored] = await keptAndStored(privateNode);
    expect(fromMemory).toEqual(stored);
    expect((stored as Array<{ seen_count: number }>)[0]!.seen_count).toBe(5);
  });

  it('keeps nothing for keys nobody asked about', async () => {
    expect((await postEvent(fleet, sampleEvent({ called_number: '+15550107999', source_ip: '198.51.100.79' }))).status).toBe(201);
    await h.settled();
    expect(kept(reader, 'number', normalisePhoneNumber('+15550107999')!.key)).toBeUndefined();
    expect(kept(reader, 'ip', '198.51.100.79')).toBeUndefined();
  });
});
