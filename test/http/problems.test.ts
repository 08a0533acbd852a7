import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROBLEMS } from '../../src/http/problem.ts';
import { startHarness, type Harness, type TestAccount } from '../support/harness.ts';

describe('problem types and methods (docs/api.md §4)', () => {
  let h: Harness;
  let who: TestAccount;

  beforeAll(async () => {
    h = await startHarness();
    who = await h.account();
  });
  afterAll(() => h?.close());

  it('gives every problem an absolute type that leads to its section of a served page', async () => {
    const res = await fetch(`${h.url}/api/phone-numbers/100`);
    const body = (await res.json()) as { type: string; error: string };
    expect(body.type).toBe('http://tollwatch.test/problems#invalid_token');
    const invalid = (await (await who.api('/api/phone-numbers/x!y')).json()) as { type: string };
    expect(invalid.type).toBe('http://tollwatch.test/problems#invalid_phone_number');

    const page = await fetch(`${h.url}/problems`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toBe("default-src 'none'; frame-ancestors 'none'");
    const html = await page.text();
    for (const [code, kind] of Object.entries(PROBLEMS)) {
      expect(html).toContain(`<section id="${code}">`);
      expect(html).toContain(`${code}: ${kind.status} ${kind.title}`);
    }
  });

  it('answers a known path asked with another method 405 with Allow, after authentication', async () => {
    const cases: Array<[string, string, string]> = [
      ['DELETE', '/api/events', 'GET, HEAD, POST'],
      ['PUT', '/api/phone-numbers/100', 'GET, HEAD'],
      ['PATCH', '/api/events/891da16a-56b1-497f-abef-ca3a2a849bea', 'GET, HEAD'],
      ['PUT', '/api/events/batch', 'GET, HEAD, POST'],
      ['DELETE', '/api/ip-addresses/lookup', 'GET, HEAD, POST'],
    ];
    for (const [method, path, allow] of cases) {
      const anonymous = await fetch(`${h.url}${path}`, { method });
      expect(anonymous.status, `${method} ${path} without credentials`).toBe(401);
      const res = await who.api(path, { method });
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.get('allow')).toBe(allow);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(await res.json()).toMatchObject({ status: 405, error: 'method_not_allowed', type: 'http://tollwatch.test/problems#method_not_allowed' });
    }
    const unknown = await who.api('/api/nothing-here', { method: 'DELETE' });
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('allow')).toBeNull();
  });
});
