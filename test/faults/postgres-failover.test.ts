import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rebuildAggregates } from '../../src/store/fold/aggregates-rebuild.ts';
import { openDatabase } from '../../src/store/database.ts';
import { aggregateSnapshot } from '../support/aggregates.ts';
import { startAlertReceiver, type AlertReceiver } from '../support/alert-receiver.ts';
import { eventually } from '../support/eventually.ts';
import { sampleEvent } from '../support/harness.ts';
import { haproxyMissing, startPrimaryProxy, type PrimaryProxy } from '../support/primary-proxy.ts';
import { privateClusterMissing } from '../support/private-postgres.ts';
import { privateRedis, redisServerMissing, type PrivateRedis } from '../support/redis.ts';
import { promoteWhenPrimaryFails, startReplicatedCluster, type PostgresNode, type ReplicatedCluster } from '../support/replicated-postgres.ts';
import { cli, startServerProcess, type ServerProcess } from '../support/server-process.ts';

/**
 * The store's primary lost under load, and a standby promoted in its place, as an orchestrator
 * does (docs/scaling.md, "Failover"): a primary and streaming standbys of this test's own, a
 * proxy (HAProxy) that leads only to the primary, two instances on it, many clients sending
 * events and lookups. Each client sends an event again after a 503 or a broken connection, as a
 * node does, until it is acknowledged. First intake is measured with synchronous and
 * asynchronous replication in turn; then five turns on one cluster, each with a new standby
 * made from the primary of the turn before: a `kill -9` of the primary's postmaster with
 * synchronous replication (nothing acknowledged may be lost), the same with the standby held
 * behind (its WAL senders stopped) so that commits wait for it at the kill, the two again with
 * asynchronous replication (what is lost is counted; held behind, some must be, or the test
 * could not see a loss), and a planned switchover (nothing lost).
 */
const missing = privateClusterMissing() ?? (redisServerMissing ? 'no redis-server binary to start a private Redis' : undefined) ?? (haproxyMissing ? 'no haproxy binary (Debian package haproxy)' : undefined);
if (missing) {
  if (process.env.TOLLWATCH_REQUIRE_POSTGRES === '1') throw new Error(`failover tests cannot run: ${missing}`);
  console.warn(`*** failover tests SKIPPED: ${missing} ***`);
}

/** Clients sending events at once, spread over both instances; and clients looking numbers up. */
const INTAKE_CLIENTS = 16;
const LOOKUP_CLIENTS = 2;
/** Events acknowledged in each window over which intake's rate and latency are measured, by replication mode. */
const RATE_ACKS = 1000;
/** Events acknowledged in the steady part of a turn, before its fault (its rate and latency are measured too). */
const STEADY_ACKS = 500;
/** The same, for turns whose figures are not the point (a standby held behind). */
const STEADY_ACKS_BEHIND = 200;
/** Events acknowledged while an asynchronous standby receives nothing, before its primary is killed. */
const LOST_WHEN_BEHIND = 200;
/** Events each instance must acknowledge after the promotion before a turn ends. */
const ACKS_AFTER = 100;
/** A node's pause before it sends a refused event again. */
const RESEND_PAUSE_MS = 100;
const PUBLIC_URL = 'https://tollwatch.example';
/** How often an event names a number never seen before (a `number.first_seen` alert). */
const FIRST_SEEN_EVERY = 20;
/**
 * Numbers first seen in a turn, all after its promotion: an account is alerted at most 100
 * times an hour (docs/api.md §12), and the file's five turns stay below that.
 */
const FIRST_SEEN_PER_TURN = 10;
const FIRST_SEEN_PREFIX = '+4479';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Turn {
  /** Acknowledged events: uuid, the status, whether an earlier try of it was refused. */
  acknowledged: Map<string, { status: number; afterRefusal: boolean }>;
  /** When each acknowledgement arrived (ms since the epoch), and how long its request took. */
  ackTimes: number[];
  latencies: Array<{ at: number; ms: number }>;
  ackedBy: number[];
  statuses: Map<string, number>;
  /** The same, per instance. */
  statusesBy: Array<Map<string, number>>;
  lookupStatuses: Map<string, number>;
  retryAfterMissing: number;
  /** Numbers no event named before, by when their event was acknowledged: each is a `number.first_seen` alert. */
  firstSeen: Map<string, number>;
  /** How many more such numbers to send: none until the promotion. */
  firstSeenWanted: number;
  running: boolean;
  endedAt: number;
}

