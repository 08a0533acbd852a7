import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rebuildAggregates } from '../../src/store/fold/aggregates-rebuild.ts';
import { ago, postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';

/** An event time `minutes` ago, in the node's form. */

type Indicator = Record<string, any> & { id: string; created: string; modified: string };

const STIX_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The rules of STIX 2.1 (§3, §4.7 Indicator) every indicator of a feed keeps. */
function expectValidIndicator(o: Indicator) {
  expect(o.type).toBe('indicator');
  expect(o.spec_version).toBe('2.1');
  expect(o.id).toMatch(/^indicator--[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  for (const field of ['created', 'modified', 'valid_from']) expect(o[field], field).toMatch(STIX_TIME);
  expect(o.modified >= o.created, `${o.id}: modified before created`).toBe(true);
  if (o.valid_until !== undefined) {
    expect(o.valid_until).toMatch(STIX_TIME);
    expect(o.valid_until > o.valid_from, `${o.id}: valid_until not after valid_from`).toBe(true);
  }
  expect(Number.isInteger(o.confidence) && o.confidence >= 0 && o.confidence <= 100).toBe(true);
  expect(o.pattern_type).toBe('stix');
  expect(o.indicator_types).toEqual(['malicious-activity']);
  if (o.labels !== undefined) expect(o.labels.every((l: unknown) => typeof l === 'string' && l !== '')).toBe(true);
}

/** What a consumer compares: everything but `modified`. */
const content = ({ modified: _modified, ...rest }: Indicator) => JSON.stringify(rest);

/**
 * STIX that versions correctly (docs/api.md §14): an indicator's `created` never changes once
 * published, any change to it comes with a later `modified`, an unchanged one keeps its
 * `modified`, and `valid_until` says when it falls below the feed's threshold.
 */
describe('STIX indicators across polls', () => {
  let h: Harness;
  let who: TestAccount;
  const CHANGED = '+46812118701';
  const OLDER_ADDED = '+46812118702';
  const UNTOUCHED = '+46812118703';

  const poll = async (kind: 'phone-numbers' | 'ip-addresses') => {
    const bundle = (await (await who.api(`/api/feeds/${kind}?min_score=1&format=stix`)).json()) as { objects: Indicator[] };
    for (const o of bundle.objects) expectValidIndicator(o);
    return new Map(bundle.objects.map((o) => [o.id, o]));
  };
  const byNumber = (objects: Map<string, Indicator>, number: string) => [...objects.values()].find((o) => o.pattern.includes(`'${number}'`))!;

  beforeAll(async () => {
    h = await startHarness();
    who = await h.account();
    for (const [i, number] of [CHANGED, CHANGED, OLDER_ADDED, UNTOUCHED].entries()) {
      expect((await postEvent(who, sampleEvent({ called_number: number, source_ip: `203.0.113.${10 + i}`, event_timestamp: ago(60 - i) }))).status).toBe(201);
    }
    await h.settled();
  });
  afterAll(() => h?.close());

  it('a second poll after new events: created kept, changed objects a later modified, the others the same', async () => {
    const before = { numbers: await poll('phone-numbers'), addresses: await poll('ip-addresses') };
    expect(before.numbers.size).toBe(3);
    for (const o of before.numbers.values()) expect(o.valid_until, o.id).toBeDefined();

    // A later event of one number, an event older than any yet for another (its first
    // sighting moves earlier: `created` must not), and a number never seen.
    expect((await postEvent(who, sampleEvent({ called_number: CHANGED, source_ip: '203.0.113.50', event_timestamp: ago(1) }))).status).toBe(201);
    expect((await postEvent(who, sampleEvent({ called_number: OLDER_ADDED, source_ip: '203.0.113.51', event_timestamp: ago(600) }))).status).toBe(201);
    expect((await postEvent(who, sampleEvent({ called_number: '+46812118799', source_ip: '203.0.113.52', event_timestamp: ago(1) }))).status).toBe(201);
    await h.settled();
    const after = { numbers: await poll('phone-numbers'), addresses: await poll('ip-addresses') };

    for (const [kind, objects] of Object.entries(after)) {
      const earlier = before[kind as keyof typeof before];
      for (const [id, now] of objects) {
        const then = earlier.get(id);
        if (!then) continue;
        expect(now.created, `${kind} ${id}: created changed`).toBe(then.created);
        if (content(now) === content(then)) expect(now.modified, `${kind} ${id}: unchanged, new modified`).toBe(then.modified);
        else expect(now.modified > then.modified, `${kind} ${id}: changed without a later modified`).toBe(true);
      }
    }
    expect(content(byNumber(after.numbers, CHANGED))).not.toBe(content(byNumber(before.numbers, CHANGED)));
    expect(byNumber(after.numbers, OLDER_ADDED).valid_from < byNumber(before.numbers, OLDER_ADDED).valid_from).toBe(true);
    expect(byNumber(after.numbers, UNTOUCHED)).toEqual(byNumber(before.numbers, UNTOUCHED));
    expect(after.numbers.size).toBe(4);
  });

  it('a rebuild of the aggregates keeps every created, and versions every object anew', async () => {
    const before = await poll('phone-numbers');
    await rebuildAggregates(h.services.database.db, h.services.database.caps);
    const after = await poll('phone-numbers');
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
    for (const [id, now] of after) {
      expect(now.created).toBe(before.get(id)!.created);
      expect(now.modified > before.get(id)!.modified).toBe(true);
    }
  });
});
