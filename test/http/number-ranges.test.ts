import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rangeOfNumberKey } from '../../src/domain/number-range.ts';
import { rangeOfKeySql } from '../../src/store/fold/aggregates-rebuild.ts';
import { rebuildAggregates } from '../../src/store/fold/aggregates-rebuild.ts';
import { aggregateSnapshot } from '../support/aggregates.ts';
import { postEvent, sampleEvent, startHarness, within, type Harness, type TestAccount } from '../support/harness.ts';

interface RangePart {
  prefix: string;
  numbers_seen: number;
  score: number;
  reasons: string[];
}

/**
 * Number ranges (docs/scoring.md, "Ranges"; docs/api.md §7, `range`): a number never seen in a
 * block of 100 the honeypots probed is answered 404 with its range's evidence, as the caller may
 * see it; a number seen is answered with both.
 */
describe('number ranges in lookups', () => {
  let h: Harness;
  let fleet: TestAccount;
  let caller: TestAccount;
  /** A fresh block per test, so that tests do not see each other's evidence. */
  let block = 0;
  const nextRange = () => `+4681211${String(100 + block++).padStart(3, '0')}`;

  beforeAll(async () => {
    h = await startHarness();
    fleet = await h.account({ trusted: true });
    caller = await h.account({ permissions: ['read:phone-numbers'] });
  });
  afterAll(() => h?.close());

  const lookup = async (value: string, who = caller) => {
    const res = await who.api(`/api/phone-numbers/${encodeURIComponent(value)}`);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> & { range?: RangePart } };
  };

  it('answers an unseen number of a probed range 404 with the range’s evidence, and a seen one 200 with both', async () => {
    const range = nextRange();
    const events = [
      sampleEvent({ called_number: `00${range.slice(1)}01`, source_ip: '203.0.113.1', sip_method: 'INVITE' }),
      sampleEvent({ called_number: `${range}01`, source_ip: '203.0.113.2', sip_method: 'INVITE' }),
      sampleEvent({ called_number: `${range}02`, source_ip: '203.0.113.1', sip_method: 'OPTIONS', created_by_node_id: 'a7c3e0de-0000-4000-8000-000000000002' }),
      sampleEvent({ called_number: `${range}37`, source_ip: '203.0.113.3', sip_method: 'INVITE' }),
    ];
    for (const event of events) expect((await postEvent(fleet, event)).status).toBe(201);
    await h.settled();

    const unseen = await lookup(`${range}99`);
    expect(unseen.status).toBe(404);
    expect(unseen.body).toMatchObject({ phone_number: `${range}99`, found: false, message: 'No probes to this number have been seen.' });
    // Three numbers (01 in two forms is one), three addresses, two nodes, three INVITEs.
    expect(Object.keys(unseen.body.range!).sort()).toEqual(['numbers_seen', 'prefix', 'reasons', 'score']);
    expect(unseen.body.range).toMatchObject({ prefix: range, numbers_seen: 3 });
    expect(unseen.body.range!.reasons.slice(0, 5)).toEqual([
      '3 distinct numbers of the range seen',
      'called from 3 distinct source addresses',
      'seen by 2 honeypot nodes',
      '3 INVITE attempts, not only OPTIONS scans',
      expect.stringMatching(/^last seen /),
    ]);
    expect(unseen.body.range!.score).toBeGreaterThan(0);

    const seen = await lookup(`${range}01`);
    expect(seen.status).toBe(200);
    expect(seen.body).toMatchObject({ found: true, seen_count: 2, source_ip_count: 2 });
    expect(seen.body.range).toEqual(unseen.body.range);

    // Any written form of a number of the range finds the same range.
    expect((await lookup(`tel:00${range.slice(1)}55`)).body.range).toEqual(unseen.body.range);
  });

  it('gives no range to a number in none: national forms, extensions, short and over-long keys; and none to an unprobed range', async () => {
    const range = nextRange();
    for (const called_number of ['0812118532', '100', '+1234567', `${range}5`]) expect((await postEvent(fleet, sampleEvent({ called_number }))).status).toBe(201);
    await h.settled();
    for (const value of ['0812118599', '0812118532', '100', '101', '+1234567', '+1234599', '+1234567890123456']) {
      const { body } = await lookup(value);
      expect(body, value).not.toHaveProperty('range');
    }
    // `${range}5` is a 10-digit key of the range `${range.slice(0, -1)}`, not of `range`.
    expect((await lookup(`${range}50`)).body).not.toHaveProperty('range');
    expect((await lookup(`${range.slice(0, -1)}99`)).body.range).toMatchObject({ prefix: range.slice(0, -1), numbers_seen: 1 });
    expect(await lookup(`+4699999999999`)).toEqual({ status: 404, body: { phone_number: '+4699999999999', found: false, message: 'No probes to this number have been seen.' } });
  });

  it('never shows one account’s own events to another; shows an account its own beside the shared data set, counted once across both', async () => {
    const range = nextRange();
    const own = await h.account();
    const other = await h.account({ permissions: ['read:phone-numbers'] });
    // Shared: numbers 10 and 11 from .1; own: 11 again from .1 (in both scopes), 12 from .2.
    expect((await postEvent(fleet, sampleEvent({ called_number: `${range}10`, source_ip: '198.51.100.1' }))).status).toBe(201);
    expect((await postEvent(fleet, sampleEvent({ called_number: `${range}11`, source_ip: '198.51.100.1' }))).status).toBe(201);
    const privateRange = nextRange();
    expect((await postEvent(own, sampleEvent({ called_number: `${range}11`, source_ip: '198.51.100.1' }))).status).toBe(201);
    expect((await postEvent(own, sampleEvent({ called_number: `${range}12`, source_ip: '198.51.100.2', created_by_node_id: 'a7c3e0de-0000-4000-8000-000000000009' }))).status).toBe(201);
    expect((await postEvent(own, sampleEvent({ called_number: `${privateRange}12` }))).status).toBe(201);
    await h.settled();

    const mine = (await lookup(`${range}99`, own)).body.range!;
    expect(mine).toMatchObject({ prefix: range, numbers_seen: 3 });
    expect(mine.reasons.slice(0, 3)).toEqual(['3 distinct numbers of the range seen', 'called from 2 distinct source addresses', 'seen by 2 honeypot nodes']);
    const theirs = (await lookup(`${range}99`, other)).body.range!;
    expect(theirs.numbers_seen).toBe(2);
    expect(theirs.reasons.slice(0, 3)).toEqual(['2 distinct numbers of the range seen', 'called from 1 distinct source address', 'seen by 1 honeypot node']);
    // A range only an account's own events hold: its own, nobody else's.
    expect((await lookup(`${privateRange}99`, own)).body.range).toMatchObject({ numbers_seen: 1 });
    expect((await lookup(`${privateRange}99`, other)).body).not.toHaveProperty('range');
    expect((await lookup(`${privateRange}12`, other)).body).not.toHaveProperty('range');
  });

  it('counts another account’s new event in a range it answered from memory, once this instance folds it', async () => {
    const range = nextRange();
    expect((await postEvent(fleet, sampleEvent({ called_number: `${range}60` }))).status).toBe(201);
    await h.settled();
    // Kept now, for the number itself (a 404 with a range) and for a number seen of the range.
    expect((await lookup(`${range}99`)).body.range).toMatchObject({ numbers_seen: 1 });
    expect((await lookup(`${range}60`)).body).toMatchObject({ found: true, seen_count: 1, range: { numbers_seen: 1 } });
    // This instance's fold passes on the rows it wrote: the number's answer is refreshed from
    // them, and the range's kept answers are dropped with it.
    expect((await postEvent(fleet, sampleEvent({ called_number: `${range}60`, source_ip: '192.0.2.60' }))).status).toBe(201);
    expect((await postEvent(fleet, sampleEvent({ called_number: `${range}61` }))).status).toBe(201);
    await h.settled();
    expect((await lookup(`${range}99`)).body.range).toMatchObject({ numbers_seen: 2 });
    const seen = (await lookup(`${range}60`)).body;
    expect(seen).toMatchObject({ found: true, seen_count: 2, source_ip_count: 2, range: { numbers_seen: 2 } });
    expect(seen.range!.reasons[1]).toBe('called from 2 distinct source addresses');
  });

  it('answers the range in a bulk lookup, found or not, as the single lookup does', async () => {
    const range = nextRange();
    expect((await postEvent(fleet, sampleEvent({ called_number: `${range}20` }))).status).toBe(201);
    await h.settled();
    const res = await caller.api('/api/phone-numbers/lookup', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ phone_numbers: [`${range}20`, `${range}21`, '100'] }) });
    expect(res.status).toBe(200);
    const { results } = (await res.json()) as { results: Array<Record<string, unknown>> };
    expect(results[0]).toEqual((await lookup(`${range}20`)).body);
    expect(results[1]).toEqual((await lookup(`${range}21`)).body);
    expect(results[1]).toMatchObject({ found: false, range: { prefix: range, numbers_seen: 1 } });
    expect(results[2]).not.toHaveProperty('range');
  });

  it('counts an account’s own new event in its range at once, though the range was answered from memory', async () => {
    const range = nextRange();
    const own = await h.account();
    expect((await postEvent(fleet, sampleEvent({ called_number: `${range}30` }))).status).toBe(201);
    await h.settled();
    expect((await lookup(`${range}99`, own)).body.range).toMatchObject({ numbers_seen: 1 });
    // No settle: the lookup waits for the fold of the account's own events in the range.
    expect((await postEvent(own, sampleEvent({ called_number: `${range}31` }))).status).toBe(201);
    expect((await lookup(`${range}99`, own)).body.range).toMatchObject({ numbers_seen: 2 });
    // And in a range it had no evidence of before: kept as "no range" a moment ago.
    const fresh = nextRange();
    expect((await lookup(`${fresh}99`, own)).body).not.toHaveProperty('range');
    expect((await postEvent(own, sampleEvent({ called_number: `${fresh}01` }))).status).toBe(201);
    expect((await lookup(`${fresh}99`, own)).body.range).toMatchObject({ numbers_seen: 1 });
  });

  it('answers each range lookup entry’s range score (docs/api.md §13): the score its number’s answer gives, 0 for padding and for a number in no range', async () => {
    const range = nextRange();
    const own = await h.account();
    expect((await postEvent(fleet, sampleEvent({ called_number: `${range}50`, source_ip: '192.0.2.50' }))).status).toBe(201);
    expect((await postEvent(own, sampleEvent({ called_number: `${range}51`, source_ip: '192.0.2.51', sip_method: 'OPTIONS' }))).status).toBe(201);
    const extension = `7${String(block).padStart(3, '0')}`;
    expect((await postEvent(fleet, sampleEvent({ called_number: extension }))).status).toBe(201);
    await h.settled();
    const entryOf = async (key: string, who: TestAccount) => {
      const hash = createHash('sha256').update(key, 'utf8').digest('hex');
      const res = await who.api(`/api/phone-numbers/range/${hash.slice(0, 5)}`);
      expect(res.status).toBe(200);
      const { entries } = (await res.json()) as { entries: Array<{ suffix: string; seen_count: number; score: number; range_score: number }> };
      expect(entries.filter((e) => e.seen_count === 0).every((e) => e.score === 0 && e.range_score === 0)).toBe(true);
      return entries.find((e) => e.suffix === hash.slice(5));
    };
    // The caller sees the shared number alone; the account its own beside it: the range differs.
    const callerRange = (await lookup(`${range}50`)).body.range!;
    const ownRange = (await lookup(`${range}50`, own)).body.range!;
    expect(callerRange.numbers_seen).toBe(1);
    expect(ownRange.numbers_seen).toBe(2);
    expect(ownRange.score).toBeGreaterThan(callerRange.score);
    expect((await entryOf(`${range}50`, caller))!.range_score).toBe(callerRange.score);
    expect((await entryOf(`${range}50`, own))!.range_score).toBe(ownRange.score);
    expect(await entryOf(`${range}51`, caller)).toBeUndefined();
    expect((await entryOf(extension, caller))!).toMatchObject({ seen_count: 1, range_score: 0 });
  });

  it('rebuilds the ranges the fold kept, exactly', async () => {
    const range = nextRange();
    const own = await h.account();
    for (const [who, n, ip, method] of [
      [fleet, '40', '192.0.2.1', 'INVITE'],
      [own, '40', '192.0.2.1', 'OPTIONS'],
      [own, '41', '192.0.2.2', 'INVITE'],
      [fleet, '42', '192.0.2.3', 'REGISTER'],
    ] as const) {
      expect((await postEvent(who, sampleEvent({ called_number: `${range}${n}`, source_ip: ip, sip_method: method }))).status).toBe(201);
    }
    await h.settled();
    const folded = await aggregateSnapshot(h.services.database.db);
    expect(folded.range_aggregates!.some((row) => row.includes(range))).toBe(true);
    await rebuildAggregates(h.services.database.db, h.services.database.caps);
    expect(await aggregateSnapshot(h.services.database.db)).toEqual(folded);
  });

  it('finds the same range in SQL as rangeOfNumberKey does, on this store', async () => {
    const keys = ['+46812118532', '+4681211853', '+1234567', '+12345678', '+123456789012345', '+1234567890123456', '+0812118532', '0046812118532', '100', '+4681211853a', '+46 8121185', '', '+', '+12345678#', 'abc'];
    const { rows } = await sql<{ k: string; r: string | null }>`select k, ${rangeOfKeySql(sql`k`)} as r from (${sql.join(
      keys.map((k) => sql`select ${k} as k`),
      sql` union all `,
    )}) t`.execute(h.services.database.db);
    expect(Object.fromEntries(rows.map((row) => [row.k, row.r]))).toEqual(Object.fromEntries(keys.map((k) => [k, rangeOfNumberKey(k)])));
  });
});

