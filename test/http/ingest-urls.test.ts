import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INGEST_URL_USE_RESOLUTION_MS } from '../../src/domain/events/ingest-urls.ts';
import { sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { rateLimitOf } from '../support/rate-limit.ts';
import { eventually } from '../support/eventually.ts';
import { startLoggedApp, type LoggedApp } from '../support/logged-app.ts';

const FIXTURE = new URL('../fixtures/sentrypeer-node-webhook-no-oauth.txt', import.meta.url);
const BIN = new URL('../../bin/tollwatch.js', import.meta.url).pathname;

/**
 * The recorded request of a stock node (webhook URL, no OAuth2 client) as it went on the wire,
 * aimed at another path: the head's lines end in CRLF there (the file keeps LF), and the body
 * is the recorded bytes, exactly Content-Length of them. Only the request target changes.
 */
function recordedWebhookRequest(path: string): Buffer {
  const text = readFileSync(FIXTURE, 'utf8');
  const afterMeta = text.slice(text.indexOf('\n') + 1);
  const split = afterMeta.indexOf('\n\n');
  const head = afterMeta.slice(0, split).split('\n');
  const length = Number(/^content-length:\s*(\d+)$/im.exec(head.join('\n'))![1]);
  const body = Buffer.from(afterMeta.slice(split + 2), 'utf8').subarray(0, length);
  expect(body.length).toBe(length);
  const [method, , version] = head[0]!.split(' ');
  expect(method).toBe('POST');
  head[0] = `${method} ${path} ${version}`;
  return Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'latin1'), body]);
}

/** The recorded event, as the node sent it. */
function recordedEvent(): Record<string, string> {
  const text = readFileSync(FIXTURE, 'utf8');
  return JSON.parse(text.slice(text.indexOf('\n\n') + 2).trim()) as Record<string, string>;
}

/** Writes raw bytes on a fresh TCP connection and reads one HTTP/1.1 answer. */
function rawExchange(url: string, bytes: Buffer): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(bytes));
    let received = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) return;
      const lines = received.subarray(0, end).toString('latin1').split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines.slice(1)) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
      const length = Number(headers['content-length'] ?? 0);
      if (received.length < end + 4 + length) return;
      socket.destroy();
      resolve({ status: Number(lines[0]!.split(' ')[1]), headers, body: received.subarray(end + 4, end + 4 + length).toString('utf8') });
    });
    socket.once('error', reject);
  });
}

/** The path of an issued ingest URL, to be asked of the test server instead of the public address. */
const pathOf = (ingestUrl: string) => new URL(ingestUrl).pathname;

type OpenApiAnswer = { headers?: Record<string, unknown>; content: Record<string, { schema: object }> };
type OpenApi = { paths: Record<string, Record<string, { responses: Record<string, OpenApiAnswer>; security: unknown[] }>>; components: object };

/** Headers this route sends that the document must name on each answer carrying them. */
const NAMED_HEADERS = ['api-version', 'location', 'ratelimit', 'ratelimit-policy', 'retry-after'];