interface Steady {
  events: number;
  seconds: number;
  perSecond: number;
  medianMs: number;
  p99Ms: number;
}

/** What a turn measured, for docs/scaling.md's figures. */
interface TurnFigures {
  turn: string;
  steady: Steady;
  /** From the promotion to the first acknowledgement after it. */
  firstAckAfterPromotionMs: number;
  /** The longest time between two acknowledgements, the later one after the fault. */
  longestWithoutAckMs: number;
  promotedAfterFaultMs: number;
  acknowledged: number;
  lost: number;
  replayedAfterRefusal: number;
  statuses: Record<string, number>;
}

describe.skipIf(missing !== undefined)('PostgreSQL failover under load, two instances behind a proxy to the primary', () => {
  let cluster: ReplicatedCluster;
  let proxy: PrimaryProxy;
  let receiver: AlertReceiver;
  let redis: PrivateRedis;
  let servers: ServerProcess[] = [];
  let token: string;
  /** The account whose numbers first seen are alerted. */
  let watcherToken: string;
  const figures: TurnFigures[] = [];
  const rates: Array<{ mode: string } & Steady> = [];
  /** The first turn's standby, made by the test that measures both modes on it. */
  let standby: PostgresNode | undefined;
  let eventCount = 0;

  beforeAll(async () => {
    // A node per turn, and the first primary.
    cluster = await startReplicatedCluster({ nodes: 6 });
    proxy = await startPrimaryProxy(cluster.ports);
    redis = await privateRedis();
    receiver = await startAlertReceiver();
    // One public address for both, as behind a load balancer: a token is good on either.
    const env = { DATABASE_URL: proxy.url, REDIS_URL: redis.url, TOLLWATCH_PUBLIC_URL: PUBLIC_URL, TOLLWATCH_TAXII_PUBLISH_INTERVAL: '1', TOLLWATCH_ALLOW_PRIVATE_TARGETS: 'on' };
    servers = await Promise.all([startServerProcess(env), startServerProcess(env)]);
    // A trusted account: its events are the shared data set, which the TAXII publisher serves.
    // And one of its own, whose numbers first seen are alerts (a trusted account's are not).
    cli(proxy.url, 'plans', 'set', 'failover', '--may-submit', 'yes', '--lookups', '1000000000/hour', '--submissions', '1000000000/hour');
    const tokenOf = async (trusted: boolean) => {
      const account = cli(proxy.url, 'accounts', 'create', '--name', trusted ? 'fleet' : 'watcher', '--plan', 'failover', ...(trusted ? ['--trusted'] : []));
      const client = cli(proxy.url, 'clients', 'create', '--account', account.account_id, '--name', 'nodes', '--permissions', 'write:events,read:phone-numbers,manage:integrations');
      const res = await fetch(`${servers[0]!.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: client.client_id, client_secret: client.client_secret, audience: `${PUBLIC_URL}/api`, grant_type: 'client_credentials' }),
      });
      return ((await res.json()) as { access_token: string }).access_token;
    };
    token = await tokenOf(true);
    watcherToken = await tokenOf(false);
    // Every number first seen is an alert, written with the fold step that first counts it and
    // delivered from the outbox: the delivery worker must resume on the new primary too.
    const integration = await fetch(`${servers[0]!.url}/api/integrations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${watcherToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'webhook', url: `${receiver.url}/alerts`, alert_types: ['number.first_seen'], min_score: 0 }),
    });
    expect(integration.status).toBe(201);
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server?.stop()));
    await proxy?.stop();
    await redis?.stop();
    await receiver?.close();
    cluster?.remove();
    // The figures of docs/scaling.md's "Failover", from the run that passed.
    if (rates.length > 0) console.log(`intake by replication mode: ${JSON.stringify(rates)}`);
    for (const turn of figures) console.log(`failover turn: ${JSON.stringify(turn)}`);
  });

  /** A new event: a few hundred numbers and a few dozen addresses, so that the fold's rows repeat. */
  const nextEvent = (turn: Turn) => {
    eventCount += 1;
    // While the turn wants them, one in FIRST_SEEN_EVERY names a number never named before.
    const fresh = turn.firstSeenWanted > 0 && eventCount % FIRST_SEEN_EVERY === 0;
    if (fresh) turn.firstSeenWanted -= 1;
    const number = fresh ? `${FIRST_SEEN_PREFIX}${eventCount}` : `+4420718${String(eventCount % 300).padStart(4, '0')}`;
    return sampleEvent({ called_number: number, source_ip: `203.0.113.${eventCount % 40}` });
  };

  const count = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);

  async function intakeClient(turn: Turn, index: number): Promise<void> {
    const server = servers[index % servers.length]!;
    while (turn.running) {
      const event = nextEvent(turn);
      const body = JSON.stringify(event);
      const firstSeen = String(event.called_number).startsWith(FIRST_SEEN_PREFIX);
      let refused = false;
      while (turn.running || refused) {
        const began = performance.now();
        let status: string;
        try {
          const res = await fetch(`${server.url}/api/events`, { method: 'POST', headers: { authorization: `Bearer ${firstSeen ? watcherToken : token}`, 'content-type': 'application/json' }, body });
          status = String(res.status);
          if (res.status === 503 && !res.headers.get('retry-after')) turn.retryAfterMissing += 1;
          await res.arrayBuffer();
        } catch {
          status = 'connection failed';
        }
        count(turn.statuses, status);
        count(turn.statusesBy[index % servers.length]!, status);
        if (status === '201' || status === '200') {
          const at = Date.now();
          turn.acknowledged.set(String(event.event_uuid), { status: Number(status), afterRefusal: refused });
          turn.ackTimes.push(at);
          turn.latencies.push({ at, ms: performance.now() - began });
          turn.ackedBy[index % servers.length]! += 1;
          if (firstSeen) turn.firstSeen.set(String(event.called_number), at);
          break;
        }
        // Anything but a 503 or a broken connection is a failure of its own, counted above.
        if (status !== '503' && status !== 'connection failed') break;
        // A refused event is sent again until it is acknowledged, even after the turn's end:
        // its replay is what must be stored once.
        refused = true;
        // A service that never came back has failed the turn already: stop resending then.
        if (!turn.running && Date.now() - turn.endedAt > 30_000) break;
        await sleep(RESEND_PAUSE_MS);
      }
    }
  }

  async function lookupClient(turn: Turn, index: number): Promise<void> {
    const server = servers[index % servers.length]!;
    let n = index;
    while (turn.running) {
      n += 1;
      try {
        const res = await fetch(`${server.url}/api/phone-numbers/${encodeURIComponent(`+4420718${String(n % 300).padStart(4, '0')}`)}`, { headers: { authorization: `Bearer ${token}` } });
        count(turn.lookupStatuses, String(res.status));
        if (res.status === 503 && !res.headers.get('retry-after')) turn.retryAfterMissing += 1;
        await res.arrayBuffer();
      } catch {
        count(turn.lookupStatuses, 'connection failed');
      }
    }
  }

  /** Intake's rate and latency over the acknowledgements that arrived in [from, to). */
  function steadyFigures(turn: Turn, from: number, to: number): Steady {
    const latencies = turn.latencies.filter((l) => l.at >= from && l.at < to).map((l) => l.ms).sort((a, b) => a - b);
    const seconds = (to - from) / 1000;
    return {
      events: latencies.length,
      seconds: Number(seconds.toFixed(2)),
      perSecond: Math.round(latencies.length / seconds),
      medianMs: Number(latencies[Math.floor(latencies.length / 2)]!.toFixed(1)),
      p99Ms: Number(latencies[Math.floor(latencies.length * 0.99)]!.toFixed(1)),
    };
  }

  const newTurn = (): Turn => ({ acknowledged: new Map(), ackTimes: [], latencies: [], ackedBy: servers.map(() => 0), statuses: new Map(), statusesBy: servers.map(() => new Map()), lookupStatuses: new Map(), retryAfterMissing: 0, firstSeen: new Map(), firstSeenWanted: 0, running: true, endedAt: 0 });
  const loadOn = (turn: Turn) => [...Array.from({ length: INTAKE_CLIENTS }, (_, i) => intakeClient(turn, i)), ...Array.from({ length: LOOKUP_CLIENTS }, (_, i) => lookupClient(turn, i))];

  /**
   * Runs a turn: steady load until STEADY_ACKS are acknowledged, then `fault` (which resolves
   * once a new primary is promoted), then load until each instance has acknowledged ACKS_AFTER
   * more. Answers the turn's record and what it measured.
   */
  async function turnUnderLoad(name: string, fault: (turn: Turn) => Promise<{ faultAt: number; promotedAt: number }>, steadyAcks = STEADY_ACKS): Promise<{ turn: Turn; measured: Omit<TurnFigures, 'lost' | 'acknowledged'>; promotedAt: number }> {
    const turn = newTurn();
    const loops = loadOn(turn);
    let steadyFrom: number;
    let faultAt: number;
    let promotedAt: number;
    try {
      // Past the first acknowledgements (connections opened, the fold's first steps), then measured.
      await eventually('intake under way', () => turn.ackTimes.length, (n) => n >= 200);
      steadyFrom = Date.now();
      const steadyAcked = turn.ackTimes.length;
      await eventually(`${steadyAcks} events acknowledged in the steady part`, () => turn.ackTimes.length - steadyAcked, (n) => n >= steadyAcks, { timeoutMs: 60_000 });
      ({ faultAt, promotedAt } = await fault(turn));
      turn.firstSeenWanted = FIRST_SEEN_PER_TURN;
      const ackedBefore = [...turn.ackedBy];
      await eventually(
        `${ACKS_AFTER} events acknowledged by each instance after the promotion`,
        () => ({ after: turn.ackedBy.map((n, i) => n - ackedBefore[i]!), answers: turn.statusesBy.map((statuses) => Object.fromEntries(statuses)) }),
        ({ after }) => after.every((n) => n >= ACKS_AFTER),
        { timeoutMs: 30_000 },
      );
    } finally {
      turn.running = false;
      turn.endedAt = Date.now();
      await Promise.all(loops);
    }

    const times = [...turn.ackTimes].sort((a, b) => a - b);
    let longest = 0;
    for (let i = 1; i < times.length; i++) if (times[i]! >= faultAt) longest = Math.max(longest, times[i]! - times[i - 1]!);
    const measured = {
      turn: name,
      steady: steadyFigures(turn, steadyFrom!, faultAt!),
      firstAckAfterPromotionMs: times.find((t) => t >= promotedAt)! - promotedAt,
      longestWithoutAckMs: longest,
      promotedAfterFaultMs: promotedAt! - faultAt!,
      replayedAfterRefusal: [...turn.acknowledged.values()].filter((a) => a.status === 200 && a.afterRefusal).length,
      statuses: Object.fromEntries([...turn.statuses, ...[...turn.lookupStatuses].map(([s, n]) => [`lookup ${s}`, n] as const)]),
    };
    return { turn, measured, promotedAt: promotedAt! };
  }

  /** The acknowledged events of `turn` missing on the current primary, and any event stored more than once. */
  async function storedCheck(turn: Turn): Promise<{ lost: string[]; doubled: string[] }> {
    const client = new pg.Client({ connectionString: cluster.primary.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ event_uuid: string; copies: string }>('select event_uuid, count(*) as copies from events group by event_uuid');
      const stored = new Map(rows.map((row) => [row.event_uuid, Number(row.copies)]));
      return { lost: [...turn.acknowledged.keys()].filter((uuid) => !stored.has(uuid)), doubled: rows.filter((row) => Number(row.copies) > 1).map((row) => row.event_uuid) };
    } finally {
      await client.end();
    }
  }

  /**
   * The background jobs resumed on the new primary: the fold (one instance at a time, by an
   * advisory lock) reaches the newest event, the TAXII publisher (a lease in the store) records
   * that position, and what the fold built equals a rebuild from the events that survived.
   */
  async function backgroundCheck(): Promise<void> {
    const client = new pg.Client({ connectionString: cluster.primary.url });
    await client.connect();
    try {
      const position = async () => {
        const { rows } = await client.query<{ through: string; newest: string | null; rebuilds: string | null }>(
          `select (select through from fold_state where name = 'aggregates') as through,
                  (select through from fold_state where name = 'aggregates-rebuilt') as rebuilds,
                  (select max(id) from events) as newest`,
        );
        return { through: Number(rows[0]!.through), newest: Number(rows[0]!.newest ?? 0), signature: `${rows[0]!.through}/${rows[0]!.rebuilds ?? 0}` };
      };
      const folded = await eventually('the fold to reach the newest event on the new primary', position, (p) => p.through >= p.newest);
      await eventually('the TAXII publisher to publish from the fold on the new primary', async () => (await client.query<{ fold_seen: string | null }>('select fold_seen from taxii_publication')).rows.map((row) => row.fold_seen), (seen) => seen.length > 0 && seen.every((s) => s === folded.signature));
    } finally {
      await client.end();
    }
    const store = await openDatabase(cluster.primary.url);
    try {
      const before = await aggregateSnapshot(store.db);
      await rebuildAggregates(store.unhurried, store.caps);
      expect(await aggregateSnapshot(store.db)).toEqual(before);
    } finally {
      await store.close();
    }
  }

  /** The orchestrator's failover: the primary's postmaster killed, the standby promoted after failed checks. */
  const killAndPromote = (standby: PostgresNode) => async () => {
    const faultAt = Date.now();
    cluster.killPrimary();
    const { promotedAt } = await promoteWhenPrimaryFails(cluster, standby);
    return { faultAt, promotedAt };
  };

  /** Commits on the primary waiting for a synchronous standby's confirmation. */
  const waitingForStandby = async () => {
    const client = new pg.Client({ connectionString: cluster.primary.url });
    await client.connect();
    try {
      return Number((await client.query<{ n: string }>(`select count(*) as n from pg_stat_activity where wait_event = 'SyncRep'`)).rows[0]!.n);
    } finally {
      await client.end();
    }
  };

  /** Runs a turn and checks what every turn must hold: no answer but 201, 200 and 503, nothing stored twice, the jobs resumed. */
  async function failoverTurn(name: string, fault: (turn: Turn) => Promise<{ faultAt: number; promotedAt: number }>, steadyAcks?: number): Promise<{ lost: string[] }> {
    const loggedFrom = servers.map((server) => server.logged.length);
    const { turn, measured, promotedAt } = await turnUnderLoad(name, fault, steadyAcks);
    const { lost, doubled } = await storedCheck(turn);
    figures.push({ ...measured, acknowledged: turn.acknowledged.size, lost: lost.length });
    expectServedThrough(turn, loggedFrom);
    expect(doubled).toEqual([]);
    await backgroundCheck();
    // The outbox, on the new primary: numbers first seen after the promotion are alerted. (One
    // whose delivery was claimed on the old primary waits for its claim's 2-minute lease.)
    const alerted = [...turn.firstSeen].filter(([, at]) => at > promotedAt).map(([number]) => number);
    expect(alerted.length).toBe(turn.firstSeen.size);
    expect(alerted.length).toBeGreaterThan(0);
    await eventually(
      'the alerts of numbers first seen after the promotion delivered',
      () => ({ missing: alerted.filter((number) => !receiver.received.some((r) => r.body.includes(number))), received: receiver.received.length, last: receiver.received.at(-1)?.body.slice(0, 400) }),
      ({ missing }) => missing.length === 0,
      { timeoutMs: 30_000 },
    );
    for (const server of servers) expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    return { lost };
  }

  function expectServedThrough(turn: Turn, loggedFrom: number[]): void {
    // 503 with Retry-After, or a refused connection: never a 500, nor another answer.
    expect([...turn.statuses.keys()].filter((s) => !['201', '200', '503', 'connection failed'].includes(s))).toEqual([]);
    expect([...turn.lookupStatuses.keys()].filter((s) => !['200', '404', '503', 'connection failed'].includes(s))).toEqual([]);
    expect(turn.retryAfterMissing).toBe(0);
    const faults = servers.flatMap((server, i) => server.logged.slice(loggedFrom[i])).filter((line) => line.includes('unhandled error'));
    expect(faults).toEqual([]);
  }

  it('intake under load goes on as replication turns synchronous and back, each mode measured twice in turn', async () => {
    standby = await cluster.addStandby({ synchronous: true });
    const turn = newTurn();
    const loops = loadOn(turn);
    try {
      await eventually('intake under way', () => turn.ackTimes.length, (n) => n >= 200);
      // In turn, so that neither mode has the machine's quieter moments or the smaller store to itself.
      for (const synchronous of [true, false, true, false]) {
        await cluster.setSynchronous(synchronous);
        const from = Date.now();
        const acked = turn.ackTimes.length;
        await eventually(`${RATE_ACKS} events acknowledged`, () => turn.ackTimes.length - acked, (n) => n >= RATE_ACKS, { timeoutMs: 60_000 });
        rates.push({ mode: synchronous ? 'synchronous' : 'asynchronous', ...steadyFigures(turn, from, Date.now()) });
      }
    } finally {
      turn.running = false;
      turn.endedAt = Date.now();
      await Promise.all(loops);
    }
    // A reload of the setting under load disturbs nothing: every event acknowledged at once.
    expect(Object.fromEntries(turn.statuses)).toEqual({ '201': turn.acknowledged.size });
    expect([...turn.lookupStatuses.keys()].filter((s) => s !== '200' && s !== '404')).toEqual([]);
    await cluster.setSynchronous(true);
  });

  it('synchronous replication: the primary killed under load and its standby promoted, no acknowledged event is lost or stored twice, and nothing answers 500', async () => {
    standby ??= await cluster.addStandby({ synchronous: true });
    const { lost } = await failoverTurn('synchronous, kill -9 of the primary', killAndPromote(standby));
    expect(lost).toEqual([]);
  });

  it('synchronous replication with the standby behind at the kill: the commits it never confirmed were never acknowledged, and their resends are stored once', async () => {
    const behind = await cluster.addStandby({ synchronous: true });
    const { lost } = await failoverTurn(
      'synchronous, WAL senders frozen, then kill -9',
      async () => {
        await cluster.freezeWalSenders();
        // Intake's group commits (one at a time per instance) and the jobs' commits.
        await eventually('commits waiting for the frozen standby', waitingForStandby, (n) => n >= 2);
        return killAndPromote(behind)();
      },
      STEADY_ACKS_BEHIND,
    );
    expect(lost).toEqual([]);
  });

  it('asynchronous replication: the same failover, with what it loses counted (not bounded) and nothing stored twice', async () => {
    const next = await cluster.addStandby({ synchronous: false });
    await failoverTurn('asynchronous, kill -9 of the primary', killAndPromote(next));
  });

  it('asynchronous replication with the standby behind at the kill: what was acknowledged since it last received is lost, and found missing', async () => {
    const next = await cluster.addStandby({ synchronous: false });
    const { lost } = await failoverTurn(
      'asynchronous, WAL senders frozen, then kill -9',
      async (turn) => {
        await cluster.freezeWalSenders();
        const frozenAt = turn.ackTimes.length;
        await eventually('events acknowledged that the standby never received', () => turn.ackTimes.length - frozenAt, (n) => n >= LOST_WHEN_BEHIND);
        return killAndPromote(next)();
      },
      STEADY_ACKS_BEHIND,
    );
    // What asynchronous replication risks, and what this test would see of any loss.
    expect(lost.length).toBeGreaterThan(0);
  });

  it('a planned switchover: the primary stopped cleanly and its standby promoted, nothing acknowledged is lost', async () => {
    const next = await cluster.addStandby({ synchronous: true });
    const { lost } = await failoverTurn('switchover (pg_ctl stop -m fast, then promote)', async () => {
      const faultAt = Date.now();
      await cluster.stopPrimary();
      await cluster.promote(next);
      return { faultAt, promotedAt: Date.now() };
    });
    expect(lost).toEqual([]);
  });
});
