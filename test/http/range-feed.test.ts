import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATOR_LIST } from '../../src/domain/allowlists/allowlists.ts';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { sdkFor } from '../sdk/sdk-client.ts';
import { rangeScore, type RangeEvidence } from '../../src/domain/intelligence/scores.ts';

type Json = Record<string, unknown>;

/**
 * Number ranges in the phone-number feed (docs/api.md §14, `ranges=include`): opt-in, scored as
 * a lookup's `range` over the caller's scopes, marked as ranges in every format, and kept out by
 * an allowlist entry that covers or lies inside the block.
 */
describe('number ranges in the phone-number feed', () => {
  let h: Harness;
  let fleet: TestAccount;
  let caller: TestAccount;
  let block = 0;
  const nextRange = () => `+4681219${String(100 + block++).padStart(3, '0')}`;

  beforeAll(async () => {
    h = await startHarness();
    fleet = await h.account({ trusted: true });
    caller = await h.account({ permissions: ['read:phone-numbers', 'read:ip-addresses'] });
  });
  afterAll(() => h?.close());

  const feed = (query: string, who = caller) => who.api(`/api/feeds/phone-numbers?${query}`);
  const page = async (query: string, who = caller) => (await (await feed(`format=json&${query}`, who)).json()) as { scored_at: string; entries: Json[] };
  const entries = async (query: string, who = caller) => (await page(query, who)).entries;
  /**
   * The score a range with this evidence has at `at`. A feed scores at the start of the hour
   * (its `scored_at`, docs/api.md §14) and a lookup at its own instant, so late in an hour the two
   * can round apart; each is checked against the one scoring at its own instant.
   */
  const scoreAt = (evidence: Omit<RangeEvidence, 'lastSeen'>, lastSeen: unknown, at: string | Date) => rangeScore({ ...evidence, lastSeen: String(lastSeen) }, new Date(at)).score;

  /** Three numbers of a fresh block, from three addresses, by `who`. */
  const probe = async (who = fleet) => {
    const range = nextRange();
    for (const [suffix, ip] of [['01', '198.51.100.1'], ['02', '198.51.100.2'], ['37', '198.51.100.3']] as const) {
      expect((await postEvent(who, sampleEvent({ called_number: `${range}${suffix}`, source_ip: ip, sip_method: 'INVITE' }))).status).toBe(201);
    }
    await h.settled();
    return range;
  };

  it('without ranges=include lists no range, and with it the same numbers plus the ranges, in every format', async () => {
    const range = await probe();
    const before = await feed('min_score=1');
    const plain = await before.text();
    expect(plain).not.toContain('XX');
    expect(plain).toContain(`${range}01\n`);
    expect((await feed('min_score=1&ranges=exclude')).headers.get('etag')).toBe(before.headers.get('etag'));

    const withRanges = await feed('min_score=1&ranges=include');
    expect(withRanges.status).toBe(200);
    expect(withRanges.headers.get('etag')).not.toBe(before.headers.get('etag'));
    const lines = (await withRanges.text()).trim().split('\n');
    expect(lines).toContain(`${range}XX`);
    // Less its ranges, the answer is the one without them, in the same order.
    expect(lines.filter((line) => !line.endsWith('XX'))).toEqual(plain.trim().split('\n'));

    const csv = (await (await feed('min_score=1&ranges=include&format=csv')).text()).split('\r\n');
    expect(csv[0]).toBe('phone_number,score,seen_count,first_seen,last_seen,kind');
    expect(csv.find((row) => row.startsWith(`${range},`))).toMatch(/,3,[^,]+,[^,]+,range$/);
    expect(csv.find((row) => row.startsWith(`${range}01,`))).toMatch(/,number$/);
    expect((await (await feed('min_score=1&format=csv')).text()).split('\r\n')[0]).toBe('phone_number,score,seen_count,first_seen,last_seen');

    const { scored_at, entries: json } = await page('min_score=1&ranges=include');
    const entry = json.find((e) => e.range === range)!;
    expect(Object.keys(entry).sort()).toEqual(['first_seen', 'last_seen', 'numbers_seen', 'range', 'score', 'valid_until']);
    expect(entry).toMatchObject({ numbers_seen: 3 });
    expect(entry.score).toBeGreaterThan(0);
    // 01, 02 and 37 from three addresses, one node, all INVITEs: scored by the lookup's rule.
    const evidence = { numberCount: 3, sourceIpCount: 3, nodeCount: 1, inviteCount: 3 };
    expect(entry.score).toBe(scoreAt(evidence, entry.last_seen, scored_at));
    const lookup = (await (await caller.api(`/api/phone-numbers/${encodeURIComponent(`${range}99`)}`)).json()) as { range: { score: number } };
    expect(lookup.range.score).toBe(scoreAt(evidence, entry.last_seen, new Date()));
    expect(json.some((e) => e.phone_number === `${range}01` && !('range' in e))).toBe(true);

    const bundle = (await (await feed('min_score=1&ranges=include&format=stix')).json()) as { objects: Json[] };
    const indicator = bundle.objects.find((o) => String(o.pattern).includes(`LIKE '${range}`))!;
    expect(indicator).toMatchObject({ type: 'indicator', pattern: `[x-tollwatch-phone-number:value LIKE '${range}__']`, pattern_type: 'stix', confidence: entry.score });
    expect(indicator.id).not.toBe(bundle.objects.find((o) => o.pattern === `[x-tollwatch-phone-number:value = '${range}01']`)!.id);
  });

  it('with ranges=only lists the ranges of ranges=include alone, in its order, in every format, under a tag of its own', async () => {
    const range = await probe();
    const included = await feed('min_score=1&ranges=include');
    const only = await feed('min_score=1&ranges=only');
    expect(only.status).toBe(200);
    expect(only.headers.get('etag')).not.toBe(included.headers.get('etag'));
    const lines = (await only.text()).trim().split('\n');
    expect(lines).toContain(`${range}XX`);
    expect(lines).toEqual((await included.text()).trim().split('\n').filter((line) => line.endsWith('XX')));

    const csv = (await (await feed('min_score=1&ranges=only&format=csv')).text()).trim().split('\r\n');
    expect(csv[0]).toBe('phone_number,score,seen_count,first_seen,last_seen,kind');
    expect(csv.length).toBeGreaterThan(1);
    expect(csv.slice(1).every((row) => row.endsWith(',range'))).toBe(true);
    expect(csv.find((row) => row.startsWith(`${range},`))).toMatch(/,3,[^,]+,[^,]+,range$/);

    const json = await entries('min_score=1&ranges=only');
    expect(json.every((e) => 'range' in e && !('phone_number' in e))).toBe(true);
    expect(json.map((e) => e.range)).toEqual((await entries('min_score=1&ranges=include')).filter((e) => 'range' in e).map((e) => e.range));
    const bundle = (await (await feed('min_score=1&ranges=only&format=stix')).json()) as { objects: Json[] };
    const indicators = bundle.objects.filter((o) => o.type === 'indicator');
    expect(indicators.length).toBe(json.length);
    expect(indicators.every((o) => / LIKE '/.test(String(o.pattern)))).toBe(true);

    // The same rule as include: a range below min_score is not listed.
    const score = json.find((e) => e.range === range)!.score as number;
    expect((await entries(`min_score=${score + 1}&ranges=only`)).some((e) => e.range === range)).toBe(false);
    // Still a phone-number feed's parameter only.
    expect((await caller.api('/api/feeds/ip-addresses?ranges=only')).status).toBe(422);
    expect((await feed('ranges=some')).status).toBe(422);
  });

  it('lists a range whose score reaches min_score and not one below it', async () => {
    const range = await probe();
    const score = (await entries('min_score=1&ranges=include')).find((e) => e.range === range)!.score as number;
    expect((await entries(`min_score=${score}&ranges=include`)).some((e) => e.range === range)).toBe(true);
    expect((await entries(`min_score=${score + 1}&ranges=include`)).some((e) => e.range === range)).toBe(false);
    expect((await (await feed(`min_score=${score + 1}&ranges=include`)).text()).includes(`${range}XX`)).toBe(false);
  });

  it("never lists a range for another account's private events, and lists it for that account", async () => {
    const other = await h.account({ permissions: ['read:phone-numbers', 'write:events'] });
    const range = await probe(other);
    expect((await entries('min_score=0&ranges=include')).some((e) => e.range === range)).toBe(false);
    expect((await entries('min_score=0&ranges=include', other)).some((e) => e.range === range)).toBe(true);
  });

  it('merges a range seen in the shared data set and in my own events as my lookup does', async () => {
    const me = await h.account({ permissions: ['read:phone-numbers', 'write:events'] });
    const range = await probe();
    for (const [suffix, ip] of [['01', '198.51.100.1'], ['64', '198.51.100.4']] as const) {
      expect((await postEvent(me, sampleEvent({ called_number: `${range}${suffix}`, source_ip: ip, sip_method: 'INVITE' }))).status).toBe(201);
    }
    await h.settled();
    const { scored_at, entries: listed } = await page('min_score=0&ranges=include', me);
    const mine = listed.find((e) => e.range === range)!;
    const lookup = (await (await me.api(`/api/phone-numbers/${encodeURIComponent(`${range}99`)}`)).json()) as { range: { score: number; numbers_seen: number } };
    // 01, 02, 37 shared and 01, 64 mine: four distinct numbers from four addresses, counted once
    // each, and all five INVITEs.
    const evidence = { numberCount: 4, sourceIpCount: 4, nodeCount: 1, inviteCount: 5 };
    expect(mine).toMatchObject({ numbers_seen: 4, score: scoreAt(evidence, mine.last_seen, scored_at) });
    expect(lookup.range).toMatchObject({ numbers_seen: 4, score: scoreAt(evidence, mine.last_seen, new Date()) });
    expect((await entries('min_score=0&ranges=include')).find((e) => e.range === range)).toMatchObject({ numbers_seen: 3 });
  });

  it('moves the ETag when a range row changes', async () => {
    const range = await probe();
    const first = (await feed('min_score=1&ranges=include')).headers.get('etag')!;
    expect((await feed('min_score=1&ranges=include', caller)).headers.get('etag')).toBe(first);
    expect((await postEvent(fleet, sampleEvent({ called_number: `${range}55`, source_ip: '198.51.100.9', sip_method: 'INVITE' }))).status).toBe(201);
    await h.settled();
    const again = await feed('min_score=1&ranges=include');
    expect(again.headers.get('etag')).not.toBe(first);
    expect(((await again.text()).includes(`${range}XX`))).toBe(true);
  });

  it("drops a range the operator's allowlist covers with a prefix, or holds a number of", async () => {
    const covered = await probe();
    const holding = await probe();
    const untouched = await probe();
    const listed = async () => (await entries('min_score=1&ranges=include')).filter((e) => typeof e.range === 'string').map((e) => e.range);
    expect(await listed()).toEqual(expect.arrayContaining([covered, holding, untouched]));
    await h.services.allowlists.add(OPERATOR_LIST, { kind: 'number_prefix', value: covered }, 'operator');
    await h.services.allowlists.add(OPERATOR_LIST, { kind: 'phone_number', value: `${holding}77` }, 'operator');
    const after = await listed();
    expect(after).not.toContain(covered);
    expect(after).not.toContain(holding);
    expect(after).toContain(untouched);
    // The numbers of the block the entry does not cover are still listed.
    expect((await entries('min_score=1')).some((e) => e.phone_number === `${holding}01`)).toBe(true);
  });

  it('refuses a bad ranges value, and ranges on the address feed, 422', async () => {
    const bad = await feed('ranges=yes');
    expect(bad.status).toBe(422);
    expect(JSON.stringify(await bad.json())).toContain('ranges');
    expect((await caller.api('/api/feeds/ip-addresses?ranges=include')).status).toBe(422);
  });

  it("is asked for through the SDK with ranges: true or 'only', and not without it", async () => {
    const range = await probe();
    const { client } = sdkFor(h, caller);
    const withRanges = await client.phoneNumberFeed({ minScore: 1, ranges: true });
    if (withRanges.notModified) throw new Error('a first poll is never notModified');
    expect(withRanges.feed.entries.find((e) => 'range' in e && e.range === range)).toMatchObject({ numbers_seen: 3 });
    const plain = await client.phoneNumberFeed({ minScore: 1 });
    if (plain.notModified) throw new Error('a first poll is never notModified');
    expect(plain.feed.entries.some((e) => 'range' in e)).toBe(false);
    // Its ETag is that of the answer with ranges: held, it polls as notModified.
    expect(await client.phoneNumberFeed({ minScore: 1, ranges: true, ifNoneMatch: withRanges.etag! })).toMatchObject({ notModified: true });
    const only = await client.phoneNumberFeed({ minScore: 1, ranges: 'only' });
    if (only.notModified) throw new Error('a first poll is never notModified');
    expect(only.feed.entries.length).toBeGreaterThan(0);
    expect(only.feed.entries.every((e) => 'range' in e)).toBe(true);
    expect(only.feed.entries.find((e) => 'range' in e && e.range === range)).toMatchObject({ numbers_seen: 3 });
  });
});
