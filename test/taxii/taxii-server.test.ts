import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { indicatorId } from '../../src/domain/intelligence/stix-indicators.ts';
import { TAXII_COLLECTIONS } from '../../src/domain/intelligence/taxii-collections.ts';
import { TaxiiPublisher } from '../../src/domain/intelligence/taxii-publication.ts';
import { SqlTaxiiRepository } from '../../src/store/repositories/taxii-repository.ts';
import { nodeTime, probes } from '../support/fleet-events.ts';
import { postEvent, sampleEvent, saveUnlimitedPlan, startHarness, type Harness, type TestAccount } from '../support/harness.ts';

const TAXII = 'application/taxii+json;version=2.1';
const ROOT = '/taxii2/tollwatch';
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

type Json = Record<string, any>;

/** Submits events through the batch route, a thousand a request. */
async function batch(who: TestAccount, events: Json[]) {
  for (let i = 0; i < events.length; i += 1000) {
    const res = await who.api('/api/events/batch', { method: 'POST', headers: { 'content-type': 'application/x-ndjson' }, body: events.slice(i, i + 1000).map((e) => JSON.stringify(e)).join('\n') });
    expect(res.status).toBe(200);
  }
}

/**
 * The TAXII 2.1 server (docs/taxii.md), held to OASIS TAXII 2.1 as its clients use it: the
 * resources' required properties, content negotiation, errors in TAXII's shape, paging that
 * brings every object once in date_added order (by `next` as taxii2client's as_pages does, and by
 * the X-TAXII-Date-Added-Last header as OpenCTI's feed does), versions, revocation, and nothing
 * of an account's private events in any collection. Publication is run by the test (the
 * server's own turn is an hour away), on the server's publisher or on one with a clock of the
 * test's.
 */
