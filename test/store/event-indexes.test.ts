import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.ts';
import { dropEventQueryIndexes, ensureEventQueryIndexes, EVENT_QUERY_INDEXES } from '../../src/store/maintenance/event-indexes.ts';
import { eventIndexDefinitions } from '../support/event-indexes.ts';
import { freshDatabase, type TestDatabase } from '../support/test-database.ts';

describe('the events’ query indexes, set aside for a bulk import (src/store/maintenance/event-indexes.ts)', () => {
  let store: TestDatabase;
  let asMigrated: Record<string, string>;

  beforeAll(async () => {
    store = await freshDatabase();
    const database = await openDatabase(store.url);
    asMigrated = await eventIndexDefinitions(database.db);
    await database.close();
  });
  afterAll(() => store?.drop());

  it('names the indexes the migrations made', () => {
    for (const { name } of EVENT_QUERY_INDEXES) expect(asMigrated).toHaveProperty(name);
  });

  it('builds them again exactly as the migrations defined them', async () => {
    const database = await openDatabase(store.url);
    try {
      await dropEventQueryIndexes(database.db);
      const dropped = await eventIndexDefinitions(database.db);
      for (const { name } of EVENT_QUERY_INDEXES) expect(dropped).not.toHaveProperty(name);
      // The uniqueness that tells replays stays.
      expect(Object.keys(dropped).length).toBeGreaterThan(0);

      expect(await ensureEventQueryIndexes(database.db, database.caps)).toEqual(EVENT_QUERY_INDEXES.map((i) => i.name));
      expect(await eventIndexDefinitions(database.db)).toEqual(asMigrated);
      expect(await ensureEventQueryIndexes(database.db, database.caps)).toEqual([]);
    } finally {
      await database.close();
    }
  });

  it('are built again when the store is next opened, after an import that stopped with them dropped', async () => {
    const stopped = await openDatabase(store.url);
    await dropEventQueryIndexes(stopped.db);
    await stopped.close();

    const reopened = await openDatabase(store.url);
    try {
      expect(await eventIndexDefinitions(reopened.db)).toEqual(asMigrated);
    } finally {
      await reopened.close();
    }
  });

  it('are left alone by an opening that asks not to (the writer thread, beside a bulk import)', async () => {
    const importing = await openDatabase(store.url);
    try {
      await dropEventQueryIndexes(importing.db);
      const writer = await openDatabase(store.url, { waitMs: 0, restoreEventIndexes: false });
      await writer.close();
      const now = await eventIndexDefinitions(importing.db);
      for (const { name } of EVENT_QUERY_INDEXES) expect(now).not.toHaveProperty(name);
    } finally {
      await ensureEventQueryIndexes(importing.db, importing.caps);
      await importing.close();
    }
  });
});
