import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_FIELDS } from '../../src/domain/events/event-fields.ts';
import { sampleEvent, saveUnlimitedPlan, startHarness, type Harness, type TestAccount } from '../support/harness.ts';

/**
 * Thousands of generated malformed requests per endpoint: never a 5xx, never a crash, every
 * error in the contract's shape, and nothing stored by a refused request.
 */
const RUNS_PER_ENDPOINT = 3400;
const PROBLEM_CODES = new Set([
  'invalid_token', 'insufficient_scope', 'plan_not_allowed', 'validation_failed', 'duplicate_event', 'invalid_phone_number',
  'invalid_ip_address', 'not_found', 'payload_too_large', 'unsupported_media_type', 'invalid_json', 'rate_limited', 'unavailable',
]);

async function expectProblemShape(res: Response) {
  expect(res.headers.get('content-type')).toContain('application/problem+json');
  const body = (await res.json()) as Record<string, unknown>;
  expect(body.status).toBe(res.status);
  expect(PROBLEM_CODES.has(body.error as string)).toBe(true);
  expect(typeof body.title).toBe('string');
  expect(typeof body.detail).toBe('string');
  expect(typeof body.type).toBe('string');
  expect(JSON.stringify(body)).not.toMatch(/node_modules|\.ts:\d+|SQLITE|syntax error|at async/i);
}

const CONTENT_TYPES = [
  'application/json', 'text/plain', 'application/x-www-form-urlencoded', undefined, 'application/xml',
  'application/json; charset=latin1', 'multipart/form-data', '*/*', 'application/JSON', ';;;',
];

/** A JSON value of any shape, or a string no JSON parser would accept. */
const anyValue = fc.oneof(fc.jsonValue(), fc.string({ unit: 'binary', maxLength: 80 }), fc.constant(undefined));

/** A valid event with some fields dropped, replaced or joined by strangers. */
const mangledEvent = fc
  .record({
    drop: fc.subarray([...EVENT_FIELDS]),
    replace: fc.dictionary(fc.constantFrom(...EVENT_FIELDS), anyValue, { maxKeys: 5 }),
    extra: fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue(), { maxKeys: 3 }),
  })
  .map(({ drop, replace, extra }) => {
    const event: Record<string, unknown> = { ...extra, ...sampleEvent(), ...replace };
    for (const field of drop) delete event[field];
    return JSON.stringify(event);
  });

const rawBody = fc.oneof(
  mangledEvent,
  fc.json(),
  fc.string({ unit: 'binary', maxLength: 300 }),
  fc.constantFrom('', '{', '[]', 'null', '{"a":1}{', '\u0000', '{"__proto__":{}}', '"\\ud800"'),
);

/** A generated value as a form field; JSON for non-strings (some have no prototype to print). */
function formValue(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
}

