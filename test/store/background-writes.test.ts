import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postEvent, sampleEvent, startHarness, type Harness } from '../support/harness.ts';
import { eventually } from '../support/eventually.ts';
import { TEST_STORE } from '../support/test-database.ts';

/**
 * On a SQLite file, the main thread answers every request, and better-sqlite3 waits for the
 * store's one write lock by sleeping the thread: a background job writing there stops lookups
 * for as long as intake or a fold step holds the lock. Background writers write through the
 * writer thread instead (src/store/writer/outbox-on-writer.ts, writes-on-writer.ts; the TAXII
 * publisher's too, taxii-on-writer.ts). Here another connection holds the lock: their writes
 * must wait for it without stopping the main thread, and finish once it is let go.
 */
describe.runIf(TEST_STORE === 'sqlite')('background writers on a SQLite file', () => {
  let h: Harness;
  let holder: Database.Database;

  beforeAll(async () => {
    h = await startHarness();
    holder = new Database(h.config.databaseUrl.slice('sqlite:'.length));
  });
  afterAll(async () => {
    if (holder.inTransaction) holder.exec('rollback');
    holder?.close();
    await h?.close();
  });

  /** Runs `write` while another connection holds the write lock: what settled first. */
  async function underHeldLock(write: () => Promise<unknown>): Promise<string[]> {
    holder.exec('begin immediate');
    const settled: string[] = [];
    const written = write().finally(() => settled.push('write'));
    // On the main thread's connection, the write would sleep this thread until SQLite's busy
    // timeout gave up (5 s), and this timer would run only after the write had failed. A fixed
    // wait that shows what does not happen: the lock is held throughout, so the write cannot end
    // before the timer however slow the machine.
    await new Promise((resolve) => setTimeout(resolve, 100));
    settled.push('main thread');
    holder.exec('commit');
    await written;
    return settled;
  }

  it("the alert worker's pass waits for the write lock off the main thread", async () => {
    // Once first, so the writer thread is up and the pass below only waits for the lock.
    await h.services.alertWorker.tick();
    // It claims alerts and deliveries with an UPDATE even when none is due.
    expect(await underHeldLock(() => h.services.alertWorker.tick())).toEqual(['main thread', 'write']);
  });

  it("the clients' last uses are written off the main thread", async () => {
    const account = await h.account();
    h.services.clientActivity.tokenIssued(account.clientId, '192.0.2.7');
    expect(await underHeldLock(() => h.services.clientActivity.flush())).toEqual(['main thread', 'write']);
    const [client] = await h.services.database.db.selectFrom('clients').select('last_token_address').where('client_id', '=', account.clientId).execute();
    expect(client?.last_token_address).toBe('192.0.2.7');
  });

  it('audit rows, written without holding the answer, are written off the main thread', async () => {
    const entry = { action: 'token.refused', actor: 'anonymous', ip: '198.51.100.9', detail: { reason: 'held lock' } } as const;
    expect(await underHeldLock(() => h.services.audit.record(entry))).toEqual(['main thread', 'write']);
    const rows = await h.services.audit.list({ limit: 1 });
    expect(rows[0]).toMatchObject({ action: 'token.refused', ip: '198.51.100.9', detail: { reason: 'held lock' } });
  });

  it("an ingest URL's use, noted without holding the ingest, is written off the main thread", async () => {
    const who = await h.account();
    const issued = await h.services.ingestUrls.create({ accountId: who.account.account_id, name: 'held lock' });
    const secret = new URL(issued.ingest_url).pathname.slice('/ingest/'.length);
    const lastUse = async () => (await h.services.ingestUrls.list(who.account.account_id))[0]?.last_used_at;
    const settled = await underHeldLock(async () => {
      expect((await h.services.ingestUrls.authenticate(secret)).ok).toBe(true);
      await eventually('the use written', lastUse, (at) => typeof at === 'string');
    });
    expect(settled).toEqual(['main thread', 'write']);
  });

  it('the hourly store maintenance and the audit log pruning run off the main thread', async () => {
    expect(await underHeldLock(() => h.services.auditRetention.prune())).toEqual(['main thread', 'write']);
    expect(await underHeldLock(() => h.services.storeMaintenance.runOnce())).toEqual(['main thread', 'write']);
  });

  it("the writer thread's commits leave the access kept in memory alone; another process's change of access does not", async () => {
    // What tells the credentials and plans caches that access changed elsewhere: read every 50 ms.
    const counter = h.services.database.externalChangeCounter!;
    // A fixed wait on that documented bound, not on a condition: past it the next read is fresh.
    const pastSample = () => new Promise((resolve) => setTimeout(resolve, 60));
    const who = await h.account();
    await pastSample();
    const before = counter();
    // Events stored and folded, an alert pass, audit rows: all on the writer thread's connection.
    expect((await postEvent(who, sampleEvent())).status).toBe(201);
    await h.settled();
    await h.services.alertWorker.tick();
    await h.services.audit.record({ action: 'token.refused', actor: 'anonymous', ip: '198.51.100.10', detail: { reason: 'counter' } });
    await pastSample();
    expect(counter()).toBe(before);
    // The operator CLI disabling the account, as another connection does it.
    holder.prepare('update accounts set disabled = 1 where account_id = ?').run(who.account.account_id);
    await eventually('the change seen', counter, (now) => now !== before);
  });
});
