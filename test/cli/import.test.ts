import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLiteDatabase from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sentryPeerLogLines } from '../../bench/support/sentrypeer-log.ts';
import { rebuildAggregates } from '../../src/store/fold/aggregates-rebuild.ts';
import { aggregateSnapshot } from '../support/aggregates.ts';
import { eventIndexDefinitions } from '../support/event-indexes.ts';
import { sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { spawnCli, type CliRun } from '../support/server-process.ts';

const FIXTURE = new URL('../fixtures/sentrypeer_json.log', import.meta.url).pathname;
const FIXTURE_LINES = readFileSync(FIXTURE, 'utf8').trimEnd().split('\n');

/** SentryPeer's own table, as the node (4.0.6, and every version since the table was introduced) creates it, with the indexes it adds. */
const HONEY_SCHEMA = `
  CREATE TABLE IF NOT EXISTS honey (
     honey_id INTEGER PRIMARY KEY,
     event_timestamp TEXT,
     event_uuid TEXT,
     collected_method TEXT,
     source_ip TEXT,
     called_number TEXT,
     transport_type TEXT,
     method TEXT,
     user_agent TEXT,
     sip_message TEXT,
     created_by_node_id TEXT,
     created_at DATETIME DEFAULT(STRFTIME('%Y-%m-%d %H:%M:%f', 'NOW'))
  );
  CREATE INDEX IF NOT EXISTS source_ip_index ON honey (source_ip);
  CREATE INDEX IF NOT EXISTS called_number_index ON honey (called_number);
  CREATE INDEX IF NOT EXISTS event_uuid_index ON honey (event_uuid);`;

type Event = Record<string, string>;

/** Writes a SentryPeer database holding `events` as its node would have (no app name, version or destination). */
function sentryPeerDatabase(path: string, events: Event[]): void {
  const db = new SQLiteDatabase(path);
  db.exec(HONEY_SCHEMA);
  const insert = db.prepare(`INSERT INTO honey (event_timestamp, event_uuid, collected_method, source_ip, called_number, transport_type, method, user_agent, sip_message, created_by_node_id)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  for (const e of events) {
    insert.run(e.event_timestamp, e.event_uuid, e.collected_method, e.source_ip, e.called_number ?? null, e.transport_type, e.sip_method, e.sip_user_agent, e.sip_message, e.created_by_node_id);
  }
  db.close();
}

describe('tollwatch import: SentryPeer logs and databases straight into the store (docs/operations.md)', () => {
  let h: Harness;
  let dir: string;

  /** The real executable on the harness's store, as an operator runs it; asynchronously, so the harness keeps serving. */
  function tollwatch(...args: string[]): Promise<CliRun> {
    return spawnCli({ DATABASE_URL: h.config.databaseUrl }, ...args);
  }

  async function importJson(...args: string[]): Promise<Record<string, unknown>> {
    const run = await tollwatch('--json', 'import', ...args);
    expect(run.status, run.stderr).toBe(0);
    return JSON.parse(run.stdout) as Record<string, unknown>;
  }

  async function storedUuids(who: TestAccount): Promise<string[]> {
    const uuids: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await who.api(`/api/events?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      const page = (await res.json()) as { data: Array<{ event_uuid: string }>; next_cursor: string | null };
      uuids.push(...page.data.map((e) => e.event_uuid));
      cursor = page.next_cursor;
    } while (cursor);
    return uuids.sort();
  }

  async function lookup(who: TestAccount, number: string) {
    // The server learns what the command folded at its next fold turn (within 250 ms): taken now.
    await h.settled();
    const res = await who.api(`/api/phone-numbers/${encodeURIComponent(number)}`);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  beforeAll(async () => {
    h = await startHarness();
    dir = mkdtempSync(join(tmpdir(), 'tollwatch-import-'));
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await h?.close();
  });

  it('imports the fixture log into one account; a re-run imports nothing new', async () => {
    const owner = await h.account();
    const other = await h.account({ plan: 'business' });
    const first = await importJson('--account', owner.account.account_id, FIXTURE);
    expect(first).toMatchObject({ account_id: owner.account.account_id, scope: 'account', source: 'sentrypeer-log', file: FIXTURE, read: 26, imported: 26, replayed: 0, conflict: 0, invalid: 0 });
    expect(first.events_per_second).toEqual(expect.any(Number));
    expect(await storedUuids(owner)).toEqual(FIXTURE_LINES.map((l) => (JSON.parse(l) as Event).event_uuid).sort());

    const again = await importJson('--account', owner.account.account_id, FIXTURE);
    expect(again).toMatchObject({ read: 26, imported: 0, replayed: 26, conflict: 0, invalid: 0 });
    expect(await storedUuids(owner)).toHaveLength(26);

    // The account's own lookups find the numbers, counted once; another account's do not (docs/api.md §6).
    expect(await lookup(owner, '+46812118532')).toMatchObject({ status: 200, body: { found: true, seen_count: 2, matched_forms: ['0046812118532'] } });
    expect(await lookup(other, '+46812118532')).toMatchObject({ status: 404, body: { found: false } });

    const audited = await h.services.audit.list({ accountId: owner.account.account_id, limit: 10 });
    expect(audited.filter((r) => r.action === 'events.imported').map((r) => r.detail)).toEqual([
      { source: 'sentrypeer-log', scope: 'account', read: 26, imported: 0, replayed: 26, conflict: 0, invalid: 0 },
      { source: 'sentrypeer-log', scope: 'account', read: 26, imported: 26, replayed: 0, conflict: 0, invalid: 0 },
    ]);

    const text = await tollwatch('import', '--account', owner.account.account_id, FIXTURE);
    expect(text.status).toBe(0);
    expect(text.stderr).toBe('');
    expect(text.stdout).toMatch(new RegExp(`^imported ${FIXTURE} \\(SentryPeer JSON log\\) into account ${owner.account.account_id}: 26 events, 0 new, 26 already stored, 0 conflicting, 0 invalid; [\\d.]+ s, [\\d,]+ events/s\\n$`));
  });

  it("a trusted account's import joins the shared data set: everyone's lookups find it", async () => {
    const fleet = await h.account({ trusted: true });
    const viewer = await h.account({ plan: 'business' });
    const lines = [...sentryPeerLogLines({ events: 2_500, numbers: 300, addresses: 100, seed: 7 })];
    const log = join(dir, 'fleet.log');
    writeFileSync(log, `${lines.join('\n')}\n`);
    const result = await importJson('--account', fleet.account.account_id, '--batch-size', '1000', log);
    expect(result).toMatchObject({ scope: 'shared', read: 2_500, imported: 2_500, replayed: 0, conflict: 0, invalid: 0 });
    const first = JSON.parse(lines[0]!) as Event;
    const seen = lines.map((l) => JSON.parse(l) as Event).filter((e) => e.source_ip === first.source_ip).length;
    await h.settled();
    const answer = await viewer.api(`/api/ip-addresses/${first.source_ip}`);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({ found: true, seen_count: seen });
    expect((await lookup(viewer, first.called_number!)).body).toMatchObject({ found: true });
  });

  it('imports a SentryPeer database (its honey table), filling what it does not keep from the options', async () => {
    const owner = await h.account();
    const fixture = FIXTURE_LINES.map((l) => JSON.parse(l) as Event);
    const odd = sampleEvent({ called_number: '' }) as Event;
    const path = join(dir, 'sentrypeer.db');
    sentryPeerDatabase(path, [
      ...fixture,
      { ...odd, called_number: undefined as unknown as string },
      sampleEvent({ transport_type: 'SCTP' }) as Event,
      { ...fixture[0]!, sip_message: 'INVITE sip:other@127.0.0.1 SIP/2.0\r\n\r\n' },
    ]);
    const args = ['--account', owner.account.account_id, '--app-version', '4.0.6', '--destination-ip', '127.0.0.1', path];
    const run = await tollwatch('--json', 'import', ...args);
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ source: 'sentrypeer-database', read: 29, imported: 27, replayed: 0, conflict: 1, invalid: 1 });
    expect(run.stderr.split('\n')).toEqual([
      expect.stringMatching(/^tollwatch: honey_id 28: invalid [0-9a-f-]{36}; transport_type must be one of: UDP, TCP, TLS$/),
      `tollwatch: honey_id 29: conflict ${fixture[0]!.event_uuid}`,
      '',
    ]);

    // Exactly the node's event: the fields the database keeps, and the options for the rest.
    const stored = (await (await owner.api(`/api/events/${fixture[3]!.event_uuid}`)).json()) as Event;
    expect(stored).toMatchObject(fixture[3]!);
    const empty = (await (await owner.api(`/api/events/${odd.event_uuid}`)).json()) as Event;
    expect(empty).toMatchObject({ called_number: '', app_name: 'sentrypeer', app_version: '4.0.6', destination_ip: '127.0.0.1' });

    // The same events from the node's log are the same content: all replays.
    expect(await importJson('--account', owner.account.account_id, FIXTURE)).toMatchObject({ imported: 0, replayed: 26 });
    expect(await importJson(...args)).toMatchObject({ read: 29, imported: 0, replayed: 27, conflict: 1, invalid: 1 });
  });

  it('imports a live node’s database without ever locking it: the node loses no probe, the import no row', async () => {
    const owner = await h.account();
    const path = join(dir, 'live.db');
    const events = [...sentryPeerLogLines({ events: 4_000, numbers: 300, addresses: 100, seed: 23 })].map((l) => JSON.parse(l) as Event);
    sentryPeerDatabase(path, events);
    // The node, in its own process: an autocommit INSERT every 10 ms (100 probes a second, a
    // node under a scan), no busy timeout, for as long as the imports run. Before imports read a
    // snapshot, a writer every 2 ms lost 191 of 1,500 probes. At 2 ms on a quiet machine a copy
    // seldom fits between two commits, and the import waited out its patience (ciC).
    const writer = spawn(process.execPath, [new URL('../support/sentrypeer-writer.ts', import.meta.url).pathname, path, '10'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let written = '';
    writer.stdout.setEncoding('utf8').on('data', (s: string) => (written += s));
    const finished = new Promise<number | null>((resolve) => writer.on('close', resolve));
    const args = ['--account', owner.account.account_id, '--app-version', '4.0.6', '--destination-ip', '127.0.0.1', path];
    const during = await importJson(...args);
    expect(during.read as number).toBeGreaterThanOrEqual(events.length);
    expect(during).toMatchObject({ conflict: 0, invalid: 0 });
    writer.kill('SIGTERM');
    expect(await finished).toBe(0);
    const { inserted, busy } = JSON.parse(written) as { inserted: number; busy: number };
    expect(busy).toBe(0);
    expect(inserted).toBeGreaterThan(0);
    // Once the node is done, one more import brings what came after the last snapshot.
    expect(await importJson(...args)).toMatchObject({ read: events.length + inserted, conflict: 0, invalid: 0 });
    expect(await storedUuids(owner)).toHaveLength(events.length + inserted);
  });

  it('counts and lists what it refuses in a log, and keeps what is valid', async () => {
    const owner = await h.account();
    const good = sampleEvent();
    const future = sampleEvent({ event_timestamp: '2999-01-01 00:00:00' });
    const log = join(dir, 'mixed.log');
    writeFileSync(log, `${JSON.stringify(good)}\n\n{not json\n${JSON.stringify(future)}\n${JSON.stringify({ ...good, sip_message: 'changed' })}\n`);
    const run = await tollwatch('--json', 'import', '--account', owner.account.account_id, log);
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ read: 4, imported: 1, replayed: 0, conflict: 1, invalid: 2 });
    expect(run.stderr.split('\n')).toEqual([
      'tollwatch: line 3: invalid; (record) is not valid JSON',
      expect.stringMatching(new RegExp(`^tollwatch: line 4: invalid ${future.event_uuid as string}; event_timestamp `)),
      `tollwatch: line 5: conflict ${good.event_uuid as string}`,
      '',
    ]);
    expect(await storedUuids(owner)).toEqual([good.event_uuid]);
  });

  it('refuses an unknown account, a missing file, and a SQLite file that is not SentryPeer’s', async () => {
    const owner = await h.account();
    const unknown = await tollwatch('import', '--account', '00000000-0000-4000-8000-000000000000', FIXTURE);
    expect(unknown).toMatchObject({ status: 1, stdout: '', stderr: 'tollwatch: no such account\n' });
    const missing = await tollwatch('import', '--account', owner.account.account_id, join(dir, 'missing.log'));
    expect(missing).toMatchObject({ status: 1, stdout: '', stderr: `tollwatch: cannot read ${join(dir, 'missing.log')}: no such file\n` });
    const other = join(dir, 'other.db');
    new SQLiteDatabase(other).exec('create table t (x)').close();
    const notSentryPeer = await tollwatch('import', '--account', owner.account.account_id, other);
    expect(notSentryPeer.status).toBe(1);
    expect(notSentryPeer.stderr).toMatch(/^tollwatch: .*other\.db is a SQLite database but not a SentryPeer one/);
    const badOption = await tollwatch('import', '--account', owner.account.account_id, '--destination-ip', 'nowhere', FIXTURE);
    expect(badOption).toMatchObject({ status: 1, stderr: 'tollwatch: --destination-ip "nowhere" is not an IPv4 or IPv6 address\n' });
  });

  it('--bulk loads with the events’ query indexes set aside and builds them again: the same events, queries and lookups', async () => {
    const owner = await h.account();
    const indexes = await eventIndexDefinitions(h.services.database.db);
    const lines = [...sentryPeerLogLines({ events: 3_000, numbers: 400, addresses: 100, seed: 11 })];
    const events = lines.map((l) => JSON.parse(l) as Event);
    const log = join(dir, 'bulk.log');
    writeFileSync(log, `${lines.join('\n')}\n`);
    // Small batches: several are written while the next ones are read.
    const result = await importJson('--account', owner.account.account_id, '--bulk', '--batch-size', '700', log);
    expect(result).toMatchObject({ read: 3_000, imported: 3_000, replayed: 0, conflict: 0, invalid: 0 });
    expect(await eventIndexDefinitions(h.services.database.db)).toEqual(indexes);
    expect(await storedUuids(owner)).toEqual(events.map((e) => e.event_uuid).sort());

    // The rebuilt indexes answer the filtered queries.
    const { source_ip, called_number } = events[0]!;
    const bySource = (await (await owner.api(`/api/events?limit=1000&source_ip=${source_ip}`)).json()) as { data: Event[] };
    expect(bySource.data.map((e) => e.event_uuid).sort()).toEqual(events.filter((e) => e.source_ip === source_ip).map((e) => e.event_uuid).sort());
    // By number: the events stored under its key, every written form of it, as the lookup counts them.
    const { db } = h.services.database;
    const { number_key } = await db.selectFrom('events').select('number_key').where('event_uuid', '=', events[0]!.event_uuid!).executeTakeFirstOrThrow();
    const underKey = await db.selectFrom('events').select('event_uuid').where('account_id', '=', owner.account.account_id).where('number_key', '=', number_key).execute();
    const byNumber = (await (await owner.api(`/api/events?limit=1000&called_number=${encodeURIComponent(called_number!)}`)).json()) as { data: Event[] };
    expect(byNumber.data.map((e) => e.event_uuid).sort()).toEqual(underKey.map((e) => e.event_uuid).sort());
    // The lookup counts the shared data set's too: other tests here imported into trusted accounts.
    const shared = await db
      .selectFrom('events as e')
      .innerJoin('accounts as a', 'a.account_id', 'e.account_id')
      .select('e.event_uuid')
      .where('a.trusted', '=', 1)
      .where('e.number_key', '=', number_key)
      .execute();
    expect((await lookup(owner, called_number!)).body).toMatchObject({ found: true, seen_count: underKey.length + shared.length });

    expect(await importJson('--account', owner.account.account_id, '--bulk', log)).toMatchObject({ read: 3_000, imported: 0, replayed: 3_000 });
    expect(await eventIndexDefinitions(h.services.database.db)).toEqual(indexes);
  });

  it('keeps the aggregates exactly as intake does: a rebuild from the events changes nothing', async () => {
    // Everything the tests above imported, in accounts trusted and not, plus intake through the API.
    const owner = await h.account();
    const log = join(dir, 'more.log');
    writeFileSync(log, `${[...sentryPeerLogLines({ events: 1_200, numbers: 50, addresses: 20, seed: 3 })].join('\n')}\n`);
    expect(await importJson('--account', owner.account.account_id, '--batch-size', '250', log)).toMatchObject({ imported: 1_200 });
    const posted = await owner.api('/api/events', { method: 'POST', headers: { 'content-type': 'application/json' }, body: readFileSync(log, 'utf8').split('\n')[0]! });
    expect(posted.status).toBe(200);

    const snapshot = () => aggregateSnapshot(h.services.database.db);
    const kept = await snapshot();
    expect(kept.number_aggregates!.length).toBeGreaterThan(0);
    await rebuildAggregates(h.services.database.db, h.services.database.caps);
    expect(await snapshot()).toEqual(kept);
  });
});
