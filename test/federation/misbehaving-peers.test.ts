import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { saveUnlimitedPlan, startHarness, type Harness, type TestAccount } from '../support/harness.ts';

const TAXII = 'application/taxii+json;version=2.1';
const COLLECTION = '91a7b528-80eb-42ed-a74d-c6fbd5a26116';
const T0 = '2026-01-01T00:00:00.000Z';
type Json = Record<string, any>;
type Behaviour = (res: http.ServerResponse, params: URLSearchParams) => void;

/** A UUID of the test's own, one per number. */
const uuid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
/** A well-formed indicator of one IPv4 address, with overrides. */
const indicator = (n: number, over: Json = {}): Json => ({
  type: 'indicator',
  spec_version: '2.1',
  id: `indicator--${uuid(n)}`,
  created: T0,
  modified: T0,
  valid_from: T0,
  name: `address ${n}`,
  pattern: `[ipv4-addr:value = '192.0.2.${n % 250}']`,
  pattern_type: 'stix',
  confidence: 70,
  ...over,
});
const envelope = (res: http.ServerResponse, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(200, { 'content-type': TAXII, ...headers });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
};

/**
 * Peers that fail on purpose (docs/federation.md, "What is refused"): small TAXII servers of the
 * test's, each a path of one node:http server that answers discovery honestly (so the peer can
 * be added) and then misbehaves on its objects. Every poll ends with nothing half-imported, the
 * peer's status saying why, and the serving instance still answering its own callers.
 */
