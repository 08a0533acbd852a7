import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.ts';
import { saveUnlimitedPlan, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { medallionMissing, startMedallion, type Medallion } from '../support/medallion.ts';

type Json = Record<string, any>;
const API_ROOT = 'tollwatch-interop';
const COLLECTION = '91a7b528-80eb-42ed-a74d-c6fbd5a26116';
const WRITE_ONLY = '472c94ae-3113-4e3e-a4dd-a9f4ac7471d4';
const TLP_RED = 'marking-definition--e828b379-4e03-4974-9ac4-e53a884c97c1';
const T0 = '2025-01-01T00:00:00.000Z';
const USER = 'tollwatch-reader';

const id = (type: string, n: number) => `${type}--00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const indicator = (n: number, pattern: string, confidence: number, over: Json = {}): Json => ({
  type: 'indicator',
  spec_version: '2.1',
  id: id('indicator', n),
  created: T0,
  modified: T0,
  valid_from: T0,
  name: `indicator ${n}`,
  indicator_types: ['malicious-activity'],
  pattern,
  pattern_type: 'stix',
  confidence,
  ...over,
});
const number = (value: string) => `[x-tollwatch-phone-number:value = '${value}']`;
const ipv4 = (value: string) => `[ipv4-addr:value = '${value}']`;
const ipv6 = (value: string) => `[ipv6-addr:value = '${value}']`;

/** What medallion's collection holds at the start, in the order it was added. */
const OBJECTS: Json[] = [
  indicator(1, number('+442079460101'), 80),
  indicator(2, ipv4('198.51.100.7'), 60),
  indicator(3, ipv6('2001:db8::7'), 90),
  // Valid until a day long gone: kept, but no evidence.
  indicator(4, number('+442079460104'), 70, { valid_until: '2025-06-01T00:00:00.000Z' }),
  indicator(5, ipv4('198.51.100.8'), 70, { modified: '2025-01-02T00:00:00.000Z', revoked: true }),
  indicator(6, number('+442079460106'), 70, { object_marking_refs: [TLP_RED] }),
  // Two versions of one indicator: medallion serves the newer (TAXII 2.1 §3.4.2, match[version] defaults to last).
  indicator(7, number('+442079460107'), 30),
  indicator(7, number('+442079460107'), 90, { modified: '2025-01-03T00:00:00.000Z' }),
  { type: 'identity', spec_version: '2.1', id: id('identity', 8), created: T0, modified: T0, name: 'Interop Carrier', identity_class: 'organization' },
  { type: 'malware', spec_version: '2.1', id: id('malware', 9), created: T0, modified: T0, name: 'dialer', is_family: true },
];

/** The memory backend's data: a discovery resource, and one API root with a readable and a write-only collection. */
function medallionData(): Json {
  const manifest = OBJECTS.map((o, i) => ({
    id: o.id,
    date_added: `2025-02-01T00:00:${String(i).padStart(2, '0')}.000000Z`,
    version: o.modified,
    media_type: 'application/stix+json;version=2.1',
  }));
  const collection = (over: Json) => ({ can_read: true, can_write: true, media_types: ['application/stix+json;version=2.1'], objects: [], manifest: [], ...over });
  return {
    '/discovery': { title: 'medallion for Tollwatch', default: `{base}/${API_ROOT}/`, api_roots: [`{base}/${API_ROOT}/`] },
    [API_ROOT]: {
      information: { title: 'Interop indicators', versions: ['application/taxii+json;version=2.1'], max_content_length: 1_000_000 },
      status: [],
      collections: [
        collection({ id: COLLECTION, title: 'Toll fraud indicators', alias: 'toll-fraud', objects: OBJECTS, manifest }),
        collection({ id: WRITE_ONLY, title: 'Submissions', can_read: false }),
      ],
    },
  };
}

const missing = medallionMissing();

/**
 * OASIS's reference TAXII 2.1 server, medallion (test/fixtures/medallion, with its in-memory
 * backend), as a peer (docs/federation.md, "Interoperability"): added as the operator adds one,
 * polled page by page with its small pages, resumed by `added_after`, and read again after a
 * TAXII client added objects to it.
 */
describe.skipIf(missing !== undefined)('medallion, the OASIS TAXII 2.1 server, as a peer', () => {
  let h: Harness;
  let medallion: Medallion;
  let reader: TestAccount;

  beforeAll(async () => {
    medallion = await startMedallion({ users: { [USER]: 'medallion-secret', writer: 'writer-secret' }, taxii: { max_page_size: 2 }, data: medallionData() });
    // The background poller's turn is an hour away: the test polls when it means to.
    h = await startHarness({ TOLLWATCH_TAXII_PUBLISH_INTERVAL: '3600' }, { federation: { tickMs: 3_600_000 } });
    reader = await h.account({ plan: await saveUnlimitedPlan(h), permissions: ['read:ip-addresses', 'read:phone-numbers'] });
  });
  afterAll(async () => {
    await h?.close();
    await medallion?.stop();
  });

  const lookup = async (path: string) => {
    const res = await reader.api(path);
    return { status: res.status, body: (await res.json()) as Json };
  };
  const numberLookup = (value: string) => lookup(`/api/phone-numbers/${encodeURIComponent(value)}`);
  const addressLookup = (value: string) => lookup(`/api/ip-addresses/${value}`);
  /** Waits until the lookup shows the peer's say with this confidence, and returns the answer. */
  const peerSays = (what: string, ask: () => Promise<{ status: number; body: Json }>, confidence: number) =>
    eventually(`${what} answered with medallion's say at ${confidence}`, ask, (seen) => seen.status === 200 && seen.body.peers?.sightings?.[0]?.confidence === confidence);
  const rows = async (peerId: string) =>
    (await h.services.database.db.selectFrom('peer_indicators').select(['object_id', 'value', 'confidence', 'valid_until', 'revoked', 'tlp']).where('peer_id', '=', peerId).orderBy('object_id').execute()).map((r) => ({
      ...r,
      confidence: Number(r.confidence),
      revoked: Number(r.revoked),
    }));

  it('is added through its discovery URL, read page by page, answers lookups, resumes by added_after and picks up what a client added', async () => {
    const { peer, found } = await h.services.peers.add(
      { name: 'medallion', apiRoot: `${medallion.url}/taxii2/`, auth: 'basic', username: USER, credential: 'medallion-secret', trust: 0.5, pollSeconds: 3600 },
      'operator',
    );
    // The probe followed medallion's discovery to its default API root and named its collections.
    expect(found).toEqual({
      apiRoot: `${medallion.url}/${API_ROOT}/`,
      title: 'Interop indicators',
      collections: [
        { id: COLLECTION, title: 'Toll fraud indicators', alias: 'toll-fraud', canRead: true },
        { id: WRITE_ONLY, title: 'Submissions', canRead: false },
      ],
    });
    expect(peer).toMatchObject({ apiRoot: `${medallion.url}/${API_ROOT}/`, collections: [COLLECTION], hasCredential: true });

    // Nine objects served (the older version of indicator 7 is not), two a page: five pages, each after the first asked for by medallion's `next`.
    const first = (await h.services.peers.pollNow('medallion')).outcome;
    expect(first).toMatchObject({ ok: true, pages: 5, counts: { read: 9, accepted: 7, skipped: 2, refused: 0 } });
    expect(first.error).toBeUndefined();
    const { status } = await h.services.peers.show('medallion');
    expect(status).toMatchObject({ failures: 0, objectsRead: 9, objectsAccepted: 7, objectsSkipped: 2, objectsRefused: 0 });
    expect(status.lastSuccessAt).not.toBeNull();
    expect(await rows(peer.id)).toEqual([
      { object_id: id('indicator', 1), value: '+442079460101', confidence: 80, valid_until: null, revoked: 0, tlp: null },
      { object_id: id('indicator', 2), value: '198.51.100.7', confidence: 60, valid_until: null, revoked: 0, tlp: null },
      { object_id: id('indicator', 3), value: '2001:db8::7', confidence: 90, valid_until: null, revoked: 0, tlp: null },
      { object_id: id('indicator', 4), value: '+442079460104', confidence: 70, valid_until: '2025-06-01T00:00:00.000Z', revoked: 0, tlp: null },
      { object_id: id('indicator', 5), value: '198.51.100.8', confidence: 70, valid_until: null, revoked: 1, tlp: null },
      { object_id: id('indicator', 6), value: '+442079460106', confidence: 70, valid_until: null, revoked: 0, tlp: 'red' },
      { object_id: id('indicator', 7), value: '+442079460107', confidence: 90, valid_until: null, revoked: 0, tlp: null },
    ]);

    // Lookups answer with medallion's say, worth trust × confidence; TLP:RED is used here, only never passed on.
    for (const [what, ask, confidence] of [
      ['+442079460101', () => numberLookup('+442079460101'), 80],
      ['198.51.100.7', () => addressLookup('198.51.100.7'), 60],
      ['2001:db8::7', () => addressLookup('2001:db8::7'), 90],
      ['+442079460106', () => numberLookup('+442079460106'), 70],
      ['+442079460107', () => numberLookup('+442079460107'), 90],
    ] as const) {
      const { body } = await peerSays(what, ask, confidence);
      expect(body).toMatchObject({ found: true, seen_count: 0, local_score: 0, peers: { sightings: [{ peer: 'medallion', confidence, trust: 0.5, points: 0.5 * confidence }] } });
      expect(body.peers.sightings).toHaveLength(1);
    }
    // Expired and revoked: no evidence, so not found.
    expect((await numberLookup('+442079460104')).status).toBe(404);
    expect((await addressLookup('198.51.100.8')).status).toBe(404);

    // A second poll asks from the last page's X-TAXII-Date-Added-Last: nothing is read again.
    const before = await rows(peer.id);
    expect((await h.services.peers.pollNow('medallion')).outcome).toMatchObject({ ok: true, pages: 1, counts: { read: 0, accepted: 0, skipped: 0, refused: 0 } });
    expect((await h.services.peers.show('medallion')).status.objectsRead).toBe(9);
    expect(await rows(peer.id)).toEqual(before);

    // A TAXII client adds a new indicator and a newer version of one already read (TAXII 2.1 §5.5).
    const added = await medallion.request(`/${API_ROOT}/collections/${COLLECTION}/objects/`, 'writer', {
      method: 'POST',
      body: { objects: [indicator(10, ipv4('203.0.113.9'), 50), indicator(2, ipv4('198.51.100.7'), 100, { modified: '2025-03-01T00:00:00.000Z' })] },
    });
    expect(added.status).toBe(202);
    expect(((await added.json()) as Json).success_count).toBe(2);
    expect((await h.services.peers.pollNow('medallion')).outcome).toMatchObject({ ok: true, pages: 1, counts: { read: 2, accepted: 2, skipped: 0, refused: 0 } });
    expect((await h.services.peers.show('medallion')).status.objectsRead).toBe(11);
    expect((await rows(peer.id)).map((r) => [r.object_id, r.confidence])).toEqual([...before.map((r) => [r.object_id, r.object_id === id('indicator', 2) ? 100 : r.confidence]), [id('indicator', 10), 50]]);
    await peerSays('203.0.113.9', () => addressLookup('203.0.113.9'), 50);
    await peerSays('198.51.100.7', () => addressLookup('198.51.100.7'), 100);
    expect((await h.services.peers.pollNow('medallion')).outcome).toMatchObject({ ok: true, counts: { read: 0 } });
  });

  it('continues a listing across polls with the `next` medallion gave, within its life', async () => {
    // A poll of two pages at most: the listing of five pages takes three polls, the second and
    // third starting from the `next` the one before kept in the store.
    const short = await startHarness({ TOLLWATCH_TAXII_PUBLISH_INTERVAL: '3600' }, { federation: { tickMs: 3_600_000, maxPages: 2 } });
    // Its `next` lives an hour here, not 30 seconds, so a busy machine's slow turns do not expire it.
    const fresh = await startMedallion({ users: { [USER]: 'medallion-secret' }, taxii: { max_page_size: 2 }, data: medallionData(), backend: { session_timeout: 3600 } });
    try {
      const { peer } = await short.services.peers.add({ name: 'medallion', apiRoot: `${fresh.url}/${API_ROOT}/`, auth: 'basic', username: USER, credential: 'medallion-secret', collections: ['toll-fraud'] }, 'operator');
      expect(peer.collections).toEqual([COLLECTION]);
      const position = () => short.services.database.db.selectFrom('peer_positions').select(['added_after', 'next_page']).where('peer_id', '=', peer.id).executeTakeFirstOrThrow();
      const outcomes = [];
      const nexts = [];
      for (let poll = 0; poll < 3; poll++) {
        outcomes.push((await short.services.peers.pollNow('medallion')).outcome);
        nexts.push((await position()).next_page);
      }
      expect(outcomes.map((o) => [o.ok, o.pages, o.counts.read])).toEqual([[true, 2, 4], [true, 2, 4], [true, 1, 1]]);
      expect(outcomes.slice(0, 2).every((o) => /stopped after 2 pages/.test(o.error ?? ''))).toBe(true);
      // medallion's `next` is one token for the whole listing, kept until its last page.
      expect(nexts[0]).toMatch(/^[0-9a-f-]{36}$/);
      expect(nexts).toEqual([nexts[0], nexts[0], null]);
      expect(await position()).toEqual({ added_after: '2025-02-01T00:00:09.000000Z', next_page: null });
      expect((await short.services.peers.show('medallion')).status).toMatchObject({ objectsRead: 9, objectsAccepted: 7, objectsSkipped: 2, objectsRefused: 0 });
    } finally {
      await short.close();
      await fresh.stop();
    }
  });

  it('finishes a listing longer than one poll though its `next` expires between polls, from where the last written page ended', async () => {
    // Two pages a poll, a `next` living one second: each poll after the first finds its kept
    // `next` forgotten (medallion answers it 400) and continues from the last written page's end.
    const short = await startHarness({ TOLLWATCH_TAXII_PUBLISH_INTERVAL: '3600' }, { federation: { tickMs: 3_600_000, maxPages: 2 } });
    const forgetful = await startMedallion({ users: { [USER]: 'medallion-secret' }, taxii: { max_page_size: 2 }, data: medallionData(), backend: { session_timeout: 1, check_interval: 1 } });
    try {
      const { peer } = await short.services.peers.add({ name: 'medallion', apiRoot: `${forgetful.url}/${API_ROOT}/`, auth: 'basic', username: USER, credential: 'medallion-secret', collections: ['toll-fraud'] }, 'operator');
      const position = () => short.services.database.db.selectFrom('peer_positions').select(['added_after', 'next_page', 'written_through']).where('peer_id', '=', peer.id).executeTakeFirstOrThrow();
      /**
       * Waits until medallion has forgotten the `next` kept. Asked with a filter it was not given,
       * a `next` it knows is refused for the changed filter, one it forgot as not valid: the
       * probe tells them apart without reading a page of it.
       */
      const forgotten = async () => {
        const next = (await position()).next_page;
        expect(next).toMatch(/^[0-9a-f-]{36}$/);
        await eventually(
          `medallion to forget the next ${next}`,
          async () => (await forgetful.request(`/${API_ROOT}/collections/${COLLECTION}/objects/?next=${next}&match[type]=indicator`, USER)).text(),
          (body) => body.includes("'next' not valid"),
        );
      };
      const outcomes = [];
      const ends = [];
      for (let poll = 0; poll < 3; poll++) {
        if (poll > 0) await forgotten();
        outcomes.push((await short.services.peers.pollNow('medallion')).outcome);
        ends.push((await position()).written_through);
      }
      // Every object read once: the old way, each poll would start over and read the same first four.
      expect(outcomes.map((o) => [o.ok, o.pages, o.counts.read])).toEqual([[true, 2, 4], [true, 2, 4], [true, 1, 1]]);
      expect(outcomes.slice(0, 2).every((o) => /stopped after 2 pages/.test(o.error ?? ''))).toBe(true);
      // Each later poll resumed from the end the poll before wrote: the fourth and the eighth served object's date_added.
      expect(ends).toEqual(['2025-02-01T00:00:03.000000Z', '2025-02-01T00:00:08.000000Z', '2025-02-01T00:00:09.000000Z']);
      expect(outcomes[1]!.error).toContain(`its listing continued from ${ends[0]}`);
      expect(outcomes[2]!.error).toMatch(new RegExp(`^the peer no longer knew the next kept for collection ${COLLECTION} \\(it answered 400\\): its listing continued from ${ends[1]!.replace(/\./g, '\\.')}$`));
      expect(await position()).toEqual({ added_after: '2025-02-01T00:00:09.000000Z', next_page: null, written_through: '2025-02-01T00:00:09.000000Z' });
      const { status } = await short.services.peers.show('medallion');
      expect(status).toMatchObject({ failures: 0, objectsRead: 9, objectsAccepted: 7, objectsSkipped: 2, objectsRefused: 0 });
      expect(status.lastError).toBe(outcomes[2]!.error);
      expect((await short.services.database.db.selectFrom('peer_indicators').select('object_id').where('peer_id', '=', peer.id).orderBy('object_id').execute()).map((r) => r.object_id)).toEqual(
        [1, 2, 3, 4, 5, 6, 7].map((n) => id('indicator', n)),
      );
    } finally {
      await short.close();
      await forgetful.stop();
    }
  });
});
