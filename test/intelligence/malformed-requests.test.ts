import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { saveUnlimitedPlan, startHarness, type Harness, type TestAccount } from '../support/harness.ts';

/** An answer that is a problem document of `code`, leaking nothing of the server's insides. */
async function expectProblem(res: Response, code: string) {
  expect(res.headers.get('content-type')).toContain('application/problem+json');
  const body = (await res.json()) as Record<string, unknown>;
  expect(body).toMatchObject({ status: res.status, error: code, title: expect.any(String), detail: expect.any(String), type: expect.any(String) });
  expect(JSON.stringify(body)).not.toMatch(/node_modules|\.ts:\d+|SQLITE|syntax error|at async/i);
}

/** Generated range prefixes and feed queries: only the documented answers, never a 5xx (docs/api.md §13, §14). */
describe('generated malformed range lookups and feed queries', () => {
  let h: Harness;
  let who: TestAccount;

  beforeAll(async () => {
    h = await startHarness();
    who = await h.account({ plan: await saveUnlimitedPlan(h, 'fuzz') });
  });
  afterAll(() => h?.close());

  it('a range prefix answers 200 for 5 hex digits and 400 invalid_range_prefix for anything else', async () => {
    const token = await who.token();
    const value = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 20 }).map(encodeURIComponent),
      fc.stringMatching(/^(%[0-9A-Fa-f]{0,2}|[0-9a-gA-G+ -]){1,8}$/),
      fc.stringMatching(/^[0-9a-fA-F]{5}$/),
    );
    await fc.assert(
      fc.asyncProperty(value, async (prefix) => {
        let res: Response;
        try {
          res = await fetch(`${h.url}/api/phone-numbers/range/${prefix}`, { headers: { authorization: `Bearer ${token}` } });
        } catch {
          return; // fetch refused the URL: nothing reached the server.
        }
        // The server reads the path decoded: `A%300Aa` is the prefix `A00Aa`.
        let decoded: string | undefined;
        try {
          decoded = decodeURIComponent(prefix);
        } catch {
          decoded = undefined;
        }
        if (decoded !== undefined && /^[0-9a-fA-F]{5}$/.test(decoded)) {
          expect(res.status).toBe(200);
          expect(((await res.json()) as { entries: unknown[] }).entries).toHaveLength(32);
        } else if (res.status === 404) {
          // An empty value or one with a slash names no range route at all.
          expect(prefix === '' || decodeURIComponent(prefix).includes('/') || prefix.includes('/')).toBe(true);
        } else {
          expect(res.status).toBe(400);
          await expectProblem(res, 'invalid_range_prefix');
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a feed query answers 200 or 422 validation_failed, never more', async () => {
    const token = await who.token();
    const param = fc.tuple(fc.constantFrom('min_score', 'since', 'format', 'x', 'min_score[]'), fc.oneof(fc.string({ maxLength: 12 }), fc.integer({ min: -5, max: 200 }).map(String)));
    await fc.assert(
      fc.asyncProperty(fc.array(param, { maxLength: 4 }), fc.constantFrom('phone-numbers', 'ip-addresses'), async (params, kind) => {
        const query = new URLSearchParams(params).toString();
        const res = await fetch(`${h.url}/api/feeds/${kind}?${query}`, { headers: { authorization: `Bearer ${token}` } });
        if (res.status === 200) {
          await res.text();
          return;
        }
        expect(res.status).toBe(422);
        await expectProblem(res, 'validation_failed');
      }),
      { numRuns: 300 },
    );
  });
});
