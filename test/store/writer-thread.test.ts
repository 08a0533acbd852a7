import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HoneypotEvent } from '../../src/domain/events/honeypot-event.ts';
import { openDatabase, type Database } from '../../src/store/database.ts';
import { SqlEventsRepository } from '../../src/store/repositories/events-repository.ts';
import { isStoreUnavailable } from '../../src/store/store-errors.ts';
import { WriterThread } from '../../src/store/writer/writer-thread.ts';
import { validSampleEvent } from '../support/harness.ts';
import { TEST_STORE } from '../support/test-database.ts';

// The writer thread is how a SQLite file is written; PostgreSQL writes from the event loop.
describe.skipIf(TEST_STORE !== 'sqlite')('the SQLite writer thread', () => {
  let dir: string;
  let url: string;
  let database: Database;
  let reader: SqlEventsRepository;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollwatch-writer-'));
    url = `sqlite:${join(dir, 'store.db')}`;
    database = await openDatabase(url);
    await database.db.insertInto('accounts').values({ account_id: 'acct', name: 'a', plan: 'contributor', trusted: 0, disabled: 0, created_at: new Date().toISOString() }).execute();
    reader = new SqlEventsRepository(database.db, database.ingestWrites);
  });
  afterAll(async () => {
    await database?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stores groups that this thread reads back as soon as the answer arrives', async () => {
    const writer = new WriterThread(url, 8);
    try {
      const first = validSampleEvent();
      const outcomes = await writer.ingestGroups([
        { owner: { accountId: 'acct', scope: 'acct' }, events: [first, validSampleEvent()] },
        { owner: { accountId: 'acct', scope: 'acct' }, events: [first] },
      ]);
      expect(outcomes).toEqual([['created', 'created'], ['replayed']]);
      expect(await reader.find('acct', first.event_uuid)).toMatchObject({ event_uuid: first.event_uuid });
      const again = await writer.ingestGroups([{ owner: { accountId: 'acct', scope: 'acct' }, events: [{ ...first, content_hash: 'changed' }] }]);
      expect(again).toEqual([['conflict']]);
    } finally {
      await writer.close();
    }
  });

  it('answers a store it cannot write as an outage (503), never as stored', async () => {
    // A path through a regular file: the thread cannot open it.
    writeFileSync(join(dir, 'a-file'), '');
    const writer = new WriterThread(`sqlite:${join(dir, 'a-file', 'x.db')}`, 8);
    try {
      const failure = await writer.ingestGroups([{ owner: { accountId: 'acct', scope: 'acct' }, events: [validSampleEvent()] }]).catch((err: unknown) => err);
      expect(failure).toBeInstanceOf(Error);
      expect(isStoreUnavailable(failure)).toBe(true);
    } finally {
      await writer.close();
    }
  });

  it('passes the store’s error codes through, and keeps going after a refused group', async () => {
    const writer = new WriterThread(url, 8);
    try {
      const broken = { ...validSampleEvent(), event_time: null } as unknown as HoneypotEvent;
      const failure = await writer.ingestGroups([{ owner: { accountId: 'acct', scope: 'acct' }, events: [broken] }]).catch((err: unknown) => err);
      expect(failure).toMatchObject({ code: 'SQLITE_CONSTRAINT_NOTNULL' });
      expect(isStoreUnavailable(failure)).toBe(false);
      expect(await writer.ingestGroups([{ owner: { accountId: 'acct', scope: 'acct' }, events: [validSampleEvent()] }])).toEqual([['created']]);
    } finally {
      await writer.close();
    }
  });

  it('closes cleanly with nothing held, and again when never started', async () => {
    const writer = new WriterThread(url, 8);
    await writer.ingestGroups([{ owner: { accountId: 'acct', scope: 'acct' }, events: [validSampleEvent()] }]);
    await writer.close();
    await new WriterThread(url, 8).close();
  });
});
