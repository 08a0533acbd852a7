import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { indicatorId, type IndicatorKind } from '../../src/domain/intelligence/stix-indicators.ts';
import { TaxiiPublisher } from '../../src/domain/intelligence/taxii-publication.ts';
import { SqlTaxiiRepository } from '../../src/store/repositories/taxii-repository.ts';
import { probes } from '../support/fleet-events.ts';
import { saveUnlimitedPlan, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { peerRows, type PeerRows } from '../support/peer-rows.ts';

const TAXII = 'application/taxii+json;version=2.1';
const ROOT = '/taxii2/tollwatch';
const HOUR_MS = 3_600_000;
const MINUTE_MS = 60_000;

type Json = Record<string, any>;

/**
 * What peers said, passed on in the TAXII collections (docs/federation.md, "Scores and
 * publication"; docs/taxii.md): only a republishable peer's, never under TLP:AMBER or RED, marked
 * so that a consumer tells it from this server's own sightings, and revoked at the next
 * publication once it may no longer be passed on. The peers' rows are written as the poller
 * writes them; the test runs the publisher, with a clock of its own.
 */
describe('TAXII collections with what peers said', () => {
  let h: Harness;
  let fleet: TestAccount;
  let reader: TestAccount;
  let rows: PeerRows;
  /** The publisher's clock: where the test stands it. */
  let clock = Date.now();
  const publish = () => h.services.taxiiPublisher.publish();

  beforeAll(async () => {
    h = await startHarness({ TOLLWATCH_TAXII_PUBLISH_INTERVAL: '3600' }, { taxiiClock: () => new Date(clock) });
    const plan = await saveUnlimitedPlan(h);
    fleet = await h.account({ trusted: true, plan });
    reader = await h.account({ plan, permissions: ['read:phone-numbers', 'read:ip-addresses'] });
    rows = peerRows(h);
  });
  afterAll(() => h?.close());

  /** Every version of a value's first two objects, oldest first. */
  const versionsOf = async (kind: IndicatorKind, value: string): Promise<Json[]> => {
    const ids = [indicatorId(kind, value), indicatorId(kind, value, 1)];
    const res = await reader.api(`${ROOT}/collections/${kind}/objects/?match[version]=all&match[id]=${ids.join(',')}`, { headers: { accept: TAXII } });
    expect(res.status).toBe(200);
    return (((await res.json()) as Json).objects ?? []) as Json[];
  };
  const latestOf = async (kind: IndicatorKind, value: string) => (await versionsOf(kind, value)).at(-1);
  const seen = async (number: string, sources: string) => {
    const res = await fleet.api('/api/events/batch', { method: 'POST', headers: { 'content-type': 'application/x-ndjson' }, body: probes(number, sources, Date.now() - 10_000).map((e) => JSON.stringify(e)).join('\n') });
    expect(res.status).toBe(200);
    await h.settled();
  };
  const lookupScore = async (number: string) => ((await (await reader.api(`/api/phone-numbers/${encodeURIComponent(number)}`)).json()) as Json).score as number;

  it('publishes a republishable peer’s number and address marked as peers’, and a value seen here too as one object carrying both', async () => {
    clock = Date.now();
    const onlyPeers = '+4681400101';
    const both = '+4681400202';
    const ours = '+4681400303';
    const address = '203.0.113.150';
    await seen(both, '198.18.40');
    await seen(ours, '198.18.41');
    const desk = await rows.peer('open-desk', 0.8, { republish: 1 });
    await rows.say(desk, 'number', onlyPeers, 90, { valid_from: '2026-11-18T08:00:00.000Z' });
    await rows.say(desk, 'number', both, 70);
    await rows.say(desk, 'ip', address, 80, { tlp: 'green' });
    await publish();

    const peerOnly = await versionsOf('phone-numbers', onlyPeers);
    expect(peerOnly).toHaveLength(1);
    expect(peerOnly[0]).toMatchObject({
      id: indicatorId('phone-numbers', onlyPeers),
      pattern: `[x-tollwatch-phone-number:value = '${onlyPeers}']`,
      confidence: 72,
      valid_from: '2026-11-18T08:00:00.000Z',
      labels: ['peer-reported'],
      x_tollwatch_peers: [{ peer: 'open-desk', confidence: 90 }],
    });
    expect(peerOnly[0]!.revoked).toBeUndefined();
    const ip = await versionsOf('ip-addresses', address);
    expect(ip).toHaveLength(1);
    expect(ip[0]).toMatchObject({ id: indicatorId('ip-addresses', address), confidence: 64, labels: ['peer-reported'], x_tollwatch_peers: [{ peer: 'open-desk', confidence: 80 }] });

    // Seen here and reported by the peer: one object, the lookup's score, both marked.
    const mixed = await versionsOf('phone-numbers', both);
    expect(mixed).toHaveLength(1);
    expect(mixed[0]).toMatchObject({ id: indicatorId('phone-numbers', both), confidence: await lookupScore(both), labels: ['peer-reported'], x_tollwatch_peers: [{ peer: 'open-desk', confidence: 70 }] });
    expect(mixed[0]!.confidence).toBeGreaterThan(54);
    // Our own alone: no mark.
    const own = await versionsOf('phone-numbers', ours);
    expect(own).toHaveLength(1);
    expect(own[0]!.confidence).toBe(54);
    expect(own[0]!.labels).toBeUndefined();
    expect(own[0]!.x_tollwatch_peers).toBeUndefined();

    // Nothing more while nothing changes, here or from another process over the same store: the
    // position in the peers' rows is the store's.
    expect((await publish()).versions).toBe(0);
    const other = new TaxiiPublisher(new SqlTaxiiRepository(h.services.database.db, h.services.database.caps), {
      minScore: h.config.taxii.minScore,
      retentionDays: 30,
      scoring: h.config.scoring,
      peers: h.services.peerEvidence,
      now: () => new Date(clock),
    });
    expect((await other.publish()).versions).toBe(0);
    await other.stop();
  });

  it('never publishes a TLP:AMBER or RED say, nor a peer’s whose republish is off', async () => {
    const amber = '+4681400404';
    const red = '+4681400505';
    const closed = '+4681400606';
    const marked = await rows.peer('marked-desk', 1, { republish: 1 });
    await rows.say(marked, 'number', amber, 100, { tlp: 'amber' });
    await rows.say(marked, 'number', red, 100, { tlp: 'red' });
    await rows.say(marked, 'ip', '203.0.113.151', 100, { tlp: 'amber+strict' });
    const quiet = await rows.peer('quiet-desk', 1);
    await rows.say(quiet, 'number', closed, 100);
    await publish();
    for (const value of [amber, red, closed]) expect(await versionsOf('phone-numbers', value)).toEqual([]);
    expect(await versionsOf('ip-addresses', '203.0.113.151')).toEqual([]);
  });

  it('revokes a peer-only value when republish is switched off, and gives a value seen here its own content again', async () => {
    const onlyPeers = '+4681400707';
    const both = '+4681400808';
    await seen(both, '198.18.42');
    const desk = await rows.peer('switching-desk', 0.9, { republish: 1 });
    await rows.say(desk, 'number', onlyPeers, 80);
    await rows.say(desk, 'number', both, 80);
    await publish();
    expect((await latestOf('phone-numbers', onlyPeers))!.x_tollwatch_peers).toEqual([{ peer: 'switching-desk', confidence: 80 }]);
    expect((await latestOf('phone-numbers', both))!.labels).toEqual(['peer-reported']);

    await h.services.peers.change('switching-desk', { republish: false }, 'operator');
    await h.services.peerEvidence.refresh();
    await publish();
    const gone = await versionsOf('phone-numbers', onlyPeers);
    expect(gone).toHaveLength(2);
    expect(gone[1]).toMatchObject({ id: gone[0]!.id, revoked: true });
    const local = await versionsOf('phone-numbers', both);
    expect(local).toHaveLength(2);
    expect(local[1]!.revoked).toBeUndefined();
    expect(local[1]!.confidence).toBe(54);
    expect(local[1]!.labels).toBeUndefined();
    expect(local[1]!.x_tollwatch_peers).toBeUndefined();
    expect(Date.parse(local[1]!.modified)).toBeGreaterThan(Date.parse(local[0]!.modified));

    // Switched on again: the peer-only value is a new object (a revoked one gets no versions).
    await h.services.peers.change('switching-desk', { republish: true }, 'operator');
    await h.services.peerEvidence.refresh();
    await publish();
    const back = await versionsOf('phone-numbers', onlyPeers);
    expect(back.map((o) => [o.id, o.revoked ?? false])).toEqual([
      [indicatorId('phone-numbers', onlyPeers), false],
      [indicatorId('phone-numbers', onlyPeers), true],
      [indicatorId('phone-numbers', onlyPeers, 1), false],
    ]);
  });

  it('revokes at the next publication a say that expired, was revoked, turned AMBER, or whose peer was removed or disabled', async () => {
    // Early in an hour, so that the clock moved below stays in it: no hourly re-scoring does the work.
    clock = Math.floor(Date.now() / HOUR_MS) * HOUR_MS + HOUR_MS + 5 * MINUTE_MS;
    const [expiring, revoking, amber, removed, disabled] = ['+4681400911', '+4681400922', '+4681400933', '+4681400944', '+4681400955'];
    const desk = await rows.peer('ending-desk', 0.9, { republish: 1 });
    const leaving = await rows.peer('leaving-desk', 0.9, { republish: 1 });
    const resting = await rows.peer('resting-desk', 0.9, { republish: 1 });
    await rows.say(desk, 'number', expiring, 80, { valid_until: new Date(clock + 20 * MINUTE_MS).toISOString() });
    const revokedId = await rows.say(desk, 'number', revoking, 80);
    const amberId = await rows.say(desk, 'number', amber, 80);
    await rows.say(leaving, 'number', removed, 80);
    await rows.say(resting, 'number', disabled, 80);
    await publish();
    for (const value of [expiring, revoking, amber, removed, disabled]) expect((await latestOf('phone-numbers', value))!.revoked).toBeUndefined();

    // Nothing written: the clock passes the first say's valid_until.
    clock += 30 * MINUTE_MS;
    await publish();
    expect((await latestOf('phone-numbers', expiring))!.revoked).toBe(true);
    expect((await latestOf('phone-numbers', revoking))!.revoked).toBeUndefined();

    await rows.say(desk, 'number', revoking, 80, { object_id: revokedId, revoked: 1 });
    await rows.say(desk, 'number', amber, 80, { object_id: amberId, tlp: 'amber' });
    await h.services.peers.remove('leaving-desk', 'operator');
    await h.services.peers.setEnabled('resting-desk', false, 'operator');
    await h.services.peerEvidence.refresh();
    await publish();
    for (const value of [revoking, amber, removed, disabled]) expect((await latestOf('phone-numbers', value))!.revoked).toBe(true);
    expect((await publish()).versions).toBe(0);
  });
});
