import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalisePhoneNumber } from '../../src/domain/phone-number.ts';
import { postEvent, sampleEvent, saveUnlimitedPlan, startHarness, type Harness, type TestAccount } from '../support/harness.ts';

const NUMBERS = ['+46812118532', '0046812118532', '+972597744894', '100', '00390662279016'];

/**
 * docs/api.md §6 for range lookups (§13) and feeds (§14): for random accounts (some trusted)
 * submitting random events, each account's range answers and feeds hold exactly the shared data
 * set and its own numbers and addresses, never another account's.
 */
describe('range lookups and feeds never reveal another account’s data, as a property', () => {
  let h: Harness;
  let run = 0;

  beforeAll(async () => {
    h = await startHarness();
    await saveUnlimitedPlan(h, 'fuzz');
  });
  afterAll(() => h?.close());

  it('each account sees exactly the shared data set and its own', async () => {
    const scenario = fc.record({
      trusted: fc.array(fc.boolean(), { minLength: 2, maxLength: 3 }),
      events: fc.array(fc.record({ by: fc.nat(2), number: fc.constantFrom(...NUMBERS), ip: fc.nat(3) }), { maxLength: 12 }),
    });
    await fc.assert(
      fc.asyncProperty(scenario, async ({ trusted, events }) => {
        // Values of this run only: earlier runs' shared data stays visible, and is left out of the comparison.
        run += 1;
        const salt = String(run).padStart(4, '0');
        const accounts: TestAccount[] = [];
        for (const t of trusted) accounts.push(await h.account({ plan: 'fuzz', trusted: t }));
        const submitted: Array<{ by: number; key: string; ip: string }> = [];
        for (const e of events) {
          const by = e.by % accounts.length;
          const number = `${e.number}${salt}`;
          const ip = `10.${run % 250}.${Math.floor(run / 250)}.${e.ip}`;
          expect((await postEvent(accounts[by]!, sampleEvent({ called_number: number, source_ip: ip }))).status).toBe(201);
          submitted.push({ by, key: normalisePhoneNumber(number)!.key, ip });
        }
        await h.settled();
        const ours = (values: string[], pattern: RegExp) => values.filter((v) => pattern.test(v)).sort();

        for (const [index, viewer] of accounts.entries()) {
          const visible = submitted.filter((s) => s.by === index || trusted[s.by]);
          const keys = [...new Set(visible.map((s) => s.key))].sort();
          const ips = [...new Set(visible.map((s) => s.ip))].sort();
          const lines = async (path: string) => (await (await viewer.api(path)).text()).split('\n').filter(Boolean);
          expect(ours(await lines('/api/feeds/phone-numbers?min_score=0'), new RegExp(`${salt}$`))).toEqual(keys);
          expect(ours(await lines('/api/feeds/ip-addresses?min_score=0'), new RegExp(`^10\\.${run % 250}\\.${Math.floor(run / 250)}\\.`))).toEqual(ips);
          for (const key of new Set(submitted.map((s) => s.key))) {
            const hash = createHash('sha256').update(key).digest('hex');
            const body = (await (await viewer.api(`/api/phone-numbers/range/${hash.slice(0, 5)}`)).json()) as { entries: Array<{ suffix: string; seen_count: number }> };
            expect(body.entries.some((e) => e.seen_count > 0 && e.suffix === hash.slice(5)), key).toBe(keys.includes(key));
          }
        }
      }),
      { numRuns: 10 },
    );
  });
});