describe('generated malformed requests', () => {
  let h: Harness;
  let who: TestAccount;

  beforeAll(async () => {
    // Throttles off: here every failure is deliberate, and slowing would only slow the test.
    h = await startHarness({}, { throttle: { perAddress: 1e9, perClient: 1e9, freeFailures: 1e9 } });
    await saveUnlimitedPlan(h, 'fuzz');
    who = await h.account({ plan: 'fuzz' });
  });
  afterAll(() => h?.close());

  it('event intake: only 200/201 or a problem document; nothing stored unless acknowledged', async () => {
    const token = await who.token();
    const acknowledged = new Set<string>();
    await fc.assert(
      fc.asyncProperty(rawBody, fc.constantFrom(...CONTENT_TYPES), async (body, contentType) => {
        const headers: Record<string, string> = { authorization: `Bearer ${token}` };
        if (contentType) headers['content-type'] = contentType;
        const res = await fetch(`${h.url}/api/events`, { method: 'POST', headers, body: Buffer.from(body) });
        expect(res.status).toBeLessThan(500);
        if (res.status === 200 || res.status === 201) {
          const event = JSON.parse(body) as { event_uuid: string };
          acknowledged.add(event.event_uuid.toLowerCase());
          await res.arrayBuffer();
        } else {
          await expectProblemShape(res);
        }
      }),
      { numRuns: RUNS_PER_ENDPOINT },
    );
    const stored = await h.services.database.db
      .selectFrom('events')
      .select('event_uuid')
      .where('account_id', '=', who.account.account_id)
      .execute();
    expect(new Set(stored.map((r) => r.event_uuid))).toEqual(acknowledged);
  });

  it('lookups: any path answers 200, 404 or a 400 problem, never more', async () => {
    const token = await who.token();
    const pathValue = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 70 }).map(encodeURIComponent),
      fc.string({ unit: 'grapheme', maxLength: 70 }),
      fc.stringMatching(/^(%[0-9A-Fa-f]{0,2}|[+0-9a-z:@;.()# -]){1,80}$/),
    );
    await fc.assert(
      fc.asyncProperty(pathValue, fc.constantFrom('phone-numbers', 'ip-addresses'), async (value, kind) => {
        let res: Response;
        try {
          res = await fetch(`${h.url}/api/${kind}/${value}`, { headers: { authorization: `Bearer ${token}` } });
        } catch {
          return; // fetch itself refused the URL: nothing reached the server.
        }
        expect(res.status).toBeLessThan(500);
        if (res.status === 200 || res.status === 404) {
          const body = (await res.json()) as { found?: boolean; error?: string };
          // A 404 is either "not seen" or a problem for a path that is no route.
          expect(body.found === false || body.found === true || body.error === 'not_found').toBe(true);
        } else {
          expect(res.status).toBe(400);
          await expectProblemShape(res);
        }
      }),
      { numRuns: RUNS_PER_ENDPOINT },
    );
  });

  it('token endpoint: only 200 or an RFC 6749 error, and no token for bad credentials', async () => {
    const fields = fc.record(
      {
        client_id: fc.oneof(fc.constant(who.clientId), anyValue),
        client_secret: fc.oneof(fc.constant('tws_wrong'), anyValue),
        audience: fc.oneof(fc.constant('http://tollwatch.test/api'), anyValue),
        grant_type: fc.oneof(fc.constant('client_credentials'), anyValue),
      },
      { requiredKeys: [] },
    );
    const body = fc.oneof(
      fields.map((f) => ({ json: JSON.stringify(f), form: new URLSearchParams(Object.entries(f).map(([k, v]): [string, string] => [k, formValue(v)])).toString() })),
      fc.string({ unit: 'binary', maxLength: 200 }).map((s) => ({ json: s, form: s })),
    );
    const basic = fc.option(fc.string({ unit: 'binary', maxLength: 60 }).map((s) => `Basic ${Buffer.from(s).toString('base64')}`));
    await fc.assert(
      fc.asyncProperty(body, fc.constantFrom(...CONTENT_TYPES), basic, async (b, contentType, authorization) => {
        const headers: Record<string, string> = {};
        if (contentType) headers['content-type'] = contentType;
        if (authorization) headers.authorization = authorization;
        const payload = contentType?.startsWith('application/x-www-form-urlencoded') ? b.form : b.json;
        const res = await fetch(`${h.url}/oauth/token`, { method: 'POST', headers, body: Buffer.from(payload) });
        const text = await res.text();
        const seen = JSON.stringify({ status: res.status, answer: text.slice(0, 300), headers, payload: payload.slice(0, 300) });
        expect(res.status, seen).toBeLessThan(500);
        const answer = JSON.parse(text) as Record<string, unknown>;
        // No generated request carries the real secret, so none may get a token.
        expect(res.status, seen).not.toBe(200);
        expect(Object.keys(answer).sort(), seen).toEqual(['error', 'error_description']);
        expect(['invalid_request', 'invalid_client', 'unsupported_grant_type', 'invalid_target'], seen).toContain(answer.error);
      }),
      { numRuns: RUNS_PER_ENDPOINT },
    );
  });
});