/** Another instance's fold reaches this one's kept range answers within the bound of docs/api.md §7. */
describe('range freshness across instances', () => {
  const CACHE_MS = 60_000;
  /** Within the contract's 1 s with room for a loaded machine, as numbers' freshness is held; far below the cache's minute. */
  const SEEN_WITHIN_MS = 3000;
  let first: Harness;
  let second: Harness;

  beforeAll(async () => {
    first = await startHarness({ TOLLWATCH_LOOKUP_CACHE_MS: String(CACHE_MS) });
    second = await startHarness({ DATABASE_URL: first.config.databaseUrl, TOLLWATCH_LOOKUP_CACHE_MS: String(CACHE_MS) });
  });
  afterAll(async () => {
    await second?.app.close();
    await second?.services.close();
    await first?.close();
  });

  it('sees another instance’s event in a range it keeps in memory (with evidence, or with none) within 1 s', async () => {
    const fleet = await first.account({ trusted: true });
    const viewer = await first.account({ permissions: ['read:phone-numbers'] });
    const token = await viewer.token();
    const range = `+4420${Math.floor(1000 + Math.random() * 8999)}`;
    const numbersSeen = async () => {
      const res = await fetch(`${second.url}/api/phone-numbers/${encodeURIComponent(`${range}99`)}`, { headers: { authorization: `Bearer ${token}` } });
      return ((await res.json()) as { range?: RangePart }).range?.numbers_seen ?? 0;
    };
    expect(await numbersSeen()).toBe(0);
    expect((await postEvent(fleet, sampleEvent({ called_number: `${range}01` }))).status).toBe(201);
    await first.services.aggregateFolder.settle();
    const started = Date.now();
    expect(await within(SEEN_WITHIN_MS, async () => (await numbersSeen()) === 1)).toBe(true);
    // Kept for a minute now; another number of the range, folded by the first instance.
    expect(await numbersSeen()).toBe(1);
    expect((await postEvent(fleet, sampleEvent({ called_number: `${range}02` }))).status).toBe(201);
    await first.services.aggregateFolder.settle();
    expect(await within(SEEN_WITHIN_MS, async () => (await numbersSeen()) === 2)).toBe(true);
    expect(Date.now() - started).toBeLessThan(2 * SEEN_WITHIN_MS);
  });
});
