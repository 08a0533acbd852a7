import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPORT_ALLOWANCE } from '../../src/limits/plan-limiter.ts';
import { REPORTED_CEILING } from '../../src/domain/intelligence/scores.ts';
import { numberHash } from '../../src/domain/lookups/number-hash.ts';
import { postEvent, sampleEvent, saveUnlimitedPlan, startHarness, within, type Harness, type TestAccount } from '../support/harness.ts';
import { cli, spawnCli } from '../support/server-process.ts';
import { signedIn } from '../dashboard/web-client.ts';

type Json = Record<string, any>;

const json = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const NODES = ['732e7f50-637d-4fde-81e0-5c32f1bb5a92', '0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9'];
const nodeTime = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

/** Six INVITEs to `number` from three addresses under `sources` and two nodes, an hour ago: a score over 50. */
function probes(number: string, sources: string): Json[] {
  const at = Date.now() - 3_600_000;
  return Array.from({ length: 6 }, (_, j) =>
    sampleEvent({ called_number: number, source_ip: `${sources}.${j % 3}`, sip_method: 'INVITE', created_by_node_id: NODES[j % 2], event_timestamp: nodeTime(at + j) }),
  );
}

async function expectProblem(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = (await res.json()) as { error: string; errors?: Array<{ field: string; message: string }> };
  expect(body.error).toBe(code);
  return body;
}

const HELD = /^reported as a false positive by 1 account; accepted by the operator/;

/**
 * False-positive reports (docs/api.md §17, docs/scoring.md "Reports"): a client reports, the
 * operator decides in the CLI (another process) or the dashboard, and only an accepted report
 * changes the shared answer, in every output that scores.
 */
