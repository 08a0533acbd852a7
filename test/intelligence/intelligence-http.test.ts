import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rebuildAggregates } from '../../src/store/fold/aggregates-rebuild.ts';
import { readScopesOf } from '../../src/domain/visibility.ts';
import { aggregateSnapshot } from '../support/aggregates.ts';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { rateLimitOf } from '../support/rate-limit.ts';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** An event time `minutes` ago, in the node's form. */
function ago(minutes: number): string {
  return new Date(Date.now() - minutes * 60_000).toISOString().replace('T', ' ').replace('Z', '');
}

const NODES = ['732e7f50-637d-4fde-81e0-5c32f1bb5a92', '0b7d6d7e-2b1a-4c55-9d7e-3f2a1b0c9d8e', 'c1a2b3c4-d5e6-4f70-8192-a3b4c5d6e7f8'];

// The shared data set's busy number, its long-forgotten one, the owner's and the other's private ones.
const BUSY = '+46812118532';
const FORGOTTEN = '+390662279016';
const OWNERS = '+4930123456';
const OTHERS = '+33140000000';
const OTHERS_IP = '198.51.100.99';

describe('scores, range lookups and feeds (docs/api.md §7, §13, §14)', () => {
  let h: Harness;
  let fleet: TestAccount;
  let owner: TestAccount;
  let other: TestAccount;

  beforeAll(async () => {
    h = await startHarness();
    fleet = await h.account({ trusted: true });
    owner = await h.account();
    other = await h.account();
    const sources = ['203.0.113.7', '203.0.113.8', '203.0.113.9', '2001:db8::7'];
    for (let i = 0; i < 6; i += 1) {
      const event = sampleEvent({ called_number: i % 2 ? '0046812118532' : BUSY, source_ip: sources[i % 4], created_by_node_id: NODES[i % 3], sip_method: 'INVITE', event_timestamp: ago(10 + i) });
      expect((await postEvent(fleet, event)).status).toBe(201);
    }
    const threeYears = new Date(Date.now() - 3 * 365 * 86_400_000).toISOString().replace('T', ' ').replace('Z', '');
    expect((await postEvent(fleet, sampleEvent({ called_number: FORGOTTEN, source_ip: '192.0.2.50', sip_method: 'OPTIONS', event_timestamp: threeYears }))).status).toBe(201);
    expect((await postEvent(owner, sampleEvent({ called_number: OWNERS, source_ip: '192.0.2.60', event_timestamp: ago(5) }))).status).toBe(201);
    for (let i = 0; i < 8; i += 1) {
      const event = sampleEvent({ called_number: OTHERS, source_ip: OTHERS_IP, created_by_node_id: NODES[i % 3], event_timestamp: ago(3 + i) });
      expect((await postEvent(other, event)).status).toBe(201);
    }
    await h.settled();
  });
  afterAll(() => h?.close());

  const json = async (res: Response) => (await res.json()) as Record<string, any>;
  const number = (who: TestAccount, value: string) => who.api(`/api/phone-numbers/${encodeURIComponent(value)}`);

  describe('scores in answers', () => {
    it('a number’s answer carries its score and the facts behind it', async () => {
      const body = await json(await number(owner, BUSY));
      expect(body).toMatchObject({ found: true, seen_count: 6, source_ip_count: 4 });
      expect(body.score).toBe(58);
      expect(body.reasons).toEqual(
        expect.arrayContaining(['called from 4 distinct source addresses', 'seen by 3 honeypot nodes', '6 INVITE attempts, not only OPTIONS scans', 'seen 6 times']),
      );
      expect(body.reasons.at(-1)).toMatch(/^last seen today$|^evidence weighs/);
    });

    it('evidence three years old scores low, and says why', async () => {
      const body = await json(await number(owner, FORGOTTEN));
      expect(body.score).toBe(0);
      expect(body.reasons).toEqual(expect.arrayContaining(['scans only, no INVITE attempts', 'last seen 3 years ago']));
    });

    it('an address’s answer, single and bulk, carries a score; a number never seen carries none', async () => {
      const ip = await json(await owner.api('/api/ip-addresses/203.0.113.7'));
      expect(ip).toMatchObject({ found: true, reasons: expect.arrayContaining(['seen by 2 honeypot nodes']) });
      expect(ip.score).toBeGreaterThan(0);
      const bulk = await json(
        await owner.api('/api/phone-numbers/lookup', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ phone_numbers: [BUSY, '+441632960001'] }) }),
      );
      expect(bulk.results[0]).toMatchObject({ found: true, score: 58 });
      expect(bulk.results[1].found).toBe(false);
      expect(bulk.results[1]).not.toHaveProperty('score');
    });

    it('never scores from another account’s private events', async () => {
      expect((await number(owner, OTHERS)).status).toBe(404);
      expect((await json(await number(other, OTHERS))).reasons).toContain('seen by 3 honeypot nodes');
    });
  });

  describe('the kept nodes and hashes', () => {
    it('fold and rebuild keep the same nodes and hashes', async () => {
      const folded = await aggregateSnapshot(h.services.database.db);
      expect(folded.number_hashes).toContainEqual(expect.stringContaining(sha256(BUSY)));
      await rebuildAggregates(h.services.database.db, h.services.database.caps);
      expect(await aggregateSnapshot(h.services.database.db)).toEqual(folded);
    });
  });

  describe('GET /api/phone-numbers/range/{prefix}', () => {
    const range = (who: TestAccount, key: string, upper = false) => {
      const prefix = sha256(key).slice(0, 5);
      return who.api(`/api/phone-numbers/range/${upper ? prefix.toUpperCase() : prefix}`);
    };
    const realSuffixes = (body: Record<string, any>) => (body.entries as Array<{ suffix: string; seen_count: number }>).filter((e) => e.seen_count > 0).map((e) => e.suffix);

    it('answers the suffixes of the range with scores, padded to 32 entries that clients ignore', async () => {
      const res = await range(owner, BUSY, true);
      expect(res.status).toBe(200);
      expect(rateLimitOf(res)?.policy).toBe('lookups');
      const body = await json(res);
      expect(body.prefix).toBe(sha256(BUSY).slice(0, 5));
      expect(body.entries).toHaveLength(32);
      expect(realSuffixes(body)).toEqual([sha256(BUSY).slice(5)]);
      expect(body.entries.find((e: any) => e.suffix === sha256(BUSY).slice(5))).toMatchObject({ seen_count: 6, score: 58 });
      const padding = body.entries.filter((e: any) => e.seen_count === 0);
      expect(padding).toHaveLength(31);
      for (const pad of padding) expect(pad).toMatchObject({ suffix: expect.stringMatching(/^[0-9a-f]{59}$/), score: 0 });
      // Random each time: padding names no number.
      const again = await json(await range(owner, BUSY));
      expect(again.entries.filter((e: any) => e.seen_count === 0).map((e: any) => e.suffix)).not.toEqual(padding.map((e: any) => e.suffix));
    });

    it('holds the shared data set and the caller’s own numbers, never another account’s', async () => {
      expect(realSuffixes(await json(await range(owner, OWNERS)))).toContain(sha256(OWNERS).slice(5));
      expect(realSuffixes(await json(await range(owner, FORGOTTEN)))).toContain(sha256(FORGOTTEN).slice(5));
      expect(realSuffixes(await json(await range(owner, OTHERS)))).not.toContain(sha256(OTHERS).slice(5));
      expect(realSuffixes(await json(await range(other, OTHERS)))).toContain(sha256(OTHERS).slice(5));
      expect(realSuffixes(await json(await range(other, OWNERS)))).not.toContain(sha256(OWNERS).slice(5));
    });

    it('400 invalid_range_prefix for anything but 5 hex digits', async () => {
      for (const bad of ['abcd', 'abcdef', 'xyz12', '%ZZ', 'ab cd']) {
        const res = await owner.api(`/api/phone-numbers/range/${bad}`);
        expect(res.status, bad).toBe(400);
        expect((await json(res)).error).toBe('invalid_range_prefix');
      }
    });

    it('needs read:phone-numbers, after authentication', async () => {
      expect((await fetch(`${h.url}/api/phone-numbers/range/zzzzz`)).status).toBe(401);
      const addressesOnly = await h.account({ permissions: ['read:ip-addresses'] });
      expect((await addressesOnly.api('/api/phone-numbers/range/abcde')).status).toBe(403);
    });
  });

  describe('GET /api/feeds/…', () => {
    const feed = (who: TestAccount, path: string, headers: Record<string, string> = {}) => who.api(`/api/feeds/${path}`, { headers });

    it('plain text by default: one value per line, at least min_score (default 50)', async () => {
      const res = await feed(owner, 'phone-numbers');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
      expect((await res.text()).split('\n')).toEqual([BUSY, '']);
      const all = (await (await feed(owner, 'phone-numbers?min_score=0')).text()).trim().split('\n');
      // Most recently seen first; never another account's.
      expect(all).toEqual([OWNERS, BUSY, FORGOTTEN]);
    });

    it('CSV and JSON by Accept or format=, with the same entries', async () => {
      const csv = await feed(owner, 'phone-numbers?min_score=1', { accept: 'text/csv' });
      expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
      const [header, ...rows] = (await csv.text()).trim().split('\r\n');
      expect(header).toBe('phone_number,score,seen_count,first_seen,last_seen');
      const parsed = rows.map((row) => row.split(','));
      expect(parsed.map((r) => r[0])).toEqual([OWNERS, BUSY]);
      expect(parsed[1]).toEqual([BUSY, '58', '6', expect.stringMatching(/Z$/), expect.stringMatching(/Z$/)]);
      const body = await json(await feed(owner, 'phone-numbers?min_score=1&format=json', { accept: 'text/csv' }));
      expect(body.entries.map((e: any) => [e.phone_number, e.score, e.seen_count])).toEqual(parsed.map((r) => [r[0], Number(r[1]), Number(r[2])]));
    });

    it('guards CSV cells against formulas, as the dashboard export does; a signed number stays as it is', async () => {
      const writer = await h.account();
      for (const called_number of ['+a1', '+46812118599']) expect((await postEvent(writer, sampleEvent({ called_number }))).status).toBe(201);
      const cells = (await (await feed(writer, 'phone-numbers?min_score=0&format=csv')).text()).trim().split('\r\n').slice(1).map((row) => row.split(',')[0]);
      expect(cells).toEqual(expect.arrayContaining(["'+a1", '+46812118599']));
      expect(cells).not.toContain('+a1');
    });

    it('a STIX 2.1 bundle of indicators', async () => {
      const res = await feed(owner, 'ip-addresses?min_score=0', { accept: 'application/stix+json;version=2.1' });
      expect(res.headers.get('content-type')).toBe('application/stix+json;version=2.1');
      const bundle = await json(res);
      expect(bundle.type).toBe('bundle');
      expect(bundle.id).toMatch(/^bundle--[0-9a-f-]{36}$/);
      const patterns = bundle.objects.map((o: any) => o.pattern);
      expect(patterns).toContain("[ipv4-addr:value = '203.0.113.7']");
      expect(patterns).toContain("[ipv6-addr:value = '2001:db8::7']");
      expect(patterns.join()).not.toContain(OTHERS_IP);
      for (const o of bundle.objects) {
        // The properties STIX 2.1 requires of an indicator.
        expect(o).toMatchObject({ type: 'indicator', spec_version: '2.1', pattern_type: 'stix', indicator_types: ['malicious-activity'] });
        expect(o.id).toMatch(/^indicator--[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
        for (const t of [o.created, o.modified, o.valid_from]) expect(t).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
        expect(o.modified >= o.created).toBe(true);
        expect(o.confidence).toBeGreaterThanOrEqual(0);
      }
      const numbers = await json(await feed(owner, 'phone-numbers?format=stix'));
      expect(numbers.objects.map((o: any) => o.pattern)).toEqual([`[x-tollwatch-phone-number:value = '${BUSY}']`]);
    });

    it('since keeps only what was last seen at or after it', async () => {
      const text = async (q: string) => (await (await feed(owner, `phone-numbers?min_score=0&${q}`)).text()).trim().split('\n').filter(Boolean);
      expect(await text(`since=${encodeURIComponent(new Date(Date.now() - 8 * 60_000).toISOString())}`)).toEqual([OWNERS]);
      expect(await text(`since=${encodeURIComponent(new Date(Date.now() - 60 * 86_400_000).toISOString())}`)).toEqual([OWNERS, BUSY]);
    });

    it('ETag and If-None-Match: 304 while nothing changed, a new tag once something did', async () => {
      const first = await feed(owner, 'ip-addresses');
      const etag = first.headers.get('etag')!;
      expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
      const same = await feed(owner, 'ip-addresses');
      expect(same.headers.get('etag')).toBe(etag);
      expect(await same.text()).toBe(await first.text());
      const notModified = await feed(owner, 'ip-addresses', { 'if-none-match': etag });
      expect(notModified.status).toBe(304);
      expect(await notModified.text()).toBe('');
      // Another format, another representation, another tag.
      expect((await feed(owner, 'ip-addresses?format=json')).headers.get('etag')).not.toBe(etag);
      expect((await postEvent(fleet, sampleEvent({ source_ip: '203.0.113.200', event_timestamp: ago(1) }))).status).toBe(201);
      await h.settled();
      const changed = await feed(owner, 'ip-addresses', { 'if-none-match': etag });
      expect(changed.status).toBe(200);
      expect(changed.headers.get('etag')).not.toBe(etag);
    });

    it('an ETag gives away nothing of the fold: keyed with a secret, yet the same on every instance of the store', async () => {
      // Every input of the tag but the fold's position is the caller's to know; unkeyed, trying
      // positions finds the one that matches: how many events every account together has sent.
      const res = await feed(owner, 'phone-numbers?min_score=50');
      const etag = res.headers.get('etag');
      const scoredAt = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000).toISOString();
      const unkeyed = (position: number) =>
        `"${createHash('sha256').update(JSON.stringify(['phone-numbers', readScopesOf(owner.account), position, scoredAt, 30, 50, null, 'text'])).digest('base64url').slice(0, 32)}"`;
      const folded = await h.services.database.db.selectFrom('fold_state').select('through').execute();
      expect(Math.max(...folded.map((row) => Number(row.through)))).toBeLessThanOrEqual(10_000);
      for (let p = 0; p <= 10_000; p++) expect(unkeyed(p) === etag, `the tag is the unkeyed hash of position ${p}`).toBe(false);
      const second = await startHarness({ DATABASE_URL: h.config.databaseUrl });
      try {
        const elsewhere = await fetch(`${second.url}/api/feeds/phone-numbers?min_score=50`, { headers: { authorization: `Bearer ${await owner.token()}` } });
        expect(elsewhere.headers.get('etag')).toBe(etag);
      } finally {
        await second.close();
      }
    });

    it('isolation: another account’s private events reach no feed but its own', async () => {
      const ownersIps = await (await feed(owner, 'ip-addresses?min_score=0&format=csv')).text();
      expect(ownersIps).not.toContain(OTHERS_IP);
      const othersNumbers = (await (await feed(other, 'phone-numbers?min_score=0')).text()).trim().split('\n');
      expect(othersNumbers).toContain(OTHERS);
      expect(othersNumbers).not.toContain(OWNERS);
    });

    it('422 names every bad parameter; permissions per feed', async () => {
      const res = await feed(owner, 'phone-numbers?min_score=101&since=yesterday&format=xml&colour=red');
      expect(res.status).toBe(422);
      expect((await json(res)).errors.map((e: any) => e.field).sort()).toEqual(['colour', 'format', 'min_score', 'since']);
      const numbersOnly = await h.account({ permissions: ['read:phone-numbers'] });
      expect((await feed(numbersOnly, 'ip-addresses')).status).toBe(403);
      expect((await feed(numbersOnly, 'phone-numbers')).status).toBe(200);
    });
  });
});
