import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalisePhoneNumber } from '../../src/domain/phone-number.ts';
import { postEvent, sampleEvent, saveUnlimitedPlan, startHarness, type Harness, type TestAccount } from '../support/harness.ts';

const NUMBERS = ['+46812118532', '0046812118532', '01146812118532', '+972597744894', '100', '00390662279016', '+390662279016'];
const ADDRESSES = ['203.0.113.1', '203.0.113.2', '2001:db8::1', '198.51.100.9'];
const METHODS = ['INVITE', 'OPTIONS', 'REGISTER'];

interface Submitted {
  by: number;
  uuid: string;
  number: string;
  ip: string;
  method: string;
}

/**
 * A model of docs/api.md §6: for random accounts (some trusted) submitting random events, every
 * lookup and query answers exactly what the shared data set plus the caller's own events say,
 * and never reveals another account's events.
 */
describe('cross-account isolation, as a property', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness();
    await saveUnlimitedPlan(h, 'fuzz');
  });
  afterAll(() => h?.close());

  it('no answer ever reveals another account’s private data', async () => {
    const scenario = fc.record({
      trusted: fc.array(fc.boolean(), { minLength: 2, maxLength: 4 }),
      events: fc.array(
        fc.record({
          by: fc.nat(3),
          number: fc.constantFrom(...NUMBERS),
          ip: fc.constantFrom(...ADDRESSES),
          method: fc.constantFrom(...METHODS),
          reuseUuidOf: fc.option(fc.nat(20), { nil: undefined }),
        }),
        { maxLength: 20 },
      ),
    });

    await fc.assert(
      fc.asyncProperty(scenario, async ({ trusted, events }) => {
        // Fresh accounts per run; the shared data set is made unique per run by fresh numbers.
        const salt = String(Math.floor(Math.random() * 1e6)).padStart(6, '0');
        const accounts: TestAccount[] = [];
        for (const t of trusted) accounts.push(await h.account({ plan: 'fuzz', trusted: t }));
        const saltNumber = (n: string) => `${n}${salt}`;
        const submitted: Submitted[] = [];
        for (const e of events) {
          const by = e.by % accounts.length;
          // Reusing another event's uuid from another account must not collide.
          const reused = e.reuseUuidOf !== undefined ? submitted[e.reuseUuidOf % Math.max(1, submitted.length)] : undefined;
          const uuid = reused && reused.by !== by ? reused.uuid : crypto.randomUUID();
          if (submitted.some((s) => s.by === by && s.uuid === uuid)) continue;
          const number = saltNumber(e.number);
          const res = await postEvent(accounts[by]!, sampleEvent({ event_uuid: uuid, called_number: number, source_ip: e.ip, sip_method: e.method }));
          expect(res.status).toBe(201);
          submitted.push({ by, uuid, number, ip: e.ip, method: e.method });
        }
        // Accounts read each other's shared events once folded in (docs/api.md §7).
        await h.settled();

        for (const [index, viewer] of accounts.entries()) {
          const visible = submitted.filter((s) => s.by === index || trusted[s.by]);
          for (const number of new Set(NUMBERS.map(saltNumber))) {
            const key = normalisePhoneNumber(number)!.key;
            const seen = visible.filter((s) => normalisePhoneNumber(s.number)!.key === key);
            const res = await viewer.api(`/api/phone-numbers/${encodeURIComponent(number)}`);
            const body = (await res.json()) as Record<string, unknown>;
            if (seen.length === 0) {
              expect(res.status).toBe(404);
              continue;
            }
            expect(res.status).toBe(200);
            expect(body.seen_count).toBe(seen.length);
            expect(body.source_ip_count).toBe(new Set(seen.map((s) => s.ip)).size);
            const methods: Record<string, number> = {};
            for (const s of seen) methods[s.method] = (methods[s.method] ?? 0) + 1;
            expect(body.sip_methods).toEqual(methods);
            expect([...(body.matched_forms as string[])].sort()).toEqual([...new Set(seen.map((s) => s.number))].sort());
          }
          // Own events: exactly the viewer's, never another's, even under a shared uuid.
          const page = (await (await viewer.api('/api/events?limit=1000')).json()) as { data: Array<{ event_uuid: string; called_number: string }> };
          const mine = submitted.filter((s) => s.by === index);
          expect(page.data.map((e) => `${e.event_uuid}|${e.called_number}`).sort()).toEqual(mine.map((s) => `${s.uuid}|${s.number}`).sort());
          for (const other of submitted.filter((s) => s.by !== index && !mine.some((m) => m.uuid === s.uuid))) {
            expect((await viewer.api(`/api/events/${other.uuid}`)).status).toBe(404);
          }
        }
      }),
      { numRuns: 25 },
    );
  });
});