describe('polling misbehaving peers', () => {
  let h: Harness;
  let server: http.Server;
  let base: string;
  let caller: TestAccount;
  const behaviours = new Map<string, Behaviour>();
  /** Every objects request, by peer: its query, and the Authorization it carried. */
  const asked = new Map<string, Array<{ params: URLSearchParams; authorization: string | undefined }>>();

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://peer.test');
      const [, name = '', ...rest] = url.pathname.split('/');
      const path = rest.join('/');
      if (path === '') return envelope(res, { title: `peer ${name}`, versions: [TAXII], max_content_length: 10_000_000 });
      if (path === 'collections/') return envelope(res, { collections: [{ id: COLLECTION, title: 'Indicators', can_read: true, can_write: false, media_types: ['application/stix+json;version=2.1'] }] });
      if (path === `collections/${COLLECTION}/objects/` && behaviours.has(name)) {
        asked.set(name, [...(asked.get(name) ?? []), { params: url.searchParams, authorization: req.headers.authorization }]);
        return behaviours.get(name)!(res, url.searchParams);
      }
      res.writeHead(404, { 'content-type': TAXII }).end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // The background poller's turn is an hour away: the test polls when it means to.
    h = await startHarness(
      { TOLLWATCH_TAXII_PUBLISH_INTERVAL: '3600' },
      { federation: { tickMs: 3_600_000, timeoutMs: 400, pageLimit: 5, maxPages: 4, backoffMs: 1000, maxBackoffMs: 600_000, maxBodyBytes: 64 * 1024, maxIndicatorsPerPeer: 40 } },
    );
    caller = await h.account({ plan: await saveUnlimitedPlan(h), permissions: ['read:ip-addresses', 'read:phone-numbers'] });
  });
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    await h?.close();
  });

  const add = async (name: string, behaviour: Behaviour, root = `${base}/${name}/`) => {
    behaviours.set(name, behaviour);
    const { peer } = await h.services.peers.add({ name, apiRoot: root, auth: 'bearer', credential: `token-${name}`, trust: 0.5 }, 'operator');
    return peer.id;
  };
  const poll = async (name: string) => (await h.services.peers.pollNow(name)).outcome;
  const status = async (name: string) => (await h.services.peers.show(name)).status;
  const rows = async (peerId: string) =>
    (await h.services.database.db.selectFrom('peer_indicators').selectAll().where('peer_id', '=', peerId).orderBy('object_id').execute()).map((r) => ({ ...r, seq: Number(r.seq), confidence: Number(r.confidence), revoked: Number(r.revoked) }));
  const positions = (peerId: string) => h.services.database.db.selectFrom('peer_positions').selectAll().where('peer_id', '=', peerId).execute();

  it('refuses to add a server that does not answer as TAXII 2.1, naming why', async () => {
    const plain = http.createServer((req, res) => {
      if (req.url === '/json/') return res.writeHead(200, { 'content-type': 'application/json' }).end('{"title":"x","versions":["application/taxii+json;version=2.1"]}');
      if (req.url === '/old/') return envelope(res, { title: 'an older server', versions: ['application/taxii+json;version=2.0'] });
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    const at = `http://127.0.0.1:${(plain.address() as AddressInfo).port}`;
    try {
      await expect(h.services.peers.add({ name: 'json', apiRoot: `${at}/json/` }, 'operator')).rejects.toThrow(/not added: .*answered application\/json, not application\/taxii\+json;version=2\.1/);
      await expect(h.services.peers.add({ name: 'old', apiRoot: `${at}/old/` }, 'operator')).rejects.toThrow(/does not list application\/taxii\+json;version=2\.1 among its versions/);
      await expect(h.services.peers.add({ name: 'missing', apiRoot: `${at}/nothing/` }, 'operator')).rejects.toThrow(/answered 404/);
      await expect(h.services.peers.add({ name: 'wrong-collection', apiRoot: `${base}/x/`, collections: ['nope'] }, 'operator')).rejects.toThrow(/lists no collection nope/);
      await expect(h.services.peers.add({ name: 'bad trust', apiRoot: `${base}/x/`, trust: 2, pollSeconds: 5 }, 'operator')).rejects.toThrow(/name must be.*trust must be a number from 0 to 1.*poll_seconds/);
    } finally {
      await new Promise((resolve) => plain.close(resolve));
    }
    expect(await h.services.peers.list()).toEqual([]);
  });

  it('reads an honest peer page by page, resumes where the last page ended, and keeps the newest version of each indicator', async () => {
    // 22 objects; a page of at most `limit`, `next` the offset; X-TAXII-Date-Added-Last the page's last date_added.
    const objects = Array.from({ length: 22 }, (_, i) => ({ object: indicator(i + 1), added: new Date(Date.parse(T0) + (i + 1) * 1000).toISOString() }));
    const id = await add('honest', (res, params) => {
      const after = params.get('added_after');
      const from = params.get('next') ? Number(params.get('next')) : objects.findIndex((o) => !after || o.added > after);
      const start = from < 0 ? objects.length : from;
      const page = objects.slice(start, start + Number(params.get('limit')));
      if (page.length === 0) return envelope(res, {});
      const more = start + page.length < objects.length;
      envelope(res, { objects: page.map((o) => o.object), more, ...(more ? { next: String(start + page.length) } : {}) }, { 'x-taxii-date-added-first': page[0]!.added, 'x-taxii-date-added-last': page.at(-1)!.added });
    });
    // Four pages, the most one poll reads: the rest waits for the next poll, its `next` kept.
    const first = await poll('honest');
    expect(first).toMatchObject({ ok: true, pages: 4, counts: { read: 20, accepted: 20, skipped: 0, refused: 0 } });
    expect(first.error).toMatch(/stopped after 4 pages/);
    expect(await positions(id)).toEqual([{ peer_id: id, collection_id: COLLECTION, added_after: null, next_page: '20', written_through: objects[19]!.added }]);
    expect((await status('honest')).lastError).toMatch(/stopped after 4 pages/);
    // The poller keeps nothing between polls: the next resumes from the store's position.
    expect(await poll('honest')).toMatchObject({ ok: true, pages: 1, counts: { read: 2, accepted: 2 } });
    expect(await positions(id)).toEqual([{ peer_id: id, collection_id: COLLECTION, added_after: objects[21]!.added, next_page: null, written_through: objects[21]!.added }]);
    expect(await poll('honest')).toMatchObject({ ok: true, pages: 1, counts: { read: 0 } });
    const requests = asked.get('honest')!;
    expect(requests.every((r) => r.authorization === 'Bearer token-honest' && r.params.get('limit') === '5')).toBe(true);
    expect(requests.map((r) => [r.params.get('added_after'), r.params.get('next')])).toEqual([[null, null], [null, '5'], [null, '10'], [null, '15'], [null, '20'], [objects[21]!.added, null]]);
    let kept = await rows(id);
    expect(kept.map((r) => r.value)).toEqual(objects.map((o) => o.object.pattern.slice(20, -2)));
    expect(kept.every((r) => r.kind === 'ip' && r.confidence === 70 && r.revoked === 0 && r.valid_from === T0 && r.valid_until === null && r.tlp === null)).toBe(true);
    expect((await status('honest')).objectsRead).toBe(22);

    // Later versions: one newer (kept), one older than the kept (ignored), one revocation (kept, revoked).
    const later = (s: number) => new Date(Date.parse(T0) + s * 1000).toISOString();
    objects.push(
      { object: indicator(1, { modified: later(5), confidence: 90, valid_until: later(86_400) }), added: later(100) },
      { object: indicator(2, { modified: '2025-12-31T00:00:00.000Z', created: '2025-12-31T00:00:00.000Z', confidence: 10 }), added: later(101) },
      { object: indicator(3, { modified: later(6), revoked: true }), added: later(102) },
    );
    const top = Math.max(...kept.map((r) => r.seq));
    expect(await poll('honest')).toMatchObject({ ok: true, counts: { read: 3, accepted: 3 } });
    const before = new Map(kept.map((r) => [r.object_id, r]));
    kept = await rows(id);
    const changed = kept.filter((r) => r.seq > top);
    expect(changed.map((r) => [r.object_id, r.confidence, r.revoked, r.valid_until])).toEqual([
      [`indicator--${uuid(1)}`, 90, 0, later(86_400)],
      [`indicator--${uuid(3)}`, 70, 1, null],
    ]);
    expect(kept.find((r) => r.object_id === `indicator--${uuid(2)}`)).toEqual(before.get(`indicator--${uuid(2)}`));
    expect(new Set(changed.map((r) => r.seq)).size).toBe(2);
  });

  it('keeps the pages before a failure and resumes at the failed one; a `next` the peer forgot continues from where the last written page ended', async () => {
    const objects = Array.from({ length: 12 }, (_, i) => ({ object: indicator(100 + i), added: new Date(Date.parse(T0) + (i + 1) * 1000).toISOString() }));
    const peer = { epoch: 1, failAt: 5 as number | undefined };
    const id = await add('flaky', (res, params) => {
      const next = params.get('next');
      if (next && !next.startsWith(`${peer.epoch}:`)) return res.writeHead(400, { 'content-type': TAXII }).end('{"title":"unknown next","http_status":"400"}');
      const after = params.get('added_after');
      const start = next ? Number(next.split(':')[1]) : Math.max(0, objects.findIndex((o) => !after || o.added > after));
      if (start === peer.failAt) {
        peer.failAt = undefined;
        return res.writeHead(500, { 'content-type': TAXII }).end('{"title":"oops","http_status":"500"}');
      }
      const page = objects.slice(start, start + 5).filter((o) => !after || o.added > after);
      if (page.length === 0) return envelope(res, {});
      const more = start + page.length < objects.length;
      envelope(res, { objects: page.map((o) => o.object), more, ...(more ? { next: `${peer.epoch}:${start + page.length}` } : {}) }, { 'x-taxii-date-added-last': page.at(-1)!.added });
    });
    expect(await poll('flaky')).toMatchObject({ ok: false, pages: 1, counts: { read: 5, accepted: 5 }, error: 'answered 500' });
    expect((await rows(id)).length).toBe(5);
    expect(await positions(id)).toEqual([{ peer_id: id, collection_id: COLLECTION, added_after: null, next_page: '1:5', written_through: objects[4]!.added }]);
    expect(await poll('flaky')).toMatchObject({ ok: true, pages: 2, counts: { read: 7, accepted: 7 } });
    expect((await rows(id)).length).toBe(12);
    expect((await status('flaky')).objectsRead).toBe(12);

    // Twelve more, the second page failing; then the peer restarts and forgets its `next`s.
    objects.push(...Array.from({ length: 12 }, (_, i) => ({ object: indicator(200 + i), added: new Date(Date.parse(T0) + (100 + i) * 1000).toISOString() })));
    peer.failAt = 17;
    expect(await poll('flaky')).toMatchObject({ ok: false, pages: 1, counts: { read: 5 } });
    const kept = await rows(id);
    expect(kept.length).toBe(17);
    expect(await positions(id)).toEqual([{ peer_id: id, collection_id: COLLECTION, added_after: objects[11]!.added, next_page: '1:17', written_through: objects[16]!.added }]);
    peer.epoch = 2;
    // The forgotten `1:17` is replaced by the end of the last page written: the five read before it are not read again.
    const resumed = await poll('flaky');
    expect(resumed).toMatchObject({ ok: true, pages: 2, counts: { read: 7, accepted: 7 } });
    expect(resumed.error).toMatch(/^the peer no longer knew the next kept for collection \S+ \(it answered 400\): its listing continued from 2026-01-01T00:01:44\.000Z$/);
    expect(await status('flaky')).toMatchObject({ failures: 0, objectsRead: 24, lastError: resumed.error });
    const after = await rows(id);
    expect(after.length).toBe(24);
    expect(after.filter((r) => kept.some((k) => k.object_id === r.object_id))).toEqual(kept);
    expect(asked.get('flaky')!.map((r) => [r.params.get('added_after'), r.params.get('next')])).toEqual([
      [null, null], [null, '1:5'], [null, '1:5'], [null, '1:10'],
      [objects[11]!.added, null], [objects[11]!.added, '1:17'], [objects[11]!.added, '1:17'],
      [objects[16]!.added, null], [objects[16]!.added, '2:22'],
    ]);
  });

  it('continues a listing longer than one poll after the peer forgot its `next`, from the last page written: none skipped, a re-read object not written again', async () => {
    // 27 objects; each `next` answers once, and all are forgotten between polls (as medallion's
    // expire). `added_after` is taken inclusively here, so the object at the kept end is read again.
    const objects = Array.from({ length: 27 }, (_, i) => ({ object: indicator(500 + i), added: new Date(Date.parse(T0) + (i + 1) * 1000).toISOString() }));
    const live = new Set<string>();
    const id = await add('forgetful', (res, params) => {
      const next = params.get('next');
      if (next !== null && !live.delete(next)) return res.writeHead(400, { 'content-type': TAXII }).end('{"title":"next not valid","http_status":"400"}');
      const after = params.get('added_after');
      const start = next !== null ? Number(next.slice(1)) : Math.max(0, objects.findIndex((o) => !after || o.added >= after));
      const page = objects.slice(start, start + 5);
      const more = start + page.length < objects.length;
      if (more) live.add(`n${start + page.length}`);
      envelope(res, { objects: page.map((o) => o.object), more, ...(more ? { next: `n${start + page.length}` } : {}) }, { 'x-taxii-date-added-last': page.at(-1)!.added });
    });
    expect(await poll('forgetful')).toMatchObject({ ok: true, pages: 4, counts: { read: 20, accepted: 20 } });
    expect(await positions(id)).toEqual([{ peer_id: id, collection_id: COLLECTION, added_after: null, next_page: 'n20', written_through: objects[19]!.added }]);
    const before = await rows(id);
    live.clear();

    const second = await poll('forgetful');
    // Eight read (the twentieth again, and the seven after it), not the 27 of a listing started over.
    expect(second).toMatchObject({ ok: true, pages: 2, counts: { read: 8, accepted: 8 } });
    expect(second.error).toMatch(/no longer knew the next kept .*\(it answered 400\): its listing continued from 2026-01-01T00:00:20\.000Z/);
    const requests = asked.get('forgetful')!.slice(4).map((r) => [r.params.get('added_after'), r.params.get('next')]);
    expect(requests).toEqual([[null, 'n20'], [objects[19]!.added, null], [objects[19]!.added, 'n24']]);
    const after = await rows(id);
    expect(after.map((r) => r.object_id)).toEqual(objects.map((o) => o.object.id));
    // The twentieth, read twice, is the row written the first time (same seq): one row per object, replaced only by a newer version.
    expect(after.filter((r) => before.some((k) => k.object_id === r.object_id))).toEqual(before);
    expect(await positions(id)).toEqual([{ peer_id: id, collection_id: COLLECTION, added_after: objects[26]!.added, next_page: null, written_through: objects[26]!.added }]);
    expect(await status('forgetful')).toMatchObject({ failures: 0, objectsRead: 28, objectsAccepted: 28 });
  });

  it('a peer that is down, slow, failing, limiting, not TAXII, not JSON or too large: nothing kept, the status says why, with a back-off', async () => {
    const down = http.createServer((_req, res) => envelope(res, { title: 'soon gone', versions: [TAXII], collections: [{ id: COLLECTION, title: 'x', can_read: true }] }));
    await new Promise<void>((resolve) => down.listen(0, '127.0.0.1', resolve));
    const downRoot = `http://127.0.0.1:${(down.address() as AddressInfo).port}/`;
    behaviours.set('down', () => {});
    await h.services.peers.add({ name: 'down', apiRoot: downRoot, trust: 0.5 }, 'operator');
    await new Promise((resolve) => down.close(resolve));

    const cases: Array<[string, Behaviour, RegExp]> = [
      ['down', () => {}, /connection refused \(ECONNREFUSED\)/],
      ['slow', (res) => {
        // Headers at once, then a body that never ends: the deadline covers the body too.
        res.writeHead(200, { 'content-type': TAXII });
        res.write('{"objects": [');
      }, /no complete answer within 400 ms/],
      ['failing', (res) => res.writeHead(500, { 'content-type': TAXII }).end('{"title":"oops","http_status":"500"}'), /answered 500/],
      ['limiting', (res) => res.writeHead(429, { 'content-type': TAXII, 'retry-after': '120' }).end('{}'), /answered 429, asking to wait \(Retry-After: 120\)/],
      ['wrong-type', (res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html></html>'), /answered text\/html, not application\/taxii\+json;version=2\.1/],
      ['not-json', (res) => envelope(res, '{"objects": [{"type": "indicator",'), /not valid JSON/],
      ['too-large', (res) => envelope(res, { objects: [indicator(1, { description: 'x'.repeat(3000) })], padding: 'y'.repeat(100_000) }), /more than 65536 bytes/],
      ['huge-page', (res) => envelope(res, { objects: Array.from({ length: 50 }, (_, i) => indicator(i + 1)) }), /a page of 50 objects when at most 5 were asked for: the page was refused whole/],
      ['not-an-envelope', (res) => envelope(res, '[1, 2, 3]'), /an envelope that is not a JSON object/],
    ];
    for (const [name, behaviour, why] of cases) {
      let id: string;
      if (name === 'down') id = (await h.services.peers.show('down')).id;
      else id = await add(name, behaviour);
      const started = Date.now();
      const polling = poll(name);
      // The serving instance answers its callers while the peer misbehaves (an address it never
      // saw: 404, found false). Not 192.0.2.x: the earlier tests' peers name those, and their
      // evidence may reach this instance's memory at any moment of this test.
      const lookup = await caller.api('/api/ip-addresses/198.51.100.1');
      expect(lookup.status, name).toBe(404);
      expect(((await lookup.json()) as Json).found, name).toBe(false);
      const outcome = await polling;
      expect(outcome, name).toMatchObject({ ok: false, counts: { accepted: 0 } });
      expect(outcome.error, name).toMatch(why);
      const s = await status(name);
      expect(s.lastError, name).toMatch(why);
      expect(s.failures, name).toBe(1);
      expect(s.lastSuccessAt, name).toBeNull();
      expect(s.objectsAccepted, name).toBe(0);
      expect(Date.parse(s.nextPollAt!) - started, name).toBeGreaterThanOrEqual(name === 'limiting' ? 119_000 : 999);
      expect(await rows(id), name).toEqual([]);
      expect(await positions(id), name).toEqual([]);
    }
    expect((await status('huge-page')).objectsRefused).toBe(50);
    expect((await status('huge-page')).objectsRead).toBe(50);
    // Failures in a row back off further: the second waits twice the first.
    const again = Date.now();
    await poll('failing');
    const failing = await status('failing');
    expect(failing.failures).toBe(2);
    expect(Date.parse(failing.nextPollAt!) - again).toBeGreaterThanOrEqual(1999);
  });

  it('stops an endless `more: true` after the pages one poll may read, each page kept whole', async () => {
    let served = 0;
    const id = await add('endless', (res) => {
      const page = Array.from({ length: 5 }, () => indicator(1000 + ++served));
      envelope(res, { objects: page, more: true, next: `after-${served}` });
    });
    const outcome = await poll('endless');
    expect(outcome).toMatchObject({ ok: true, pages: 4, counts: { read: 20, accepted: 20 } });
    expect((await status('endless')).lastError).toMatch(/stopped after 4 pages, the most one poll reads/);
    expect(await rows(id)).toHaveLength(20);
    expect(await positions(id)).toEqual([{ peer_id: id, collection_id: COLLECTION, added_after: null, next_page: 'after-20', written_through: null }]);
  });

  it('keeps at most the indicators one peer may have: new ones past it refused and counted, newer versions of kept ones still written', async () => {
    const objects = [...Array.from({ length: 50 }, (_, i) => indicator(300 + i)), indicator(300, { modified: '2026-01-02T00:00:00.000Z', confidence: 99 })];
    const id = await add('greedy', (res, params) => {
      const start = Number(params.get('next') ?? 0);
      const page = objects.slice(start, start + 5);
      const more = start + page.length < objects.length;
      envelope(res, { objects: page, more, ...(more ? { next: String(start + page.length) } : {}) });
    });
    expect(await poll('greedy')).toMatchObject({ counts: { read: 20, accepted: 20, refused: 0 } });
    expect(await poll('greedy')).toMatchObject({ counts: { read: 20, accepted: 20, refused: 0 } });
    expect(await poll('greedy')).toMatchObject({ ok: true, counts: { read: 11, accepted: 1, refused: 10 } });
    const kept = await rows(id);
    expect(kept).toHaveLength(40);
    expect(kept.find((r) => r.object_id === `indicator--${uuid(300)}`)!.confidence).toBe(99);
    expect(await status('greedy')).toMatchObject({ objectsRead: 51, objectsAccepted: 41, objectsRefused: 10 });
    expect((await status('greedy')).lastError).toBe('10 objects refused, the first for new indicators past the 40 kept of one peer');
  });

  it('refuses hostile objects and skips what it does not understand, counting each, and keeps TLP markings as they are', async () => {
    const hostile = [
      indicator(1, { description: 'x'.repeat(20_000) }),
      indicator(2, { name: 'bell\u0007 and escape \u001b[31m' }),
      indicator(3, { pattern: "[ipv4-addr:value = '192.0.2.3\\'; drop table peers; --']" }),
      indicator(4, { id: 'indicator--not-a-uuid' }),
      indicator(5, { modified: undefined }),
      indicator(6, { confidence: 101 }),
      indicator(7, { spec_version: '2.0' }),
      indicator(8, { valid_until: '2025-01-01T00:00:00.000Z' }),
      indicator(9, { pattern: `[ipv4-addr:value = '${'1'.repeat(2000)}']` }),
      indicator(10, { object_marking_refs: 'marking-definition--e828b379-4e03-4974-9ac4-e53a884c97c1' }),
      indicator(11, { pattern: "[x-tollwatch-phone-number:value = 'not a number!']" }),
      'a string',
      42,
      null,
      [indicator(12)],
    ];
    const tlp = [
      indicator(20, { object_marking_refs: ['marking-definition--e828b379-4e03-4974-9ac4-e53a884c97c1'] }),
      indicator(21, { object_marking_refs: ['marking-definition--f88d31f6-486f-44da-b317-01333bde0b82'] }),
      indicator(22, { object_marking_refs: ['marking-definition--939a9414-2ddd-4d32-a0cd-375ea402b003'] }),
      indicator(23, { object_marking_refs: ['marking-definition--613f2e26-407d-48c7-9eca-b8e91df99dc9'] }),
      indicator(24, { object_marking_refs: ['marking-definition--34098fce-860f-48ae-8e50-ebd3cc5e41da', 'marking-definition--5e57c739-391a-4eb3-b6be-7d15ca92d5ed'] }),
      indicator(25, { object_marking_refs: [`marking-definition--${uuid(99)}`] }),
      // SQL in a name is a string like any other: kept out of every statement by parameters.
      indicator(26, { name: "Robert'); DROP TABLE peer_indicators;--", description: 'Seen\r\non\tour nodes' }),
      indicator(27, { pattern: "[x-tollwatch-phone-number:value = '0044 20 7946 0000']", confidence: undefined }),
      indicator(28, { pattern: "[phone-number:value = '+44 20 7946 0001']" }),
      indicator(29, { pattern: "[ipv6-addr:value = '2001:DB8:0:0::1']" }),
    ];
    const others = [
      indicator(40, { pattern_type: 'sigma', pattern: 'title: something' }),
      indicator(41, { pattern: "[domain-name:value = 'evil.test']" }),
      indicator(42, { pattern: "[ipv4-addr:value = '10.0.0.0/8']" }),
      indicator(43, { pattern: "[ipv4-addr:value = '192.0.2.1'] OR [ipv4-addr:value = '192.0.2.2']" }),
      indicator(44, { pattern: "[x-tollwatch-phone-number:value LIKE '+4420794600__']" }),
      indicator(45, { pattern: "[ipv4-addr:value = '192.0.2.1' AND ipv4-addr:value = '192.0.2.2']" }),
      { type: 'malware', spec_version: '2.1', id: `malware--${uuid(46)}`, created: T0, modified: T0, name: 'x', is_family: false },
      { type: 'marking-definition', spec_version: '2.1', id: 'marking-definition--e828b379-4e03-4974-9ac4-e53a884c97c1', created: T0, name: 'TLP:RED' },
    ];
    // Prototype keys can only be written as JSON text: an object literal would set the prototype.
    const pollution = [
      `{"type":"indicator","spec_version":"2.1","id":"indicator--${uuid(50)}","created":"${T0}","modified":"${T0}","valid_from":"${T0}","pattern":"[ipv4-addr:value = '192.0.2.50']","pattern_type":"stix","__proto__":{"polluted":true}}`,
      `{"type":"indicator","spec_version":"2.1","id":"indicator--${uuid(51)}","created":"${T0}","modified":"${T0}","valid_from":"${T0}","pattern":"[ipv4-addr:value = '192.0.2.51']","pattern_type":"stix","extensions":{"constructor":{"prototype":{"polluted":true}}}}`,
    ];
    const pages = [hostile.slice(0, 5), hostile.slice(5, 10), hostile.slice(10), tlp.slice(0, 5), tlp.slice(5), others.slice(0, 5), others.slice(5)];
    let served = 0;
    const id = await add('hostile', (res) => {
      const n = served++;
      const last = n === pages.length;
      const objects = last ? `[${pollution.join(',')}]` : JSON.stringify(pages[n]);
      envelope(res, `{"objects": ${objects}, "more": ${!last}${last ? '' : `, "next": "p${n + 1}"`}}`);
    });
    await h.services.peers.pollNow('hostile'); // four pages, the most one poll reads
    await h.services.peers.pollNow('hostile');
    const s = await status('hostile');
    expect(s).toMatchObject({ objectsRead: 35, objectsRefused: 17, objectsSkipped: 8, objectsAccepted: 10, failures: 0 });
    expect(s.lastError).toMatch(/objects? refused, the first for /);
    expect(({} as Json).polluted).toBeUndefined();
    const kept = new Map((await rows(id)).map((r) => [r.object_id.slice(-2), r]));
    expect([...kept.keys()]).toEqual(['20', '21', '22', '23', '24', '25', '26', '27', '28', '29']);
    expect(['20', '21', '22', '23', '24', '25'].map((n) => kept.get(n)!.tlp)).toEqual(['red', 'amber', 'amber+strict', 'clear', 'red', null]);
    expect(kept.get('27')).toMatchObject({ kind: 'number', value: '+442079460000', confidence: 50 });
    expect(kept.get('28')).toMatchObject({ kind: 'number', value: '+442079460001' });
    expect(kept.get('29')).toMatchObject({ kind: 'ip', value: '2001:db8::1' });
    // The peers and their rows are intact.
    expect((await h.services.peers.list()).map((p) => p.name)).toContain('hostile');
  });
});
