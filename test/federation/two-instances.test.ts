import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeySealer, newKeySecret, parseKeySecret } from '../../src/domain/accounts/key-sealing.ts';
import { SqlPeersRepository } from '../../src/store/repositories/peers-repository.ts';
import { probes, scanner } from '../support/fleet-events.ts';
import { postEvent, saveUnlimitedPlan, startHarness, within, type Harness, type TestAccount } from '../support/harness.ts';
import { postgresDatabase } from '../support/test-database.ts';

const TAXII = 'application/taxii+json;version=2.1';
const ROOT = '/taxii2/tollwatch/';
type Json = Record<string, any>;

/** What a TAXII reader of `h` gets: the latest version of every object of every collection, by id. */
async function published(h: Harness, reader: TestAccount): Promise<Map<string, Json>> {
  const latest = new Map<string, Json>();
  for (const collection of ['phone-numbers', 'ip-addresses', 'number-ranges']) {
    let next: string | undefined;
    for (;;) {
      const res = await reader.api(`${ROOT}collections/${collection}/objects/?limit=100${next ? `&next=${next}` : ''}`, { headers: { accept: TAXII } });
      expect(res.status).toBe(200);
      const envelope = (await res.json()) as Json;
      for (const o of envelope.objects ?? []) if (!latest.has(o.id) || latest.get(o.id)!.modified < o.modified) latest.set(o.id, o);
      if (!envelope.more) break;
      next = envelope.next;
    }
  }
  return latest;
}

/** The rows a subscriber should hold of what its peer published: its numbers and single addresses, as the test reads the patterns. */
function expectedRows(objects: Map<string, Json>) {
  const rows: Json[] = [];
  for (const o of objects.values()) {
    const m = /^\[(x-tollwatch-phone-number|ipv4-addr|ipv6-addr):value = '([^']*)'\]$/.exec(o.pattern);
    if (!m) continue;
    rows.push({
      object_id: o.id,
      kind: m[1] === 'x-tollwatch-phone-number' ? 'number' : 'ip',
      value: m[2],
      confidence: o.confidence,
      valid_until: o.valid_until ? new Date(o.valid_until).toISOString() : null,
      revoked: o.revoked ? 1 : 0,
      tlp: null,
    });
  }
  return rows.sort((a, b) => a.object_id.localeCompare(b.object_id));
}

async function rowsOf(h: Harness, peerId: string) {
  const rows = await h.services.database.db.selectFrom('peer_indicators').select(['object_id', 'kind', 'value', 'confidence', 'valid_until', 'revoked', 'tlp', 'seq']).where('peer_id', '=', peerId).orderBy('object_id').execute();
  return rows.map((r) => ({ ...r, confidence: Number(r.confidence), revoked: Number(r.revoked), seq: Number(r.seq) }));
}
const withoutSeq = (rows: Json[]) => rows.map(({ seq: _seq, ...rest }) => rest).sort((a, b) => a.object_id.localeCompare(b.object_id));

/**
 * Two Tollwatch servers on loopback subscribed to each other (docs/federation.md, "Reciprocity"):
 * one on SQLite, one on PostgreSQL, each publishing its fleet's sightings over TAXII 2.1 and
 * reading the other's through a read-only client, with their own pollers on their own turns.
 */
