import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postEvent, sampleEvent, saveUnlimitedPlan, startHarness, type Harness, type TestAccount } from '../support/harness.ts';

const ADDRESSES = ['203.0.113.1', '203.0.113.2', '2001:db8::1'];
const METHODS = ['INVITE', 'OPTIONS'];
const NODES = ['732e7f50-637d-4fde-81e0-5c32f1bb5a92', 'a7c3e0de-0000-4000-8000-000000000001'];

/**
 * docs/api.md §6 for number ranges: for random accounts (some trusted) submitting random events to
 * numbers of one block, in any international form, the range every account is answered with
 * counts exactly what the shared data set plus its own events hold (distinct numbers, sources,
 * nodes, INVITEs), and nothing at all when neither holds any.
 */
describe('range evidence isolation, as a property', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness();
    await saveUnlimitedPlan(h, 'fuzz');
  });
  afterAll(() => h?.close());

  it('no range answer counts another account’s private events, and each counts all the caller may see', async () => {
    const scenario = fc.record({
      trusted: fc.array(fc.boolean(), { minLength: 2, maxLength: 3 }),
      events: fc.array(
        fc.record({
          by: fc.nat(2),
          digits: fc.integer({ min: 0, max: 5 }),
          international: fc.constantFrom('+', '00'),
          ip: fc.constantFrom(...ADDRESSES),
          method: fc.constantFrom(...METHODS),
          node: fc.constantFrom(...NODES),
        }),
        { maxLength: 12 },
      ),
    });
    await fc.assert(
      fc.asyncProperty(scenario, async ({ trusted, events }) => {
        // A fresh block per run: 9 digits, the range `+<prefix>`, numbers `+<prefix>NN`.
        const prefix = `4420${String(Math.floor(Math.random() * 1e5)).padStart(5, '0')}`;
        const accounts: TestAccount[] = [];
        for (const t of trusted) accounts.push(await h.account({ plan: 'fuzz', trusted: t }));
        const submitted: Array<{ by: number; key: string; ip: string; method: string; node: string }> = [];
        for (const e of events) {
          const by = e.by % accounts.length;
          const tail = String(e.digits).padStart(2, '0');
          const res = await postEvent(accounts[by]!, sampleEvent({ called_number: `${e.international}${prefix}${tail}`, source_ip: e.ip, sip_method: e.method, created_by_node_id: e.node }));
          expect(res.status).toBe(201);
          submitted.push({ by, key: `+${prefix}${tail}`, ip: e.ip, method: e.method, node: e.node });
        }
        await h.settled();
        for (const [index, viewer] of accounts.entries()) {
          const visible = submitted.filter((s) => s.by === index || trusted[s.by]);
          const body = (await (await viewer.api(`/api/phone-numbers/%2B${prefix}99`)).json()) as { range?: { prefix: string; numbers_seen: number; reasons: string[] } };
          if (visible.length === 0) {
            expect(body).not.toHaveProperty('range');
            continue;
          }
          const distinct = (pick: (s: (typeof visible)[number]) => string) => new Set(visible.map(pick)).size;
          const invites = visible.filter((s) => s.method === 'INVITE').length;
          expect(body.range!.prefix).toBe(`+${prefix}`);
          expect(body.range!.numbers_seen).toBe(distinct((s) => s.key));
          const plural = (n: number, one: string, many: string) => (n === 1 ? one : many).replace('#', String(n));
          expect(body.range!.reasons.slice(0, 4)).toEqual([
            plural(distinct((s) => s.key), '# number of the range seen', '# distinct numbers of the range seen'),
            plural(distinct((s) => s.ip), 'called from # distinct source address', 'called from # distinct source addresses'),
            plural(distinct((s) => s.node), 'seen by # honeypot node', 'seen by # honeypot nodes'),
            invites > 0 ? plural(invites, '# INVITE attempt, not only OPTIONS scans', '# INVITE attempts, not only OPTIONS scans') : 'scans only, no INVITE attempts',
          ]);
        }
      }),
      { numRuns: 15 },
    );
  });
});