describe('TAXII 2.1 server', () => {
  let h: Harness;
  /** The shared data set: a trusted account (the operator's fleet). */
  let fleet: TestAccount;
  /** A platform's client: lookups' permissions, an unlimited allowance. */
  let reader: TestAccount;
  /** A contributor, whose events are its own. */
  let contributor: TestAccount;

  const taxii = (who: TestAccount, path: string, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    if (!headers.has('accept')) headers.set('accept', TAXII);
    return who.api(path, { ...init, headers });
  };
  const basic = (who: TestAccount) => `Basic ${Buffer.from(`${who.clientId}:${who.clientSecret}`).toString('base64')}`;
  const publish = () => h.services.taxiiPublisher.publish();

  /** Every version a poller gets from `added_after` on, following `next` (taxii2client's as_pages). */
  const pullByNext = async (collection: string, limit: number, params = '') => {
    const got: Json[] = [];
    let next: string | undefined;
    for (let pages = 0; pages < 10_000; pages++) {
      const res = await taxii(reader, `${ROOT}/collections/${collection}/objects/?limit=${limit}${params}${next ? `&next=${next}` : ''}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(TAXII);
      const envelope = (await res.json()) as Json;
      if (!envelope.objects) {
        expect(envelope).toEqual({});
        return got;
      }
      expect(envelope.objects.length).toBeLessThanOrEqual(limit);
      got.push(...envelope.objects);
      if (!envelope.more) return got;
      expect(typeof envelope.next).toBe('string');
      next = envelope.next;
    }
    throw new Error('paging never ended');
  };

  /** The same by the X-TAXII-Date-Added-Last header as the next added_after (OpenCTI's feed), with each version's date_added from the manifest. */
  const pullByHeader = async (collection: string, limit: number, from?: string) => {
    const got: Array<{ id: string; date_added: string; version: string; media_type?: string }> = [];
    let after = from;
    for (let pages = 0; pages < 10_000; pages++) {
      const res = await taxii(reader, `${ROOT}/collections/${collection}/manifest/?limit=${limit}${after ? `&added_after=${after}` : ''}`);
      expect(res.status).toBe(200);
      const manifest = (await res.json()) as Json;
      if (!manifest.objects) return { got, last: after };
      const first = res.headers.get('x-taxii-date-added-first');
      const last = res.headers.get('x-taxii-date-added-last');
      expect(first).toBe(manifest.objects[0].date_added);
      expect(last).toBe(manifest.objects.at(-1).date_added);
      got.push(...manifest.objects);
      after = last!;
      if (!manifest.more) return { got, last: after };
    }
    throw new Error('paging never ended');
  };

  beforeAll(async () => {
    // The server's own publisher waits an hour: the test publishes when it means to.
    h = await startHarness({ TOLLWATCH_TAXII_PUBLISH_INTERVAL: '3600' });
    const plan = await saveUnlimitedPlan(h);
    fleet = await h.account({ trusted: true, plan });
    reader = await h.account({ plan, permissions: ['read:phone-numbers', 'read:ip-addresses'] });
    contributor = await h.account({ plan });
  });
  afterAll(() => h?.close());

  it('discovery, the API root and the collections carry what TAXII 2.1 requires, in its media type', async () => {
    const discovery = await taxii(reader, '/taxii2/');
    expect(discovery.status).toBe(200);
    expect(discovery.headers.get('content-type')).toBe(TAXII);
    const found = (await discovery.json()) as Json;
    expect(typeof found.title).toBe('string');
    expect(found.api_roots).toEqual([`${ROOT}/`]);
    expect(found.default).toBe(`${ROOT}/`);

    const root = (await (await taxii(reader, `${ROOT}/`)).json()) as Json;
    expect(typeof root.title).toBe('string');
    expect(root.versions).toContain(TAXII);
    expect(Number.isInteger(root.max_content_length) && root.max_content_length > 0).toBe(true);

    const { collections } = (await (await taxii(reader, `${ROOT}/collections/`)).json()) as { collections: Json[] };
    expect(collections.map((c) => c.alias)).toEqual(['ip-addresses', 'phone-numbers', 'number-ranges']);
    for (const c of collections) {
      expect(c.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(typeof c.title).toBe('string');
      expect(c.can_read).toBe(true);
      expect(c.can_write).toBe(false);
      expect(c.media_types).toEqual(['application/stix+json;version=2.1']);
      // By id and by alias alike.
      expect(await (await taxii(reader, `${ROOT}/collections/${c.id}/`)).json()).toEqual(c);
      expect(await (await taxii(reader, `${ROOT}/collections/${c.alias}/`)).json()).toEqual(c);
    }
    expect(new Set(collections.map((c) => c.title)).size).toBe(collections.length);

    // A client with only one of the two permissions reads only that collection.
    const numbersOnly = await h.account({ permissions: ['read:phone-numbers'] });
    const seen = (await (await taxii(numbersOnly, `${ROOT}/collections/`)).json()) as { collections: Json[] };
    expect(Object.fromEntries(seen.collections.map((c) => [c.alias, c.can_read]))).toEqual({ 'ip-addresses': false, 'phone-numbers': true, 'number-ranges': true });
    const refused = await taxii(numbersOnly, `${ROOT}/collections/ip-addresses/objects/`);
    expect(refused.status).toBe(403);
    expect(refused.headers.get('content-type')).toBe(TAXII);
    expect(((await refused.json()) as Json).http_status).toBe('403');
  });

  it('answers only what TAXII 2.1 clients accept: 406 otherwise, errors in its error resource', async () => {
    for (const accept of [TAXII, 'application/taxii+json', 'application/taxii+json; version=2.1', '*/*', `application/json;q=0.5, ${TAXII}`]) {
      expect((await taxii(reader, '/taxii2/', { headers: { accept } })).status, accept).toBe(200);
    }
    for (const accept of ['application/json', 'application/taxii+json;version=2.0', 'application/stix+json;version=2.1', 'text/html', `${TAXII};q=0`]) {
      const res = await taxii(reader, `${ROOT}/collections/phone-numbers/objects/`, { headers: { accept } });
      expect(res.status, accept).toBe(406);
      expect(res.headers.get('content-type')).toBe(TAXII);
      const error = (await res.json()) as Json;
      expect(typeof error.title).toBe('string');
      expect(error.http_status).toBe('406');
    }

    const unknown = await taxii(reader, `${ROOT}/collections/no-such-collection/objects/`);
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toBe(TAXII);
    expect(await unknown.json()).toMatchObject({ title: 'Not found', http_status: '404' });
    expect((await taxii(reader, `${ROOT}/collections/${crypto.randomUUID()}/`)).status).toBe(404);
    expect((await taxii(reader, `${ROOT}/status/${crypto.randomUUID()}/`)).status).toBe(404);
    expect((await taxii(reader, '/taxii2/other-root/')).status).toBe(404);

    // Read-only: adding and deleting are refused, before any body is read.
    const added = await taxii(reader, `${ROOT}/collections/phone-numbers/objects/`, { method: 'POST', headers: { 'content-type': TAXII }, body: '{"objects":[]}' });
    expect(added.status).toBe(403);
    expect(((await added.json()) as Json).error_code).toBe('read_only');
    expect((await taxii(reader, `${ROOT}/collections/phone-numbers/objects/indicator--${crypto.randomUUID()}/`, { method: 'DELETE' })).status).toBe(403);

    // Malformed parameters are 400 (TAXII 2.1 §3.4), each named.
    for (const query of ['limit=0', 'limit=-3', 'limit=ten', 'added_after=yesterday', 'added_after=2026-02-30T00:00:00Z', 'next=garbage!', 'match[version]=newest', 'match[version]=all,last', 'match[id]=not-an-id', 'added_after=2026-01-01T00:00:00Z&added_after=2026-01-02T00:00:00Z']) {
      const res = await taxii(reader, `${ROOT}/collections/phone-numbers/objects/?${query}`);
      expect(res.status, query).toBe(400);
      expect(((await res.json()) as Json).http_status, query).toBe('400');
    }

    // The trailing slash TAXII wants is added by a redirect.
    const bare = await taxii(reader, `${ROOT}/collections?x=1`, { redirect: 'manual' });
    expect(bare.status).toBe(308);
    expect(bare.headers.get('location')).toBe(`${ROOT}/collections/?x=1`);
  });

  it('authenticates as TAXII clients do: Basic with a client’s id and secret, or a bearer token; 401 with the challenges /api sends', async () => {
    const none = await fetch(`${h.url}${ROOT}/collections/`, { headers: { accept: TAXII } });
    expect(none.status).toBe(401);
    expect(none.headers.get('content-type')).toBe(TAXII);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer realm="tollwatch", resource_metadata="[^"]+", Basic realm="tollwatch"/);
    const wrong = await fetch(`${h.url}${ROOT}/collections/`, { headers: { accept: TAXII, authorization: `Basic ${Buffer.from(`${reader.clientId}:wrong`).toString('base64')}` } });
    expect(wrong.status).toBe(401);
    expect(((await wrong.json()) as Json).http_status).toBe('401');
    // MISP writes the scheme in lower case.
    for (const authorization of [basic(reader), basic(reader).replace('Basic', 'basic'), `Bearer ${await reader.token()}`]) {
      expect((await fetch(`${h.url}${ROOT}/collections/`, { headers: { accept: TAXII, authorization } })).status, authorization.slice(0, 6)).toBe(200);
    }
  });

  it('pages over thousands of objects with small limits, every object once in date_added order, by next or by the date header', async () => {
    // 2,500 numbers in the shared data set, each scoring the threshold.
    const base = Date.now() - 3_600_000;
    const events = Array.from({ length: 2500 }, (_, i) => probes(`+4681300${String(i).padStart(4, '0')}`, `10.${Math.floor(i / 250)}.${i % 250}`, base + i * 10)).flat();
    await batch(fleet, events);
    await h.settled();
    const report = await publish();
    expect(report.ran).toBe(true);

    const numbers = await pullByNext('phone-numbers', 37);
    expect(numbers.length).toBe(2500);
    expect(new Set(numbers.map((o) => o.id)).size).toBe(2500);
    for (const o of numbers) {
      expect(o.type).toBe('indicator');
      expect(o.spec_version).toBe('2.1');
      expect(o.confidence).toBeGreaterThanOrEqual(50);
    }
    const manifest = await pullByHeader('phone-numbers', 41);
    expect(manifest.got.map((r) => r.id)).toEqual(numbers.map((o) => o.id));
    const added = manifest.got.map((r) => r.date_added);
    for (const d of added) expect(d).toMatch(TIMESTAMP);
    expect([...added].sort()).toEqual(added);
    expect(new Set(added).size).toBe(added.length);
    for (const [i, r] of manifest.got.entries()) {
      expect(r.version).toBe(numbers[i]!.modified);
      expect(r.media_type).toBe('application/stix+json;version=2.1');
    }

    // The second poll, from the last header: exactly what changed since, each once.
    const changed = numbers.slice(0, 30).map((o) => /'(.+)'/.exec(o.pattern)![1]!);
    const fresh = Array.from({ length: 20 }, (_, i) => `+4681399${String(i).padStart(4, '0')}`);
    const more = [
      ...changed.map((number) => sampleEvent({ called_number: number, source_ip: '10.200.0.1', sip_method: 'INVITE', event_timestamp: nodeTime(Date.now() - 1000) })),
      ...fresh.flatMap((number, i) => probes(number, `10.201.${i}`, Date.now() - 2000)),
    ];
    await batch(fleet, more);
    await h.settled();
    await publish();
    const second = await pullByHeader('phone-numbers', 7, manifest.last);
    const byId = new Map(numbers.map((o) => [o.id, o]));
    expect(second.got.length).toBe(50);
    expect(new Set(second.got.map((r) => r.id)).size).toBe(50);
    const renewed = second.got.filter((r) => byId.has(r.id));
    expect(renewed.length).toBe(30);
    for (const r of renewed) expect(Date.parse(r.version)).toBeGreaterThan(Date.parse(byId.get(r.id)!.modified));
    // A third poll brings nothing: an empty envelope, no date headers.
    const third = await taxii(reader, `${ROOT}/collections/phone-numbers/objects/?added_after=${second.last}`);
    expect(await third.json()).toEqual({});
    expect(third.headers.get('x-taxii-date-added-last')).toBeNull();
    // Publishing again with nothing changed adds nothing.
    expect((await publish()).versions).toBe(0);

    // An object's versions, and match[version] and match[id] over them.
    const id = renewed[0]!.id;
    const versions = (await (await taxii(reader, `${ROOT}/collections/phone-numbers/objects/${id}/versions/`)).json()) as Json;
    expect(versions.versions).toEqual([byId.get(id)!.modified, renewed[0]!.version]);
    const pick = async (version: string) => {
      const envelope = (await (await taxii(reader, `${ROOT}/collections/phone-numbers/objects/?match[id]=${id}&match[version]=${version}`)).json()) as Json;
      return (envelope.objects ?? []).map((o: Json) => o.modified);
    };
    expect(await pick('last')).toEqual([renewed[0]!.version]);
    expect(await pick('first')).toEqual([byId.get(id)!.modified]);
    expect(await pick('all')).toEqual(versions.versions);
    expect(await pick('first,last')).toEqual(versions.versions);
    expect(await pick(byId.get(id)!.modified)).toEqual([byId.get(id)!.modified]);
    expect(await pick('2001-01-01T00:00:00Z')).toEqual([]);
    const one = (await (await taxii(reader, `${ROOT}/collections/phone-numbers/objects/${id}/?match[version]=all`)).json()) as Json;
    expect(one.objects.map((o: Json) => o.modified)).toEqual(versions.versions);
    expect(new Set(one.objects.map((o: Json) => o.created)).size).toBe(1);
    expect((await taxii(reader, `${ROOT}/collections/phone-numbers/objects/indicator--${crypto.randomUUID()}/`)).status).toBe(404);
    // Types and STIX versions the collections do not hold match nothing, without an error.
    expect(await (await taxii(reader, `${ROOT}/collections/phone-numbers/objects/?match[type]=malware`)).json()).toEqual({});
    expect(await (await taxii(reader, `${ROOT}/collections/phone-numbers/objects/?match[spec_version]=2.0`)).json()).toEqual({});
    expect(((await (await taxii(reader, `${ROOT}/collections/phone-numbers/objects/?match[type]=indicator,malware&limit=1`)).json()) as Json).objects).toHaveLength(1);

    // The latest versions are the STIX feed's indicators (same ids, created and content) for a
    // caller who sees the shared data set only; the one scanner that dialled 30 numbers is the
    // one address that scores. Published again first, in case the hour turned meanwhile.
    await expect
      .poll(async () => {
        await publish();
        const same = async (kind: string) => {
          const feed = (await (await fleet.api(`/api/feeds/${kind}?format=stix&min_score=50`)).json()) as { objects: Json[] };
          const latest = await pullByNext(kind, 1000);
          const byFeed = new Map(feed.objects.map((o) => [o.id, JSON.stringify(o)]));
          return latest.length === feed.objects.length && latest.every((o) => byFeed.get(o.id) === JSON.stringify(o)) ? latest.length : -1;
        };
        return [await same('phone-numbers'), await same('ip-addresses')];
      })
      .toEqual([2520, 1]);
  });

  it('serves nothing of an account’s private events, to anyone', async () => {
    const secret = '+4681377777';
    for (let j = 0; j < 6; j++) {
      expect((await postEvent(contributor, sampleEvent({ called_number: secret, source_ip: '192.0.2.77', sip_method: 'INVITE', event_timestamp: nodeTime(Date.now() - 5000 + j) }))).status).toBe(201);
    }
    await h.settled();
    await publish();
    for (const who of [contributor, reader, fleet]) {
      for (const collection of TAXII_COLLECTIONS) {
        const all = await (await taxii(who, `${ROOT}/collections/${collection.alias}/objects/?match[version]=all`)).text();
        expect(all).not.toContain(secret);
        expect(all).not.toContain('192.0.2.77');
      }
    }
  });

  it('publishes a change another instance stamped with a clock a second behind', async () => {
    await publish();
    const { changed_through: through } = await h.services.database.db.selectFrom('taxii_publication').select('changed_through').where('collection', '=', 'phone-numbers').executeTakeFirstOrThrow();
    const number = '+4681367000';
    await batch(fleet, probes(number, '198.20.0', Date.now() - 5000));
    await h.settled();
    // As if the instance that folded it had a clock a second behind this publisher's last read:
    // its fold stamps the row and logs the change with that instant.
    const behind = new Date(Date.parse(through!) - 1000).toISOString();
    await h.services.database.db.updateTable('number_aggregates').set({ changed_at: behind }).where('number_key', '=', number).execute();
    await h.services.database.db.insertInto('shared_changes').values({ aggregates: 'number_aggregates', changed: behind, key: number }).execute();
    await publish();
    const envelope = (await (await taxii(reader, `${ROOT}/collections/phone-numbers/objects/${indicatorId('phone-numbers', number)}/`)).json()) as Json;
    expect(envelope.objects).toHaveLength(1);
  });

  it('publishes the shared fleet’s number ranges in a collection of their own, as the feed’s range entries, and revokes one the operator allowlists', async () => {
    const block = '+46813551';
    const id = indicatorId('number-ranges', block);
    const versionsOf = async (ids: string[]) => {
      const envelope = (await (await taxii(reader, `${ROOT}/collections/number-ranges/objects/?match[version]=all&match[id]=${ids.join(',')}`)).json()) as Json;
      return (envelope.objects ?? []) as Json[];
    };
    // Ten numbers of one block, each probed six times from three sources through two nodes.
    await batch(fleet, Array.from({ length: 10 }, (_, i) => probes(`${block}0${i}`, `10.151.${i}`, Date.now() - 60_000 + i * 10)).flat());
    await h.settled();
    // The collection's latest version is the STIX feed's range indicator, object for object;
    // published again first in case the hour turned between the two.
    await expect
      .poll(async () => {
        await publish();
        const feed = (await (await reader.api('/api/feeds/phone-numbers?format=stix&ranges=include&min_score=50')).json()) as { objects: Json[] };
        const published = (await versionsOf([id])).at(-1);
        return published !== undefined && JSON.stringify(published) === JSON.stringify(feed.objects.find((o) => o.id === id));
      })
      .toBe(true);
    const [first] = await versionsOf([id]);
    expect(first).toMatchObject({ type: 'indicator', spec_version: '2.1', pattern: `[x-tollwatch-phone-number:value LIKE '${block}__']`, pattern_type: 'stix' });
    expect(first!.confidence).toBeGreaterThanOrEqual(50);
    expect(first!.revoked).toBeUndefined();
    // The numbers' collection has the numbers, not the block.
    expect(await (await taxii(reader, `${ROOT}/collections/phone-numbers/objects/?match[id]=${id}`)).json()).toEqual({});

    // A new number of the block: the fold logs the range's change and the next pass versions it.
    const count = (await versionsOf([id])).length;
    await batch(fleet, probes(`${block}50`, '10.152.0', Date.now() - 1000));
    await h.settled();
    await publish();
    const renewed = await versionsOf([id]);
    expect(renewed).toHaveLength(count + 1);
    expect(Date.parse(renewed.at(-1)!.modified)).toBeGreaterThan(Date.parse(renewed.at(-2)!.modified));

    // One number of the block on the operator's allowlist keeps the block out: revoked, then
    // published as a new object once the entry is gone.
    const { entry } = await h.services.allowlists.add('operator', { kind: 'phone_number', value: `${block}05` }, 'operator');
    await publish();
    expect((await versionsOf([id])).at(-1)).toMatchObject({ id, revoked: true });
    await h.services.allowlists.remove('operator', entry.id, 'operator');
    await publish();
    const again = await versionsOf([indicatorId('number-ranges', block, 1)]);
    expect(again).toHaveLength(1);
    expect(again[0]).toMatchObject({ pattern: first!.pattern });
    expect(again[0]!.revoked).toBeUndefined();
  });

  it('publishes each change once when several processes publish over one store', async () => {
    const store = new SqlTaxiiRepository(h.services.database.db, h.services.database.caps);
    const settings = { minScore: h.config.taxii.minScore, retentionDays: 30, scoring: h.config.scoring, now: () => new Date(Date.now() + 300_000) };
    const [a, b] = [new TaxiiPublisher(store, settings), new TaxiiPublisher(store, settings)];
    await batch(fleet, Array.from({ length: 10 }, (_, i) => probes(`+4681366${String(i).padStart(3, '0')}`, `198.19.${i}`, Date.now() - 10_000)).flat());
    await h.settled();
    const reports = await Promise.all([a.publish(), b.publish()]);
    expect(reports.filter((r) => r.ran).length).toBeGreaterThanOrEqual(1);
    const rows = await h.services.database.db.selectFrom('taxii_versions').select(['object_id', 'modified']).execute();
    const versions = rows.map((r) => `${r.object_id} ${r.modified}`);
    expect(new Set(versions).size).toBe(versions.length);
  });
});

describe('TAXII 2.1 revocation', () => {
  let h: Harness;
  let fleet: TestAccount;
  let reader: TestAccount;
  /** The publisher's clock: where the test stands it. */
  let clock = Date.now();

  beforeAll(async () => {
    h = await startHarness({ TOLLWATCH_TAXII_PUBLISH_INTERVAL: '3600' }, { taxiiClock: () => new Date(clock) });
    fleet = await h.account({ trusted: true });
    reader = await h.account({ permissions: ['read:phone-numbers'] });
  });
  afterAll(() => h?.close());

  it('revokes an indicator whose score falls below the threshold, and a value that scores again is a new object', async () => {
    const number = '+4681355555';
    const seenAt = Date.now() - 200 * 86_400_000;
    await batch(fleet, probes(number, '198.18.0', seenAt));
    await h.settled();
    // Published as it stood an hour after those events: it scored 54 then.
    clock = seenAt + 3_600_000;
    await h.services.taxiiPublisher.publish();
    // Its object, and the one a second generation would have.
    const ids = [indicatorId('phone-numbers', number), indicatorId('phone-numbers', number, 1)];
    const find = async () => {
      const res = await reader.api(`${ROOT}/collections/phone-numbers/objects/?match[version]=all&match[id]=${ids.join(',')}`, { headers: { accept: TAXII } });
      return (((await res.json()) as Json).objects ?? []) as Json[];
    };
    const live = await find();
    expect(live).toHaveLength(1);
    expect(live[0]!.id).toBe(ids[0]);
    expect(live[0]!.revoked).toBeUndefined();

    // Two hundred days on, its score has decayed below 50: a revoking version, same id, later modified.
    clock = Date.now();
    await h.services.taxiiPublisher.publish();
    const afterDecay = await find();
    expect(afterDecay).toHaveLength(2);
    const revoked = afterDecay[1]!;
    expect(revoked.id).toBe(ids[0]);
    expect(revoked.revoked).toBe(true);
    expect(Date.parse(revoked.modified)).toBeGreaterThan(Date.parse(live[0]!.modified));
    expect({ ...revoked, modified: undefined, revoked: undefined }).toEqual({ ...live[0], modified: undefined, revoked: undefined });
    // Nothing more happens to it while nothing changes.
    expect((await h.services.taxiiPublisher.publish()).versions).toBe(0);

    // Seen again: a new object (STIX forbids versions after a revocation); the revoked one stays revoked.
    await batch(fleet, probes(number, '198.18.1', Date.now() - 1000));
    await h.settled();
    await h.services.taxiiPublisher.publish();
    const again = await find();
    expect(again).toHaveLength(3);
    expect(again[2]!.id).toBe(ids[1]);
    expect(again[2]!.revoked).toBeUndefined();
    const latest = (await (await reader.api(`${ROOT}/collections/phone-numbers/objects/${ids[0]}/`, { headers: { accept: TAXII } })).json()) as Json;
    expect(latest.objects.map((o: Json) => o.revoked)).toEqual([true]);

    // Past the retention, the revoked object's versions go; the live object's latest stays.
    const store = new SqlTaxiiRepository(h.services.database.db, h.services.database.caps);
    expect(await store.prune('phone-numbers', new Date(Date.now() + 86_400_000).toISOString())).toBe(2);
    expect((await reader.api(`${ROOT}/collections/phone-numbers/objects/${ids[0]}/`, { headers: { accept: TAXII } })).status).toBe(404);
    expect((await find()).map((o) => o.id)).toEqual([ids[1]]);
  });

  it('spends the lookups allowance on reads of a collection, as a feed poll, with the RateLimit fields', async () => {
    await h.services.plans.save({ name: 'three-lookups', maySubmit: false, lookups: { limit: 3, windowSeconds: 3600 }, submissions: { limit: 1, windowSeconds: 3600 }, maxClients: null, eventReads: { limit: 10, windowSeconds: 3600 } });
    const platform = await h.account({ plan: 'three-lookups', permissions: ['read:phone-numbers'] });
    const get = (path: string) => platform.api(path, { headers: { accept: TAXII } });
    // Discovery and the collection documents cost nothing.
    for (const path of ['/taxii2/', `${ROOT}/`, `${ROOT}/collections/`, `${ROOT}/collections/phone-numbers/`]) {
      const res = await get(path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('ratelimit'), path).toBeNull();
    }
    for (const [i, path] of [`${ROOT}/collections/phone-numbers/objects/`, `${ROOT}/collections/phone-numbers/manifest/`, `${ROOT}/collections/phone-numbers/objects/`].entries()) {
      const res = await get(path);
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit-policy')).toBe('"lookups";q=3;w=3600');
      expect(res.headers.get('ratelimit')).toMatch(new RegExp(`^"lookups";r=${2 - i};t=\\d+$`));
    }
    const refused = await get(`${ROOT}/collections/phone-numbers/objects/`);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toBe(TAXII);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused.json()).toMatchObject({ http_status: '429', error_code: 'rate_limited' });
    // A refusal before the allowance (the collection it may not read) spends nothing and is 403.
    expect((await get(`${ROOT}/collections/ip-addresses/objects/`)).status).toBe(403);
  });
});