describe('two Tollwatch servers subscribed to each other', () => {
  let sqlite: Harness;
  let postgres: Harness;
  let postgresStore: { url: string; drop(): Promise<void> };
  const keySecret = newKeySecret();
  const fleets = new Map<Harness, TestAccount>();
  const readers = new Map<Harness, TestAccount>();
  const peerIds = new Map<Harness, string>();

  beforeAll(async () => {
    postgresStore = await postgresDatabase();
    const env = { TOLLWATCH_TAXII_PUBLISH_INTERVAL: '3600' };
    // The pollers' turns come every 100 ms, so the test waits on conditions, not on an interval.
    const options = { federation: { tickMs: 100, timeoutMs: 5000 } };
    sqlite = await startHarness(env, options);
    postgres = await startHarness({ ...env, DATABASE_URL: postgresStore.url, TOLLWATCH_KEY_SECRET: keySecret }, options);
    for (const h of [sqlite, postgres]) {
      const plan = await saveUnlimitedPlan(h);
      fleets.set(h, await h.account({ trusted: true, plan }));
      // What the other operator is given: a client that may only read.
      readers.set(h, await h.account({ plan, permissions: ['read:ip-addresses', 'read:phone-numbers'] }));
    }
  });
  afterAll(async () => {
    await sqlite?.close();
    await postgres?.close();
    await postgresStore?.drop();
  });

  it('each reads exactly what the other published and answers lookups with it, a revocation by the next poll, and nothing twice after a restart', async () => {
    const at = Date.now() - 60_000;
    const sightings = new Map([
      [sqlite, [probes('+46812118532', '198.51.100', at), probes('+442079460000', '198.51.100', at + 10), scanner('198.51.100.77', '+4420794611', at)].flat()],
      [postgres, [probes('+4930901820', '203.0.113', at), scanner('2001:db8::77', '+493090182', at)].flat()],
    ]);
    for (const [h, events] of sightings) {
      for (const e of events) expect((await postEvent(fleets.get(h)!, e)).status).toBe(201);
      await h.settled();
      await h.services.taxiiPublisher.publish();
    }

    // Each operator adds the other with the read-only client it was given.
    for (const [subscriber, publisher] of [[postgres, sqlite], [sqlite, postgres]] as const) {
      const reader = readers.get(publisher)!;
      const { peer, found } = await subscriber.services.peers.add(
        { name: subscriber === postgres ? 'sqlite-peer' : 'postgres-peer', apiRoot: `${publisher.url}${ROOT}`, auth: 'basic', username: reader.clientId, credential: reader.clientSecret, trust: 0.8, pollSeconds: 60 },
        'operator',
      );
      expect(found.collections.map((c) => [c.alias, c.canRead])).toEqual([['ip-addresses', true], ['phone-numbers', true], ['number-ranges', true]]);
      expect(peer.collections).toHaveLength(3);
      expect(peer.hasCredential).toBe(true);
      peerIds.set(subscriber, peer.id);
      // Sealed, never in the clear.
      const stored = await subscriber.services.database.db.selectFrom('peers').select('credential').where('peer_id', '=', peer.id).executeTakeFirstOrThrow();
      expect(stored.credential).toMatch(/^sealed:v1:/);
      expect(stored.credential).not.toContain(reader.clientSecret);
    }

    for (const [subscriber, publisher] of [[postgres, sqlite], [sqlite, postgres]] as const) {
      const expected = expectedRows(await published(publisher, readers.get(publisher)!));
      expect(expected.filter((r) => r.kind === 'number').length).toBeGreaterThan(0);
      expect(expected.filter((r) => r.kind === 'ip').length).toBeGreaterThan(0);
      const peerId = peerIds.get(subscriber)!;
      expect(await within(20_000, async () => (await rowsOf(subscriber, peerId)).length === expected.length && (await subscriber.services.peers.show(peerId)).status.lastSuccessAt !== null)).toBe(true);
      expect(withoutSeq(await rowsOf(subscriber, peerId))).toEqual(expected);
      const { status } = await subscriber.services.peers.show(peerId);
      expect(status).toMatchObject({ failures: 0, objectsAccepted: expected.length, objectsRefused: 0 });
      expect(status.objectsRead).toBe(status.objectsAccepted + status.objectsSkipped);
    }

    // Each server's lookups now answer with the other's sightings, the peer named with its weight.
    for (const [subscriber, number, peer] of [[postgres, '+442079460000', 'sqlite-peer'], [sqlite, '+4930901820', 'postgres-peer']] as const) {
      let body: Json = {};
      expect(
        await within(20_000, async () => {
          body = (await (await readers.get(subscriber)!.api(`/api/phone-numbers/${encodeURIComponent(number)}`)).json()) as Json;
          return body.found === true && body.peers !== undefined;
        }),
        JSON.stringify(body),
      ).toBe(true);
      expect(body).toMatchObject({ found: true, seen_count: 0, local_score: 0, peers: { sightings: [{ peer, trust: 0.8 }] } });
      expect(body.score).toBeGreaterThan(0);
    }

    // The SQLite operator allowlists a number: its indicator is revoked there, and on the
    // PostgreSQL subscriber by its next poll, the row kept with a new seq.
    const before = await rowsOf(postgres, peerIds.get(postgres)!);
    await sqlite.services.allowlists.add('operator', { kind: 'phone_number', value: '+46812118532' }, 'operator');
    await sqlite.services.taxiiPublisher.publish();
    await postgres.services.peers.pollSoon('sqlite-peer');
    const number = (rows: Json[]) => rows.find((r) => r.value === '+46812118532')!;
    expect(await within(20_000, async () => number(await rowsOf(postgres, peerIds.get(postgres)!)).revoked === 1)).toBe(true);
    const after = await rowsOf(postgres, peerIds.get(postgres)!);
    expect(number(after).seq).toBeGreaterThan(Math.max(...before.map((r) => r.seq)));
    expect(withoutSeq(after)).toEqual(expectedRows(await published(sqlite, readers.get(sqlite)!)));

    // A restarted poller resumes where it stood: a poll with nothing new reads nothing, writes nothing.
    const { status: was } = await postgres.services.peers.show('sqlite-peer');
    await postgres.services.peerPoller.stop();
    postgres.services.peerPoller.start();
    await postgres.services.peers.pollSoon('sqlite-peer');
    expect(await within(20_000, async () => (await postgres.services.peers.show('sqlite-peer')).status.lastSuccessAt! > was.lastSuccessAt!)).toBe(true);
    const { status: now } = await postgres.services.peers.show('sqlite-peer');
    expect(now.objectsRead).toBe(was.objectsRead);
    expect(await rowsOf(postgres, peerIds.get(postgres)!)).toEqual(after);
  });

  it('lets one instance at a time hold a peer on PostgreSQL: of two claiming at once, one gets it', async () => {
    await postgres.services.peerPoller.stop();
    const { db, caps } = postgres.services.database;
    const instances = ['instance-a', 'instance-b'].map((holder) => ({ holder, records: new SqlPeersRepository(db, caps, new KeySealer(parseKeySecret(keySecret))) }));
    const peerId = peerIds.get(postgres)!;
    for (let round = 0; round < 5; round++) {
      const now = new Date().toISOString();
      const until = new Date(Date.now() + 60_000).toISOString();
      const claims = await Promise.all(instances.map(({ holder, records }) => records.claim(peerId, holder, now, until)));
      expect(claims.filter(Boolean)).toHaveLength(1);
      // The winner opened the sealed credential; the other holds nothing until the lease is released.
      expect(claims.find(Boolean)!.credential).toBe(readers.get(sqlite)!.clientSecret);
      const winner = instances[claims.findIndex(Boolean)]!;
      await winner.records.finish(peerId, winner.holder, { ok: true, at: now, nextPollAt: now });
    }
  });
});
