import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import SQLiteDatabase from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { aggregateSnapshot } from '../support/aggregates.ts';
import { FOLD_CHUNK } from '../../src/aggregates/folder.ts';
import { foldStep } from '../../src/store/fold/aggregate-fold.ts';
import { rebuildAggregates } from '../../src/store/fold/aggregates-rebuild.ts';
import { openDatabase, type Database } from '../../src/store/database.ts';
import { keyFilePath, storeFilePath } from '../../src/store/store-files.ts';
import { postEvent, sampleEvent, saveUnlimitedPlan, startHarness, type TestAccount } from '../support/harness.ts';
import { freshDatabase, TEST_STORE } from '../support/test-database.ts';
import { eventually } from '../support/eventually.ts';

const BIN = new URL('../../bin/tollwatch.js', import.meta.url).pathname;

/**
 * The real `tollwatch` executable, run without blocking this process: the server under test
 * runs here and must go on taking events while the CLI copies its store.
 */
function tollwatch(databaseUrl: string, ...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

const aggregates = (database: Database) => aggregateSnapshot(database.db);

interface Sent {
  account: string;
  loop: number;
  seq: number;
  event: Record<string, unknown>;
  ackedAt?: number;
}

describe('tollwatch backup (docs/operations.md, Backups)', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it.skipIf(TEST_STORE !== 'sqlite')(
    'copies the store during sustained intake: every event acknowledged before it began, a consistent subset after, aggregates that match a rebuild',
    async () => {
      const h = await startHarness();
      cleanups.push(() => h.close());
      const plan = await saveUnlimitedPlan(h);
      const fleet = await h.account({ plan, trusted: true });
      const own = await h.account({ plan });
      const tokenBefore = await own.token();
      const dir = mkdtempSync(join(tmpdir(), 'tollwatch-backup-'));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      const copy = join(dir, 'copy.db');

      // Eight clients posting one event after another, as fast as they are answered, to two
      // accounts (one trusted, so both aggregate scopes change).
      const sent: Sent[] = [];
      let posting = true;
      const poster = async (loop: number, who: TestAccount) => {
        for (let seq = 0; posting; seq++) {
          const event = sampleEvent({
            called_number: `+4420${7_000_000 + ((loop * 7 + seq) % 40)}`,
            source_ip: `203.0.113.${(seq * 3 + loop) % 25}`,
            sip_method: ['INVITE', 'OPTIONS', 'REGISTER'][seq % 3],
            transport_type: ['UDP', 'TCP', 'TLS'][loop % 3],
            sip_user_agent: `scanner-${seq % 5}`,
          });
          const record: Sent = { account: who.account.account_id, loop, seq, event };
          sent.push(record);
          const res = await postEvent(who, event);
          expect(res.status).toBe(201);
          await res.arrayBuffer();
          record.ackedAt = performance.now();
        }
      };
      const posters = Array.from({ length: 8 }, (_, loop) => poster(loop, loop % 2 === 0 ? fleet : own));
      // Intake is sustained once a good number of events are acknowledged, however long that takes.
      await eventually('150 events acknowledged before the backup', () => sent.filter((s) => s.ackedAt !== undefined).length, (n) => n > 150);

      const began = performance.now();
      const run = await tollwatch(h.config.databaseUrl, '--json', 'backup', copy);
      const ended = performance.now();
      // And intake goes on after it: a few more acknowledged before the posters stop.
      const ackedByEnd = sent.filter((s) => s.ackedAt !== undefined).length;
      await eventually('intake to go on after the backup', () => sent.filter((s) => s.ackedAt !== undefined).length, (n) => n > ackedByEnd + 20);
      posting = false;
      await Promise.all(posters);

      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      const report = JSON.parse(run.stdout) as Record<string, unknown>;
      expect(report).toMatchObject({ file: copy, pages: expect.any(Number), bytes: statSync(copy).size, key: keyFilePath(storeFilePath(h.config.databaseUrl)!) });
      const ackedBefore = sent.filter((s) => s.ackedAt !== undefined && s.ackedAt < began);
      const ackedDuring = sent.filter((s) => s.ackedAt !== undefined && s.ackedAt >= began && s.ackedAt < ended);
      expect(ackedBefore.length).toBeGreaterThan(100);
      // The server kept committing while the CLI started and copied.
      expect(ackedDuring.length).toBeGreaterThan(20);

      // A valid store, readable by its owner only.
      expect(statSync(copy).mode & 0o777).toBe(0o600);
      const native = new SQLiteDatabase(copy);
      expect(native.pragma('integrity_check', { simple: true })).toBe('ok');
      native.close();

      const backup = await openDatabase(`sqlite:${copy}`);
      cleanups.push(() => backup.close());
      const rows = await backup.db.selectFrom('events').selectAll().execute();
      const stored = new Map(rows.map((row) => [`${row.account_id}/${row.event_uuid}`, row]));
      const key = (s: Sent) => `${s.account}/${s.event.event_uuid as string}`;
      // Every event acknowledged before the backup began is in it, exactly as sent.
      for (const s of ackedBefore) {
        const row = stored.get(key(s));
        expect(row, key(s)).toBeDefined();
        for (const [field, value] of Object.entries(s.event)) expect(row![field as keyof typeof row], field).toBe(value);
      }
      // Nothing else but events that were sent; and per client a prefix of what it sent, since
      // each client sent its next event only once the last one was committed.
      const byKey = new Map(sent.map((s) => [key(s), s]));
      for (const k of stored.keys()) expect(byKey.has(k), k).toBe(true);
      for (let loop = 0; loop < 8; loop++) {
        const mine = sent.filter((s) => s.loop === loop).sort((a, b) => a.seq - b.seq);
        const held = mine.map((s) => stored.has(key(s)));
        expect(held.indexOf(false) === -1 ? held.length : held.indexOf(false), `client ${loop}`).toBe(held.filter(Boolean).length);
      }
      // Consistent: the replay index holds exactly the events, and the aggregates are exactly
      // what a rebuild from those events gives.
      const ids = await backup.db.selectFrom(backup.caps.partitionedEvents ? 'event_ids' : 'events').select(['account_id', 'event_uuid']).execute();
      expect(ids.map((r) => `${r.account_id}/${r.event_uuid}`).sort()).toEqual([...stored.keys()].sort());
      // The copy holds the events its source had folded in and those it had not yet: folded
      // here as the server restored from it would, from the position the copy kept.
      while ((await foldStep(backup, FOLD_CHUNK))?.more);
      const kept = await aggregates(backup);
      expect(kept.number_aggregates!.length).toBeGreaterThan(0);
      await rebuildAggregates(backup.db, backup.caps);
      expect(await aggregates(backup)).toEqual(kept);
      await backup.close();
      cleanups.pop();

      // Restored as docs/operations.md says (the copy in place, with its key file), it serves:
      // a token issued before the backup verifies, and the events are there.
      copyFileSync(keyFilePath(storeFilePath(h.config.databaseUrl)!), keyFilePath(copy));
      const restored = await startHarness({ DATABASE_URL: `sqlite:${copy}` });
      try {
        const auth = { authorization: `Bearer ${tokenBefore}` };
        const first = ackedBefore.find((s) => s.account === own.account.account_id)!;
        expect((await fetch(`${restored.url}/api/events/${first.event.event_uuid as string}`, { headers: auth })).status).toBe(200);
      } finally {
        await restored.app.close();
        await restored.services.close();
      }

      // backup writes a new file only.
      const again = await tollwatch(h.config.databaseUrl, 'backup', copy);
      expect(again.status).toBe(1);
      expect(again.stderr).toBe(`tollwatch: ${copy} exists: backup writes a new file only\n`);
    },
    120_000,
  );

  it.skipIf(TEST_STORE !== 'postgres')('refuses on PostgreSQL, pointing to pg_dump, before touching the database', async () => {
    const database = await freshDatabase();
    cleanups.push(() => database.drop());
    const dir = mkdtempSync(join(tmpdir(), 'tollwatch-backup-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const run = await tollwatch(database.url, 'backup', join(dir, 'copy.db'));
    expect(run.status).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^tollwatch: backup copies an embedded SQLite store; back up PostgreSQL with pg_dump .*point-in-time recovery/);
    expect(existsSync(join(dir, 'copy.db'))).toBe(false);
    // Not even migrated: the refusal comes before the store is opened.
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: string }>("select count(*) as n from pg_tables where schemaname = 'public'");
      expect(Number(rows[0]!.n)).toBe(0);
    } finally {
      await client.end();
    }
  });
});