describe('node ingest URLs (docs/api.md §11)', () => {
  let h: Harness;
  let owner: TestAccount;
  let doc: OpenApi;
  const ajv = new Ajv({ allErrors: true, strict: false });
  addFormats.default(ajv);

  /**
   * Checks an answer against the OpenAPI document: its status is documented, under its media
   * type, with a body the schema accepts and every header the route names documented.
   */
  async function documented(res: Response): Promise<Record<string, any>> {
    const answer = doc.paths['/ingest/{secret}']!.post!.responses[String(res.status)];
    expect(answer, `status ${res.status} is documented`).toBeDefined();
    const mediaType = (res.headers.get('content-type') ?? '').split(';')[0]!;
    const content = answer!.content[mediaType];
    expect(content, `${mediaType} is documented for ${res.status}`).toBeDefined();
    const body = (await res.json()) as Record<string, any>;
    const validate = ajv.compile({ ...content!.schema, components: doc.components });
    expect(validate(body), JSON.stringify(validate.errors)).toBe(true);
    const names = Object.keys(answer!.headers ?? {}).map((name) => name.toLowerCase());
    for (const name of NAMED_HEADERS) if (res.headers.has(name)) expect(names, `${name} on ${res.status}`).toContain(name);
    return body;
  }

  async function expectProblem(res: Response, status: number, error: string) {
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.headers.get('api-version')).toBe('1');
    const body = await documented(res);
    expect(body).toMatchObject({ status, error, type: `http://tollwatch.test/problems#${error}`, title: expect.any(String), detail: expect.any(String) });
    return body;
  }

  const ingest = (path: string, body: unknown, headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' }) =>
    fetch(`${h.url}${path}`, { method: 'POST', headers, body: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body) });

  const newUrl = async (who: TestAccount = owner, name = 'node-1') => h.services.ingestUrls.create({ accountId: who.account.account_id, name });

  beforeAll(async () => {
    h = await startHarness();
    owner = await h.account();
    doc = (await (await fetch(`${h.url}/api/openapi.json`)).json()) as OpenApi;
  });
  afterAll(() => h?.close());

  it('takes the stock node’s recorded request, byte for byte, and the account reads the event; a replay is 200', async () => {
    const issued = await newUrl();
    expect(issued.ingest_url).toMatch(/^http:\/\/tollwatch\.test\/ingest\/twi_[A-Za-z0-9_-]{43}$/);
    const request = recordedWebhookRequest(pathOf(issued.ingest_url));
    expect(request.toString('latin1')).not.toMatch(/authorization/i);

    const first = await rawExchange(h.url, request);
    expect(first.status, first.body).toBe(201);
    const event = recordedEvent();
    expect(first.headers['location']).toBe(`/api/events/${event.event_uuid}`);
    expect(first.headers['api-version']).toBe('1');
    expect(first.headers['ratelimit-policy']).toBe('"submissions";q=100000;w=3600');
    expect(JSON.parse(first.body)).toEqual({ message: expect.any(String) });

    const stored = await owner.api(`/api/events/${event.event_uuid}`);
    expect(stored.status).toBe(200);
    expect(await stored.json()).toMatchObject(event);

    // The node re-posts after a timeout; the same event again is a 200, which it accepts.
    const again = await rawExchange(h.url, request);
    expect(again.status).toBe(200);
    expect((await h.services.eventQuery.list(owner.account, {})).data.filter((e) => e.event_uuid === event.event_uuid)).toHaveLength(1);
  });

  it('answers as POST /api/events does, and the OpenAPI document says so', async () => {
    const { ingest_url } = await newUrl(owner, 'answers');
    const path = pathOf(ingest_url);
    const event = sampleEvent();
    const created = await ingest(path, event);
    expect(created.status).toBe(201);
    expect(rateLimitOf(created)).toMatchObject({ policy: 'submissions', quota: 100_000, window: 3600 });
    await documented(created);
    const replayed = await ingest(path, event, { 'content-type': 'application/json' });
    expect(replayed.status).toBe(200);
    await documented(replayed);

    // The same uuid with other content: 409, nothing changed.
    await expectProblem(await ingest(path, { ...event, called_number: '999' }), 409, 'duplicate_event');
    // Every bad field at once, in the problem shape.
    const invalid = await expectProblem(await ingest(path, { ...sampleEvent(), event_uuid: 'nope', transport_type: 'SCTP' }), 422, 'validation_failed');
    expect(invalid.errors.map((e: { field: string }) => e.field).sort()).toEqual(['event_uuid', 'transport_type']);
    expect(rateLimitOf(await ingest(path, {}))).toBeDefined();
    // Bodies and media types as on /api.
    await expectProblem(await ingest(path, '{"app_name":'), 400, 'invalid_json');
    await expectProblem(await ingest(path, ''), 400, 'invalid_json');
    await expectProblem(await ingest(path, JSON.stringify(sampleEvent()), { 'content-type': 'application/xml' }), 415, 'unsupported_media_type');
    await expectProblem(
      await ingest(path, gzipSync(JSON.stringify(sampleEvent())), { 'content-type': 'application/json', 'content-encoding': 'gzip' }),
      415,
      'unsupported_media_type',
    );
    await expectProblem(await ingest(path, JSON.stringify(sampleEvent({ sip_message: 'x'.repeat(200 * 1024) }))), 413, 'payload_too_large');
    // No content type at all is JSON too; an Authorization header is not read.
    expect((await ingest(path, sampleEvent(), { authorization: 'Bearer nonsense' })).status).toBe(201);

    const operation = doc.paths['/ingest/{secret}']!.post!;
    expect(operation.security).toEqual([]);
    expect(Object.keys(operation.responses).sort()).toEqual(['200', '201', '400', '403', '404', '409', '413', '415', '422', '429', '500', '503']);
    for (const [status, answer] of Object.entries(operation.responses)) {
      expect(Object.keys(answer.content), status).toEqual([Number(status) < 300 ? 'application/json' : 'application/problem+json']);
      expect(Object.keys(answer.headers ?? {}), status).toContain('API-Version');
    }
  });

  it('answers an unknown, malformed or revoked secret with one 404, and a revocation bites at once', async () => {
    const issued = await newUrl(owner, 'to revoke');
    const path = pathOf(issued.ingest_url);
    expect((await ingest(path, sampleEvent())).status).toBe(201);
    const revoked = await h.services.ingestUrls.revoke(issued.id);
    expect(revoked.revoked_at).toEqual(expect.any(String));
    const refused = await expectProblem(await ingest(path, sampleEvent()), 404, 'not_found');

    const unknown = await expectProblem(await ingest(`/ingest/twi_${'A'.repeat(43)}`, sampleEvent()), 404, 'not_found');
    // Nothing tells a revoked URL from one never issued.
    expect(refused).toEqual(unknown);
    for (const path of ['/ingest/nope', '/ingest/', `/ingest/twi_${'A'.repeat(600)}`, '/ingest/%zz', `/ingest/twi_${'A'.repeat(43)}/more`]) {
      const res = await ingest(path, sampleEvent());
      expect(res.status, path).toBe(404);
      expect(await res.json(), path).toEqual(unknown);
    }
    // Another method on an ingest URL path is 405, whatever the secret.
    const get = await fetch(`${h.url}${path}`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect(get.headers.get('api-version')).toBe('1');
    expect(await get.json()).toMatchObject({ status: 405, error: 'method_not_allowed' });
    // Revoking twice changes nothing.
    expect(await h.services.ingestUrls.revoke(issued.id)).toEqual(revoked);
  });

  it('refuses a URL of a disabled account at once, and of an account whose plan no longer submits, before the body', async () => {
    const who = await h.account();
    const { ingest_url } = await newUrl(who);
    const path = pathOf(ingest_url);
    await h.services.accounts.setDisabled(who.account.account_id, true);
    await expectProblem(await ingest(path, sampleEvent()), 404, 'not_found');
    await h.services.accounts.setDisabled(who.account.account_id, false);
    expect((await ingest(path, sampleEvent())).status).toBe(201);

    await h.services.accounts.setPlan(who.account.account_id, 'business');
    // Permission comes before content: a body it may not send anyway is not judged.
    await expectProblem(await ingest(path, 'not json'), 403, 'plan_not_allowed');
  });

  it('creates URLs only for accounts whose plan may submit', async () => {
    for (const plan of ['tester', 'business', 'service_provider']) {
      const who = await h.account({ plan });
      await expect(newUrl(who)).rejects.toMatchObject({ code: 'plan_not_allowed' });
    }
    await expect(h.services.ingestUrls.create({ accountId: crypto.randomUUID(), name: 'x' })).rejects.toMatchObject({ code: 'not_found' });
    await expect(h.services.ingestUrls.create({ accountId: owner.account.account_id, name: ' \u001b ' })).rejects.toMatchObject({ code: 'validation_failed' });
  });

  it('delivers to its own account only: another account never sees the events', async () => {
    const other = await h.account();
    const { ingest_url } = await newUrl(owner, 'private');
    const event = sampleEvent();
    expect((await ingest(pathOf(ingest_url), event)).status).toBe(201);
    expect((await other.api(`/api/events/${event.event_uuid}`)).status).toBe(404);
    expect(((await (await other.api('/api/events')).json()) as { data: unknown[] }).data).toEqual([]);
    // The same uuid through the other account's own URL is no conflict: its own event.
    const theirs = await h.services.ingestUrls.create({ accountId: other.account.account_id, name: 'theirs' });
    expect((await ingest(pathOf(theirs.ingest_url), { ...event, called_number: '123' })).status).toBe(201);
    expect(await (await owner.api(`/api/events/${event.event_uuid}`)).json()).toMatchObject({ called_number: event.called_number });
  });

  it('counts each event against the plan’s submission allowance, with the RateLimit fields', async () => {
    await h.services.plans.save({ name: 'tiny_submitter', maySubmit: true, lookups: { limit: 5, windowSeconds: 60 }, submissions: { limit: 2, windowSeconds: 60 }, maxClients: 1, eventReads: { limit: 1e9, windowSeconds: 3600 } });
    const who = await h.account({ plan: 'tiny_submitter' });
    const path = pathOf((await newUrl(who)).ingest_url);
    for (let i = 0; i < 2; i++) expect((await ingest(path, sampleEvent())).status).toBe(201);
    const refused = await ingest(path, sampleEvent());
    expect(rateLimitOf(refused)).toMatchObject({ policy: 'submissions', quota: 2, window: 60, remaining: 0 });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    await expectProblem(refused, 429, 'rate_limited');
    // The allowance is the account's, whichever way its events come.
    const viaApi = await who.api('/api/events', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(sampleEvent()) });
    expect(viaApi.status).toBe(429);
  });

  it('lists URLs with their last use, written at most once a minute, never their secrets', async () => {
    const who = await h.account();
    const issued = await newUrl(who, 'listed');
    const unused = await newUrl(who, 'unused');
    const path = pathOf(issued.ingest_url);
    expect((await ingest(path, sampleEvent())).status).toBe(201);
    const lastUse = async () => (await h.services.ingestUrls.list(who.account.account_id)).find((u) => u.id === issued.id)!.last_used_at;
    // The use is written without holding the answer.
    for (let i = 0; i < 50 && (await lastUse()) === null; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    const first = await lastUse();
    expect(first).toEqual(expect.any(String));
    expect(Date.now() - Date.parse(first!)).toBeLessThan(INGEST_URL_USE_RESOLUTION_MS);
    expect((await ingest(path, sampleEvent())).status).toBe(201);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await lastUse()).toBe(first);

    const listed = await h.services.ingestUrls.list(who.account.account_id);
    // Oldest first; two made in the same millisecond come by id, so only the set is held here.
    expect(listed.map((u) => u.name).sort()).toEqual(['listed', 'unused']);
    expect(listed.find((u) => u.id === unused.id)).toEqual({ id: unused.id, account_id: who.account.account_id, name: 'unused', created_at: unused.created_at, last_used_at: null, revoked_at: null });
    expect(JSON.stringify(listed)).not.toContain(pathOf(issued.ingest_url).slice('/ingest/'.length));
  });

  it('audits creation and revocation, and never writes the secret anywhere but its hash', async () => {
    const issued = await newUrl(owner, 'audited');
    const secret = pathOf(issued.ingest_url).slice('/ingest/'.length);
    await h.services.ingestUrls.revoke(issued.id);
    await ingest(pathOf(issued.ingest_url), sampleEvent());
    // The refusal is audited without holding the answer.
    const about = await eventually(
      'the refusal audited',
      // In the order written: PostgreSQL returns rows without an `order by` in whatever order its heap holds them.
      async () => (await h.services.database.db.selectFrom('audit_log').selectAll().where('account_id', '=', owner.account.account_id).orderBy('id').execute()).filter((r) => r.detail?.includes(issued.id)),
      (rows) => rows.length >= 3,
    );
    expect(about.map((r) => r.action)).toEqual(['ingest_url.created', 'ingest_url.revoked', 'api.auth_failed']);
    expect(JSON.parse(about[0]!.detail!)).toEqual({ ingest_url_id: issued.id, name: 'audited' });
    expect(JSON.parse(about[2]!.detail!)).toEqual({ reason: 'ingest url revoked', path: '/ingest/{secret}', ingest_url_id: issued.id });
    const everything = JSON.stringify(await h.services.database.db.selectFrom('audit_log').selectAll().execute());
    expect(everything).not.toContain(secret);
    const stored = await h.services.database.db.selectFrom('ingest_urls').selectAll().where('id', '=', issued.id).executeTakeFirstOrThrow();
    expect(JSON.stringify(stored)).not.toContain(secret);
  });

  it('is refused at once when the operator CLI revokes it from another process', async () => {
    const issued = await newUrl(owner, 'cli-revoked');
    const path = pathOf(issued.ingest_url);
    expect((await ingest(path, sampleEvent())).status).toBe(201);
    const run = spawnSync(process.execPath, [BIN, '--json', 'ingest-urls', 'revoke', issued.id], {
      env: { ...process.env, DATABASE_URL: h.config.databaseUrl, LOG_LEVEL: 'silent' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toMatchObject({ id: issued.id, revoked_at: expect.any(String) });
    expect((await ingest(path, sampleEvent())).status).toBe(404);
  });
});

describe('failed ingest secrets are throttled (docs/api.md §2, §11)', () => {
  it('slows nothing valid: 404 up to the allowance, then 429 for the address, shared with /api failures', async () => {
    const h = await startHarness({}, { throttle: { perAddress: 3, perClient: 1000, freeFailures: 100 } });
    try {
      const who = await h.account();
      const good = new URL((await h.services.ingestUrls.create({ accountId: who.account.account_id, name: 'n' })).ingest_url).pathname;
      const guess = (n: number) =>
        fetch(`${h.url}/ingest/twi_${String(n).padStart(43, 'x')}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(sampleEvent()) });
      expect((await guess(1)).status).toBe(404);
      expect((await guess(2)).status).toBe(404);
      // One counter per address, whichever credential failed.
      expect((await fetch(`${h.url}/api/events`, { headers: { authorization: 'Bearer forged' } })).status).toBe(401);
      const refused = await guess(3);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(refused.headers.get('content-type')).toContain('application/problem+json');
      expect(await refused.json()).toMatchObject({ status: 429, error: 'rate_limited' });
      // A valid URL is honoured from that address all the same.
      const ok = await fetch(`${h.url}${good}`, { method: 'POST', body: JSON.stringify(sampleEvent()) });
      expect(ok.status).toBe(201);
      // Audit rows are written without holding the answers: wait for them, and take them in any order.
      const actions = async () =>
        (await h.services.database.db.selectFrom('audit_log').select('action').where('action', 'in', ['api.auth_failed', 'auth.throttled']).execute()).map((r) => r.action).sort();
      await expect.poll(actions).toEqual(['api.auth_failed', 'api.auth_failed', 'api.auth_failed', 'auth.throttled']);
    } finally {
      await h.close();
    }
  });
});

describe('logs never hold an ingest secret', () => {
  let h: Harness;
  let logged: LoggedApp;
  let url: string;
  let lines: string[];

  beforeAll(async () => {
    h = await startHarness();
    logged = await startLoggedApp(h, 'debug');
    ({ url, lines } = logged);
  });
  afterAll(async () => {
    await logged?.close();
    await h?.close();
  });

  it('redacts the secret from request lines, whatever the answer', async () => {
    const who = await h.account();
    const issued = await h.services.ingestUrls.create({ accountId: who.account.account_id, name: 'logged' });
    const path = new URL(issued.ingest_url).pathname;
    const secret = path.slice('/ingest/'.length);
    expect((await fetch(`${url}${path}?x=1`, { method: 'POST', body: JSON.stringify(sampleEvent()) })).status).toBe(201);
    expect((await fetch(`${url}${path}`, { method: 'POST', body: '{' })).status).toBe(400);
    await h.services.ingestUrls.revoke(issued.id);
    expect((await fetch(`${url}${path}`, { method: 'POST', body: '{}' })).status).toBe(404);
    expect((await fetch(`${url}${path}`)).status).toBe(405);
    expect((await fetch(`${url}/Ingest/${secret}`, { method: 'POST' })).status).toBe(404);
    // Every answer logged: five requests, five completions.
    const text = await eventually('five requests logged as completed', () => lines.join(''), (t) => (t.match(/"msg":"request completed"/g) ?? []).length >= 5);
    expect(text).toContain('"url":"/ingest/[redacted]?x=1"');
    expect(text).not.toContain(secret);
  });
});
