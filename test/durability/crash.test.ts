import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleEvent } from '../support/harness.ts';
import { cli, startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { freshDatabase, TEST_STORE, type TestDatabase } from '../support/test-database.ts';
import { eventually } from '../support/eventually.ts';

/**
 * An acknowledged event survives a crash: the real server, under concurrent intake, is killed
 * with SIGKILL; after a restart every event answered 201/200 is there and the store is intact.
 */
describe('crash safety', () => {
  let database: TestDatabase;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    database = await freshDatabase();
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    await database?.drop();
  });

  it('keeps every acknowledged event through three SIGKILLs under load', async () => {
    // Every acknowledged event is read back one by one after each crash: thousands of reads,
    // past the contributor plan's event-read allowance (3,600 an hour), so a plan with room.
    cli(database.url, 'plans', 'set', 'crash_test', '--may-submit', 'yes', '--lookups', '100/second', '--submissions', '1000000/hour', '--event-reads', '1000000/hour');
    const account = cli(database.url, 'accounts', 'create', '--name', 'crash', '--plan', 'crash_test');
    const client = cli(database.url, 'clients', 'create', '--account', account.account_id, '--name', 'node');
    const acknowledged = new Set<string>();

    // Three crashes, then a last start that only checks.
    for (let cycle = 0; cycle <= 3; cycle++) {
      server = await startServerProcess({ DATABASE_URL: database.url });
      const { url } = server;
      const tokenAnswer = await fetch(`${url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: client.client_id, client_secret: client.client_secret, audience: `${url}/api`, grant_type: 'client_credentials' }),
      });
      const token = ((await tokenAnswer.json()) as { access_token: string }).access_token;

      // What survived the previous crash is all still there.
      for (const uuid of acknowledged) {
        const res = await fetch(`${url}/api/events/${uuid}`, { headers: { authorization: `Bearer ${token}` } });
        expect(res.status, uuid).toBe(200);
        await res.arrayBuffer();
      }
      if (cycle === 3) break;

      let running = true;
      const loop = async () => {
        while (running) {
          const event = sampleEvent();
          try {
            const res = await fetch(`${url}/api/events`, {
              method: 'POST',
              headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
              body: JSON.stringify(event),
            });
            if (res.status === 201 || res.status === 200) acknowledged.add(String(event.event_uuid));
            await res.arrayBuffer();
          } catch {
            // The connection died with the server: not acknowledged, so not counted.
          }
        }
      };
      const loops = Array.from({ length: 16 }, loop);
      // Killed mid-intake once a good number are acknowledged, however long that takes here.
      await eventually('150 events acknowledged', () => acknowledged.size, (n) => n > 150);
      await server.stop('SIGKILL');
      running = false;
      await Promise.all(loops);
    }
    expect(acknowledged.size).toBeGreaterThan(100);
    await server!.stop();
    server = undefined;
    if (TEST_STORE === 'sqlite') {
      const file = new Database(database.url.slice('sqlite:'.length), { readonly: true });
      try {
        expect(file.pragma('integrity_check', { simple: true })).toBe('ok');
        const stored = new Set(file.prepare('select event_uuid from events').pluck().all() as string[]);
        expect([...acknowledged].filter((uuid) => !stored.has(uuid))).toEqual([]);
      } finally {
        file.close();
      }
    }
    // Three start-ups and hundreds of read-backs: well past the default 30 s on a busy machine.
  }, 120_000);
});
