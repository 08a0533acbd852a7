import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postEvent, sampleEvent, saveUnlimitedPlan, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { peerRows, type PeerSay } from '../support/peer-rows.ts';

type Json = Record<string, any>;

/**
 * Lookups with what the federation's peers said (docs/federation.md; docs/scoring.md, "Peers"),
 * on a real store and through HTTP. The peers' indicators are written into migration 030's tables
 * as the poller writes them (one row per peer and STIX id, a `seq` that grows with every write),
 * then read by the serving process as every instance reads them.
 */
describe('lookups with peer evidence', () => {
  let h: Harness;
  let fleet: TestAccount;
  let reader: TestAccount;

  beforeAll(async () => {
    h = await startHarness({ TOLLWATCH_TAXII_PUBLISH_INTERVAL: '3600' });
    const plan = await saveUnlimitedPlan(h);
    fleet = await h.account({ plan, trusted: true });
    reader = await h.account({ plan, permissions: ['read:phone-numbers', 'read:ip-addresses', 'manage:allowlist'] });
  });
  afterAll(() => h?.close());

  const db = () => h.services.database.db;
  const peer = (name: string, trust: number, settings?: { enabled?: number; republish?: number }) => peerRows(h).peer(name, trust, settings);
  /** A peer indicator's latest version, as the poller writes it: a new seq each write. */
  const say = (peer_id: string, kind: 'number' | 'ip', value: string, confidence: number, more?: PeerSay) => peerRows(h).say(peer_id, kind, value, confidence, more);
  const number = async (value: string, who = reader) => {
    const res = await who.api(`/api/phone-numbers/${encodeURIComponent(value)}`);
    return { status: res.status, body: (await res.json()) as Json };
  };
  const address = async (value: string) => {
    const res = await reader.api(`/api/ip-addresses/${value}`);
    return { status: res.status, body: (await res.json()) as Json };
  };

  it('answers a number only a peer knows as found, scored by the peer’s trust × confidence, with the peer named', async () => {
    const value = '+4681300101';
    expect((await number(value)).status).toBe(404);
    const carrier = await peer('carrier-b', 0.5);
    await say(carrier, 'number', value, 80, { valid_from: '2026-11-18T08:00:00.000Z' });
    const { status, body } = await number(value);
    expect(status).toBe(200);
    expect(body).toMatchObject({
      phone_number: value,
      found: true,
      seen_count: 0,
      first_seen: '2026-11-18T08:00:00.000Z',
      score: 40,
      local_score: 0,
      source_ip_count: 0,
      sip_methods: {},
      matched_forms: [],
      message: "Not seen by this service's honeypots; 1 peer reports it.",
      peers: { score: 40, sightings: [{ peer: 'carrier-b', confidence: 80, trust: 0.5, points: 40, valid_from: '2026-11-18T08:00:00.000Z', valid_until: expect.any(String) }] },
    });
    expect(body.reasons).toEqual(["not seen by this service's honeypots", 'peer carrier-b says 80 (trusted 50%): 40 points']);
    // The bulk lookup answers each value as the single one does.
    const bulk = await reader.api('/api/phone-numbers/lookup', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ phone_numbers: [value] }) });
    expect(((await bulk.json()) as Json).results).toEqual([body]);
  });

  it('adds a peer’s say to the number’s own evidence, showing both, and takes it away when the peer revokes it', async () => {
    const value = '+4681300202';
    for (let i = 0; i < 3; i++) expect((await postEvent(fleet, sampleEvent({ called_number: value, source_ip: `198.51.100.${i + 1}`, sip_method: 'INVITE' }))).status).toBe(201);
    await h.settled();
    const before = (await number(value)).body;
    expect(before.peers).toBeUndefined();
    expect(before.local_score).toBeUndefined();
    const a = await peer('isp-a', 0.8);
    const b = await peer('isp-b', 0.25);
    const objectA = await say(a, 'number', value, 90);
    await say(b, 'number', value, 100);
    const { body } = await number(value);
    // 100 × (1 − (1 − local) × (1 − 0.72) × (1 − 0.25)), strongest peer first.
    const expected = Math.round(100 * (1 - (1 - before.score / 100) * (1 - 0.72) * (1 - 0.25)));
    expect(body).toMatchObject({ found: true, seen_count: 3, score: expected, local_score: before.score, peers: { score: Math.round(100 * (1 - 0.28 * 0.75)) } });
    expect(body.peers.sightings.map((s: Json) => [s.peer, s.points])).toEqual([
      ['isp-a', 72],
      ['isp-b', 25],
    ]);
    expect(body.reasons.slice(0, before.reasons.length)).toEqual(before.reasons);
    expect(body.score).toBeGreaterThan(before.score);

    // Revoked by one peer, expired at the other: the answer is the local one again.
    await say(a, 'number', value, 90, { object_id: objectA, revoked: 1 });
    expect((await number(value)).body.peers.sightings.map((s: Json) => s.peer)).toEqual(['isp-b']);
    await db().updateTable('peers').set({ enabled: 0 }).where('peer_id', '=', b).execute();
    await h.services.peerEvidence.refresh();
    expect((await number(value)).body).toEqual(before);
  });

  it('ignores an indicator past its valid_until, and a peer trusted 0 adds nothing', async () => {
    const value = '+4681300303';
    const old = await peer('gone-by', 1);
    await say(old, 'number', value, 100, { valid_until: '2026-01-01T00:00:00.000Z' });
    expect((await number(value)).status).toBe(404);
    const muted = await peer('listened-to', 0);
    await say(muted, 'number', value, 100);
    const { status, body } = await number(value);
    expect(status).toBe(200);
    expect(body).toMatchObject({ score: 0, peers: { score: 0, sightings: [{ peer: 'listened-to', points: 0 }] } });
  });

  it('answers an address only a peer knows, and keeps the caller’s allowlist over a peer’s say', async () => {
    const ip = '203.0.113.77';
    const p = await peer('abuse-desk', 0.9);
    await say(p, 'ip', ip, 70);
    const { status, body } = await address(ip);
    expect(status).toBe(200);
    expect(body).toMatchObject({ ip_address: ip, found: true, seen_count: 0, called_number_count: 0, user_agents: [], tags: [], transports: {}, score: 63, peers: { sightings: [{ peer: 'abuse-desk', points: 63 }] } });
    const entry = (await (await reader.api('/api/allowlist', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ kind: 'ip_address', value: ip }) })).json()) as Json;
    expect((await address(ip)).body).toMatchObject({ found: true, score: 63, allowlisted: true, allowlist_entry: { id: entry.id } });
  });

  it('publishes nothing a peer said: feeds and the TAXII collections leave peer-only values out', async () => {
    const value = '+4681300404';
    const p = await peer('no-relay', 1, { republish: 0 });
    await say(p, 'number', value, 100);
    expect((await number(value)).body.score).toBe(100);
    const feed = (await (await reader.api('/api/feeds/phone-numbers?format=json&min_score=0')).json()) as { entries: Json[] };
    expect(feed.entries.map((e) => e.phone_number)).not.toContain(value);
    await h.services.taxiiPublisher.publish();
    const objects = await (await reader.api('/taxii2/tollwatch/collections/phone-numbers/objects/?match[version]=all', { headers: { accept: 'application/taxii+json;version=2.1' } })).text();
    expect(objects).not.toContain(value);
  });

  it('passes on in the feeds what a peer the operator lets through said, never under TLP:AMBER or RED, marked as the peers’', async () => {
    const hub = await peer('hub', 0.9, { republish: 1 });
    const [only, amber, both, red] = ['+4681300505', '+4681300506', '+4681300507', '+4681300508'];
    for (let i = 0; i < 3; i++) expect((await postEvent(fleet, sampleEvent({ called_number: both, source_ip: `198.51.100.${20 + i}`, sip_method: 'INVITE' }))).status).toBe(201);
    await h.settled();
    const local = (await number(both)).body.score as number;
    const feed = async () => {
      const res = await reader.api('/api/feeds/phone-numbers?format=json&min_score=1');
      return { etag: res.headers.get('etag'), entries: ((await res.json()) as { entries: Json[] }).entries };
    };
    const before = await feed();
    await say(hub, 'number', only, 100);
    await say(hub, 'number', amber, 100, { tlp: 'amber' });
    await say(hub, 'number', red, 100, { tlp: 'red' });
    await say(hub, 'number', both, 50);
    const after = await feed();
    expect(after.etag).not.toBe(before.etag);
    const byNumber = new Map(after.entries.map((e) => [e.phone_number, e]));
    expect(byNumber.get(only)).toMatchObject({ score: 90, seen_count: 0, peers: ['hub'] });
    expect(byNumber.get(both)).toMatchObject({ score: Math.round(100 * (1 - (1 - local / 100) * 0.55)), peers: ['hub'] });
    // TLP:AMBER and RED are never passed on, whatever the peer's setting; the lookup still shows them.
    expect(byNumber.has(amber)).toBe(false);
    expect(byNumber.has(red)).toBe(false);
    expect((await number(red)).body.score).toBe(90);
    expect((await number(amber)).body.peers.sightings[0].peer).toBe('hub');
    // STIX marks the peers' say as TAXII does (one object, one shape): a label and a custom
    // property naming each peer with the confidence it published; this server's own alone, neither.
    const stix = (await (await reader.api('/api/feeds/phone-numbers?format=stix&min_score=1')).json()) as { objects: Json[] };
    const stixOf = (value: string) => stix.objects.find((o) => o.pattern === `[x-tollwatch-phone-number:value = '${value}']`);
    expect(stixOf(only)).toMatchObject({ confidence: 90, labels: ['peer-reported'], x_tollwatch_peers: [{ peer: 'hub', confidence: 100 }] });
    expect(stixOf(both)).toMatchObject({ labels: ['peer-reported'], x_tollwatch_peers: [{ peer: 'hub', confidence: 50 }] });
    // The operator's allowlist keeps it out, as it keeps out a value of this server's own.
    const { entry } = await h.services.allowlists.add('operator', { kind: 'phone_number', value: only }, 'operator');
    expect((await feed()).entries.map((e) => e.phone_number)).not.toContain(only);
    await h.services.allowlists.remove('operator', entry.id, 'operator');
    // Turned off for the peer: nothing of its say is passed on any more.
    await db().updateTable('peers').set({ republish: 0 }).where('peer_id', '=', hub).execute();
    await h.services.peerEvidence.refresh();
    const off = await feed();
    expect(off.entries.map((e) => e.phone_number)).not.toContain(only);
    expect(off.entries.find((e) => e.phone_number === both)).toMatchObject({ score: local });
    expect(off.entries.find((e) => e.phone_number === both)!.peers).toBeUndefined();
  });
});