describe('false-positive reports', () => {
  let h: Harness;
  /** The shared data set: a trusted account. */
  let fleet: TestAccount;
  /** The PBX that reports, with the default permissions of a new client. */
  let reporter: TestAccount;
  /** Another PBX, which reports nothing and looks the same values up. */
  let other: TestAccount;

  beforeAll(async () => {
    // Kept for 10 minutes: a decision must reach lookups by its notice, not by the bound.
    h = await startHarness({}, { acceptedReportsTtlMs: 600_000 });
    const unlimited = await saveUnlimitedPlan(h);
    fleet = await h.account({ trusted: true, plan: unlimited });
    reporter = await h.account({ plan: unlimited });
    other = await h.account({ plan: unlimited });
    for (const [number, sources] of [
      ['+46812118532', '203.0.113'],
      ['+46812118533', '198.51.100'],
      ['+46812118534', '192.0.2'],
    ] as const) {
      for (const event of probes(number, sources)) expect((await postEvent(fleet, event)).status).toBe(201);
    }
    await h.settled();
  });
  afterAll(() => h?.close());

  const lookup = async (who: TestAccount, number: string) => (await (await who.api(`/api/phone-numbers/${encodeURIComponent(number)}`)).json()) as Json;
  const feed = (who: TestAccount, query: string) => who.api(`/api/feeds/phone-numbers?format=json&${query}`);
  const feedEntries = async (who: TestAccount, query: string) => ((await (await feed(who, query)).json()) as { entries: Json[] }).entries;

  it('refuses a client without write:reports with the insufficient_scope problem, storing nothing', async () => {
    const lookupsOnly = await h.account({ permissions: ['read:phone-numbers'] });
    const res = await lookupsOnly.api('/api/reports', json({ phone_number: '+46812118532', reason: 'own_number' }));
    await expectProblem(res, 403, 'insufficient_scope');
    expect(res.headers.get('www-authenticate')).toContain('scope="write:reports"');
    await expectProblem(await lookupsOnly.api('/api/reports'), 403, 'insufficient_scope');
    expect(await h.services.reports.listOwn(lookupsOnly.account.account_id)).toEqual([]);
  });

  it('refuses bad bodies with 422 naming each field, storing nothing', async () => {
    const cases: Array<[unknown, string[]]> = [
      [{ reason: 'own_number' }, ['phone_number']],
      [{ phone_number: 'x!y', reason: 'own_number' }, ['phone_number']],
      [{ ip_address: '999.1.1.1', reason: 'customer' }, ['ip_address']],
      [{ phone_number: '+46812118532', ip_address: '203.0.113.0', reason: 'customer' }, ['ip_address']],
      [{ phone_number: '+46812118532' }, ['reason']],
      [{ phone_number: '+46812118532', reason: 'because' }, ['reason']],
      [{ phone_number: '+46812118532', reason: 'other', note: 'x'.repeat(501) }, ['note']],
      [{ phone_number: '+46812118532', reason: 'other', note: 42 }, ['note']],
      [{ phone_number: 46812118532, reason: 'other', colour: 'red' }, ['colour', 'phone_number']],
      [[{ phone_number: '+46812118532', reason: 'other' }], ['(body)']],
    ];
    for (const [body, fields] of cases) {
      const problem = await expectProblem(await reporter.api('/api/reports', json(body)), 422, 'validation_failed');
      expect(problem.errors!.map((e) => e.field).sort(), JSON.stringify(body)).toEqual(fields);
    }
    await expectProblem(await reporter.api('/api/reports', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' }), 400, 'invalid_json');
    expect(await h.services.reports.listOwn(reporter.account.account_id)).toEqual([]);
  });

  it('stores a report pending, normalised as lookups normalise, idempotent while pending, and audited once', async () => {
    const hostile = '<script>alert(1)</script>\u202e\u001b[31m';
    const created = await reporter.api('/api/reports', json({ phone_number: 'tel:0046 8 121 185 32', reason: 'own_number', note: hostile }));
    expect(created.status).toBe(201);
    expect(created.headers.get('ratelimit-policy')).toBe(`"reports";q=${REPORT_ALLOWANCE.limit};w=${REPORT_ALLOWANCE.windowSeconds}`);
    const report = (await created.json()) as Json;
    expect(report).toMatchObject({ phone_number: '+46812118532', reason: 'own_number', note: hostile, state: 'pending', decided_at: null, decision_note: null });
    expect(report.id).toMatch(/^[0-9a-f-]{36}$/);
    // The same value again, however written, while pending: the same report, unchanged.
    const again = await reporter.api('/api/reports', json({ phone_number: '+46812118532', reason: 'customer' }));
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(report);
    expect(await (await reporter.api('/api/reports')).json()).toEqual({ reports: [report] });
    const audited = (await h.services.audit.list({ accountId: reporter.account.account_id, limit: 20 })).filter((a) => a.action === 'report.submitted');
    expect(audited).toHaveLength(1);
    expect(audited[0]).toMatchObject({ actor: `client:${reporter.clientId}`, client_id: reporter.clientId, detail: { report_id: report.id, kind: 'number', value: '+46812118532', reason: 'own_number' } });
  });

  it("never shows one account's reports to another", async () => {
    expect(await (await other.api('/api/reports')).json()).toEqual({ reports: [] });
  });

  it('a pending report changes nothing for anyone, the reporting account included', async () => {
    const before = await lookup(other, '+46812118532');
    expect(before.score).toBeGreaterThanOrEqual(50);
    expect(before.reasons.some((r: string) => HELD.test(r))).toBe(false);
    expect(await lookup(reporter, '+46812118532')).toEqual(before);
    expect((await feedEntries(other, 'min_score=50')).map((e) => e.phone_number)).toContain('+46812118532');
  });

  it('accepted by the operator CLI (another process), it caps the shared score with its reason in lookups, bulk, range, feeds, TAXII and DNS', async () => {
    const pending = (await h.services.reports.listOwn(reporter.account.account_id))[0]!;
    const listed = cli(h.config.databaseUrl, 'reports', 'list');
    expect(listed.reports.map((r: Json) => [r.id, r.account_id, r.state])).toContainEqual([pending.id, reporter.account.account_id, 'pending']);

    const before = await lookup(other, '+46812118532');
    const etag = (await feed(other, 'min_score=0')).headers.get('etag')!;

    const decided = cli(h.config.databaseUrl, 'reports', 'accept', pending.id, '--note', 'their own support line');
    expect(decided.report).toMatchObject({ id: pending.id, state: 'accepted', decision_note: 'their own support line' });

    // The server hears of the other process's decision (SQLite's counter, PostgreSQL's NOTIFY), not only at the 5 s bound.
    expect(await within(2000, async () => (await lookup(other, '+46812118532')).score <= REPORTED_CEILING)).toBe(true);
    for (const who of [other, reporter]) {
      const after = await lookup(who, '+46812118532');
      expect(after.score).toBe(Math.min(before.score, REPORTED_CEILING));
      expect(after.reasons).toEqual([...before.reasons, expect.stringMatching(HELD)]);
      expect(after.seen_count).toBe(before.seen_count);
    }
    const bulk = (await (await other.api('/api/phone-numbers/lookup', json({ phone_numbers: ['0046812118532', '+46812118533'] }))).json()) as { results: Json[] };
    expect(bulk.results[0]).toMatchObject({ score: Math.min(before.score, REPORTED_CEILING), reasons: expect.arrayContaining([expect.stringMatching(HELD)]) });
    expect(bulk.results[1]!.score).toBeGreaterThanOrEqual(50);
    expect(bulk.results[1]!.reasons.some((r: string) => HELD.test(r))).toBe(false);

    const hash = numberHash('+46812118532');
    const range = (await (await other.api(`/api/phone-numbers/range/${hash.slice(0, 5)}`)).json()) as { entries: Json[] };
    expect(range.entries.find((e) => e.suffix === hash.slice(5))!.score).toBeLessThanOrEqual(REPORTED_CEILING);

    // Feeds: gone from a feed at 50, held at the ceiling in one at 0, and its ETag changed.
    expect((await feedEntries(other, 'min_score=50')).map((e) => e.phone_number)).not.toContain('+46812118532');
    expect((await feedEntries(other, 'min_score=50')).map((e) => e.phone_number)).toContain('+46812118533');
    expect((await feedEntries(other, 'min_score=0')).find((e) => e.phone_number === '+46812118532')!.score).toBeLessThanOrEqual(REPORTED_CEILING);
    expect((await feed(other, 'min_score=0')).headers.get('etag')).not.toBe(etag);

    // DNS: no longer listed; its neighbour still is.
    const zones = h.services.dnsZones;
    const ask = async (name: string) => (await zones.answer(name, 'A')).rcode;
    expect(await ask('2.3.5.8.1.1.2.1.8.6.4.numbers.tollwatch.internal')).toBe('NXDOMAIN');
    expect(await ask('3.3.5.8.1.1.2.1.8.6.4.numbers.tollwatch.internal')).toBe('NOERROR');

    expect(await (await reporter.api('/api/reports')).json()).toEqual({ reports: [expect.objectContaining({ id: pending.id, state: 'accepted', decision_note: 'their own support line' })] });
    const audit = (await h.services.audit.list({ accountId: reporter.account.account_id, limit: 20 })).find((a) => a.action === 'report.accepted');
    expect(audit).toMatchObject({ actor: 'operator', detail: { report_id: pending.id, from: 'pending', note: 'their own support line' } });
  });

  it('TAXII revokes the indicator of a value whose report is accepted', async () => {
    const report = (await (await other.api('/api/reports', json({ phone_number: '+46812118534', reason: 'customer' }))).json()) as Json;
    await h.services.taxiiPublisher.publish();
    const objectsOf = async () => {
      const res = await fleet.api('/taxii2/tollwatch/collections/phone-numbers/objects/?match[version]=all', { headers: { accept: 'application/taxii+json;version=2.1' } });
      expect(res.status).toBe(200);
      return (((await res.json()) as Json).objects ?? []) as Json[];
    };
    const about = (objects: Json[]) => objects.filter((o) => String(o.pattern).includes("'+46812118534'"));
    const published = about(await objectsOf());
    expect(published.length).toBeGreaterThan(0);
    expect(published.every((o) => o.revoked !== true)).toBe(true);
    await h.services.reports.accept(report.id, undefined, 'operator');
    await h.services.taxiiPublisher.publish();
    expect(about(await objectsOf()).some((o) => o.revoked === true)).toBe(true);
  });

  it('a rejected report changes nothing; withdrawing an accepted one lifts the cap', async () => {
    const before = await lookup(other, '+46812118533');
    const report = (await (await reporter.api('/api/reports', json({ phone_number: '+46812118533', reason: 'legitimate_traffic' }))).json()) as Json;
    const rejected = cli(h.config.databaseUrl, 'reports', 'reject', report.id, '--note', 'seen calling premium numbers');
    expect(rejected.report.state).toBe('rejected');
    expect(await lookup(other, '+46812118533')).toEqual(before);
    expect(await lookup(reporter, '+46812118533')).toEqual(before);
    // A decided report is decided: accepting it now is refused, and nothing moves.
    await expect(h.services.reports.accept(report.id, undefined, 'operator')).rejects.toMatchObject({ code: 'validation_failed' });
    expect((await h.services.audit.list({ accountId: reporter.account.account_id, limit: 20 })).find((a) => a.action === 'report.rejected')).toMatchObject({ actor: 'operator', detail: { report_id: report.id } });

    // Withdrawn: the first value scores as before its report again.
    const accepted = (await h.services.reports.listOwn(reporter.account.account_id)).find((r) => r.phone_number === '+46812118532' && r.state === 'accepted')!;
    await h.services.reports.reject(accepted.id, 'withdrawn', 'operator');
    const lifted = await lookup(other, '+46812118532');
    expect(lifted.score).toBeGreaterThanOrEqual(50);
    expect(lifted.reasons.some((r: string) => HELD.test(r))).toBe(false);
  });

  it("the CLI's queue escapes what clients wrote, and refuses what cannot be decided with status 1", async () => {
    const report = (await (await reporter.api('/api/reports', json({ ip_address: '198.51.100.77', reason: 'other', note: 'ok\u001b[2J\u202egone' }))).json()) as Json;
    const env = { DATABASE_URL: h.config.databaseUrl };
    const listed = await spawnCli(env, 'reports', 'list');
    expect(listed.status).toBe(0);
    const line = listed.stdout.split('\n').find((l) => l.startsWith(report.id))!;
    expect(line).toContain('ok\\x1b[2J\\u202egone');
    expect(line).toContain('address 198.51.100.77');
    expect(line).not.toContain('\u001b');
    const unknown = await spawnCli(env, 'reports', 'accept', crypto.randomUUID());
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toMatch(/^tollwatch: no such report/);
    const tooLong = await spawnCli(env, 'reports', 'reject', report.id, '--note', 'x'.repeat(501));
    expect(tooLong.status).toBe(1);
    expect((await h.services.reports.get(report.id)).state).toBe('pending');
    expect((await spawnCli(env, 'reports', 'reject', report.id)).status).toBe(0);
    const again = await spawnCli(env, 'reports', 'accept', report.id);
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/^tollwatch: report .* is rejected/);
  });

  it('answers 429 with the RateLimit fields once the fixed allowance is spent, whatever the plan', async () => {
    const busy = await h.account({ plan: 'contributor' });
    for (let i = 0; i < REPORT_ALLOWANCE.limit; i++) {
      const res = await busy.api('/api/reports', json({ ip_address: `192.0.2.${i + 1}`, reason: 'customer' }));
      expect(res.status).toBe(201);
    }
    const refused = await busy.api('/api/reports', json({ ip_address: '192.0.2.200', reason: 'customer' }));
    const problem = await expectProblem(refused, 429, 'rate_limited');
    expect(problem).toMatchObject({ detail: expect.stringContaining(`${REPORT_ALLOWANCE.limit} reports per ${REPORT_ALLOWANCE.windowSeconds} s`) });
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(refused.headers.get('ratelimit')).toMatch(/^"reports";r=0;t=\d+$/);
    expect((await h.services.reports.listOwn(busy.account.account_id)).map((r) => r.ip_address)).not.toContain('192.0.2.200');
    // Lookups are another allowance.
    expect((await busy.api('/api/ip-addresses/198.18.0.1')).status).toBe(404);
  });

  it("the operator's dashboard queue lists reports escaped and labelled, and decides them with CSRF", async () => {
    const hostile = '<img src=x onerror=alert(1)>';
    const report = (await (await other.api('/api/reports', json({ ip_address: '2001:db8::1', reason: 'other', note: hostile }))).json()) as Json;
    const { browser, user } = await signedIn(h, null, 'operator');
    const page = await browser.get('/operator/reports');
    expect(page.status).toBe(200);
    expect(page.text).not.toContain(hostile);
    expect(page.text).toContain('&#60;img src=x onerror=alert(1)&#62;');
    expect(page.text).toContain('<code>2001:db8::1</code>');
    expect(page.text).toContain(`<label for="accept-note-${report.id}">`);
    expect(page.text).toContain(`aria-label="Accept report ${report.id}"`);
    // Without the page's CSRF token the form is refused and nothing is decided.
    const forged = await browser.post(`/operator/reports/${report.id}/accept`, { note: 'x' }, null);
    expect(forged.status).toBe(403);
    expect((await h.services.reports.get(report.id)).state).toBe('pending');
    expect((await browser.post(`/operator/reports/${report.id}/accept`, { note: 'their lab' })).status).toBe(303);
    expect(await h.services.reports.get(report.id)).toMatchObject({ state: 'accepted', decision_note: 'their lab' });
    expect((await h.services.audit.list({ accountId: other.account.account_id, limit: 20 })).find((a) => a.action === 'report.accepted')).toMatchObject({ actor: `user:${user.user_id}` });
    const after = await browser.get('/operator/reports');
    expect(after.text).toContain(`aria-label="Withdraw report ${report.id}"`);
    // A member of an account never reaches the queue.
    const member = await signedIn(h, other.account.account_id, 'owner');
    expect((await member.browser.get('/operator/reports')).status).toBe(403);
  });
});
