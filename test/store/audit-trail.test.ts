import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlanCatalog, planJson, TESTER_PLAN } from '../../src/domain/accounts/plans.ts';
import { SqlAuditTrail } from '../../src/store/repositories/audit-trail.ts';
import { openDatabase, type Database } from '../../src/store/database.ts';
import { SqlPlansRepository } from '../../src/store/repositories/plans-repository.ts';
import { freshDatabase, type TestDatabase } from '../support/test-database.ts';

describe('the audit trail, read back', () => {
  let store: TestDatabase;
  let database: Database;
  let audit: SqlAuditTrail;

  beforeAll(async () => {
    store = await freshDatabase();
    database = await openDatabase(store.url);
    audit = new SqlAuditTrail(database.db);
  });
  afterAll(async () => {
    await database?.close();
    await store?.drop();
  });

  it('lists the newest entries first, optionally for one account, typed and with detail parsed', async () => {
    await audit.record({ action: 'account.created', actor: 'operator', accountId: 'acc-a', detail: { plan: 'tester', trusted: false } });
    await audit.record({ action: 'client.created', actor: 'operator', accountId: 'acc-b', clientId: 'twc_b' });
    await audit.record({ action: 'token.refused', actor: 'anonymous', accountId: 'acc-a', clientId: 'twc_a', ip: '192.0.2.1', detail: { reason: 'bad secret' } });

    const newest = await audit.list({ limit: 2 });
    expect(newest.map((e) => e.action)).toEqual(['token.refused', 'client.created']);
    expect(newest[0]).toEqual({
      id: expect.any(Number),
      at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      action: 'token.refused',
      actor: 'anonymous',
      account_id: 'acc-a',
      client_id: 'twc_a',
      ip: '192.0.2.1',
      detail: { reason: 'bad secret' },
    });
    expect(newest[1]).toMatchObject({ account_id: 'acc-b', client_id: 'twc_b', ip: null, detail: null });

    const forA = await audit.list({ accountId: 'acc-a', limit: 50 });
    expect(forA.map((e) => e.action)).toEqual(['token.refused', 'account.created']);
    expect(forA[1]!.detail).toEqual({ plan: 'tester', trusted: false });
    expect(forA[0]!.id).toBeGreaterThan(forA[1]!.id);
    expect(await audit.list({ accountId: 'acc-a', limit: 1 })).toHaveLength(1);
    expect(await audit.list({ accountId: 'nobody', limit: 50 })).toEqual([]);
  });

  it('records plan changes where the catalog makes them, with the actor', async () => {
    const plans = new PlanCatalog(new SqlPlansRepository(database.db), 0, { audit });
    const saved = await plans.change('fresh', { lookups: { limit: 7, windowSeconds: 60 } }, 'client:twc_admin');
    // A new plan starts from the tester plan: the one definition of its limits.
    expect(saved).toEqual({ ...TESTER_PLAN, name: 'fresh', lookups: { limit: 7, windowSeconds: 60 } });
    const [entry] = await audit.list({ limit: 1 });
    expect(entry).toMatchObject({ action: 'plan.saved', actor: 'client:twc_admin', account_id: null, client_id: null, detail: { plan: planJson(saved) } });

    // A change keeps what it does not name; null is a change, not an absence.
    const changed = await plans.change('fresh', { maxClients: null, maySubmit: undefined });
    expect(changed).toEqual({ ...saved, maxClients: null });
    expect((await audit.list({ limit: 1 }))[0]).toMatchObject({ action: 'plan.saved', actor: 'operator', detail: { plan: planJson(changed) } });

    // A refused plan is neither saved nor audited.
    const before = await audit.list({ limit: 50 });
    await expect(plans.change('fresh', { maySubmit: true })).rejects.toThrow(/submission limit/);
    expect(await audit.list({ limit: 50 })).toEqual(before);
    expect(await plans.find('fresh')).toEqual(changed);
  });
});
