import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NewAlert } from '../../src/domain/alerts/alerts.ts';
import { KeySealer } from '../../src/domain/accounts/key-sealing.ts';
import { SqlAlertOutbox } from '../../src/store/repositories/alert-outbox.ts';
import { startHarness, type Harness, type TestAccount } from '../support/harness.ts';

/** The outbox's leases and retention (docs/guarantees.md §9), driven directly on a real store. */
describe('the alert outbox (src/store/repositories/alert-outbox.ts)', () => {
  let h: Harness;
  let owner: TestAccount;
  let outbox: SqlAlertOutbox;
  let integrationId: string;

  const at = (ms: number) => new Date(Date.parse('2026-11-23T12:00:00.000Z') + ms).toISOString();
  const alert = (id: string, createdAt: string): NewAlert => ({ id, accountId: owner.account.account_id, type: 'node.silent', subject: `node:${id}`, dedupKey: id, data: {}, createdAt });

  beforeAll(async () => {
    // No worker runs here: the test plays it, step by step. A Slack target has no secret to open.
    h = await startHarness({ TOLLWATCH_ALLOW_PRIVATE_TARGETS: 'on' }, { alerts: { pollMs: 3_600_000 } });
    owner = await h.account({ permissions: ['manage:integrations'] });
    const res = await owner.api('/api/integrations', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'slack', url: 'http://127.0.0.1:9/unused', alert_types: ['node.silent'] }),
    });
    integrationId = ((await res.json()) as { id: string }).id;
    outbox = new SqlAlertOutbox(h.services.database.db, h.services.database.caps, new KeySealer(new Uint8Array(32)));
  });
  afterAll(() => h?.close());

  it('writes only alerts an integration subscribes to, once per de-duplication key', async () => {
    await outbox.enqueueSubscribed([alert('msg_a', at(0)), alert('msg_a', at(0)), { ...alert('msg_b', at(0)), type: 'lookup.matched' }]);
    const rows = await h.services.database.db.selectFrom('alerts').select(['id', 'state']).execute();
    expect(rows).toEqual([{ id: 'msg_a', state: 'new' }]);
  });

  it('leases a row to one claimant until its lease runs out, then to the next', async () => {
    const [claimed] = await outbox.claimAlerts(10, at(0), at(60_000));
    expect(claimed?.id).toBe('msg_a');
    expect(await outbox.claimAlerts(10, at(30_000), at(90_000))).toEqual([]);
    // The first claimant died: after its lease the row is taken again, and fanned out once.
    expect((await outbox.claimAlerts(10, at(61_000), at(121_000))).map((a) => a.id)).toEqual(['msg_a']);
    expect(await outbox.recipients(claimed!)).toEqual([integrationId]);
    await outbox.fanOut('msg_a', [integrationId], false, at(61_000));
    await outbox.fanOut('msg_a', [integrationId], false, at(62_000));
    expect(await h.services.database.db.selectFrom('alert_deliveries').select('integration_id').execute()).toEqual([{ integration_id: integrationId }]);

    const [delivery] = await outbox.claimDeliveries(10, at(61_000), at(121_000));
    expect(delivery).toMatchObject({ attempts: 0, alert: { id: 'msg_a', type: 'node.silent' }, integration: { id: integrationId, kind: 'slack', secret: null } });
    expect(await outbox.claimDeliveries(10, at(62_000), at(122_000))).toEqual([]);
    await outbox.recordAttempt(delivery!, { at: at(62_000), durationMs: 3, statusCode: 500, error: 'answered 500', outcome: 'retrying', nextAttemptAt: at(70_000) });
    expect(await outbox.claimDeliveries(10, at(65_000), at(125_000))).toEqual([]);
    const again = await outbox.claimDeliveries(10, at(70_000), at(130_000));
    expect(again.map((d) => d.attempts)).toEqual([1]);
    await outbox.recordAttempt(again[0]!, { at: at(70_000), durationMs: 2, statusCode: 200, error: null, outcome: 'delivered' });
    expect(await outbox.claimDeliveries(10, at(999_000), at(999_999))).toEqual([]);
  });

  it('prunes closed alerts, finished deliveries and old attempts, never pending work', async () => {
    await outbox.enqueueSubscribed([alert('msg_pending', at(0))]);
    await outbox.prune(at(3_600_000));
    const db = h.services.database.db;
    expect(await db.selectFrom('alerts').select('id').execute()).toEqual([{ id: 'msg_pending' }]);
    expect(await db.selectFrom('alert_deliveries').select('id').execute()).toEqual([]);
    expect(await db.selectFrom('delivery_attempts').select('id').execute()).toEqual([]);
  });
});

/** Claims take turns between accounts (docs/guarantees.md §10): a backlog never queues another's first alert behind it. */
describe('the alert outbox shares claims between accounts', () => {
  let h: Harness;
  let outbox: SqlAlertOutbox;
  const at = (ms: number) => new Date(Date.parse('2026-11-23T12:00:00.000Z') + ms).toISOString();

  beforeAll(async () => {
    h = await startHarness({ TOLLWATCH_ALLOW_PRIVATE_TARGETS: 'on' }, { alerts: { pollMs: 3_600_000 } });
    outbox = new SqlAlertOutbox(h.services.database.db, h.services.database.caps, new KeySealer(new Uint8Array(32)));
  });
  afterAll(() => h?.close());

  async function subscribed(): Promise<{ accountId: string; integrationId: string }> {
    const who = await h.account({ permissions: ['manage:integrations'] });
    const res = await who.api('/api/integrations', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ kind: 'slack', url: 'http://127.0.0.1:9/unused', alert_types: ['node.silent'] }) });
    return { accountId: who.account.account_id, integrationId: ((await res.json()) as { id: string }).id };
  }
  const alertsOf = (accountId: string, prefix: string, count: number, from: number): NewAlert[] =>
    Array.from({ length: count }, (_, i) => ({ id: `${prefix}${i}`, accountId, type: 'node.silent', subject: `node:${prefix}${i}`, dedupKey: `${prefix}${i}`, data: {}, createdAt: at(from + i) }));

  it("claims every account's oldest alert and delivery before anyone's second, at most a share of one account, none of a skipped one", async () => {
    const flood = await subscribed();
    const quiet = await subscribed();
    // The flood's 30 alerts are all older than the quiet account's one.
    await outbox.enqueueSubscribed([...alertsOf(flood.accountId, 'msg_flood_', 30, 0), ...alertsOf(quiet.accountId, 'msg_quiet_', 1, 1000)]);
    const claimed = await outbox.claimAlerts(3, at(2000), at(60_000));
    // Which rows, not their order: an UPDATE … RETURNING answers in no promised order.
    expect(claimed.map((a) => a.id).sort()).toEqual(['msg_flood_0', 'msg_flood_1', 'msg_quiet_0']);
    for (const alert of await outbox.claimAlerts(100, at(2000), at(60_000))) claimed.push(alert);
    expect(claimed).toHaveLength(31);
    for (const alert of claimed) await outbox.fanOut(alert.id, [alert.accountId === flood.accountId ? flood.integrationId : quiet.integrationId], false, at(alert.id.startsWith('msg_quiet') ? 3000 : 2500));

    const share = { perAccount: 5, skip: [] };
    const first = await outbox.claimDeliveries(3, at(4000), at(60_000), share);
    expect(first.filter((d) => d.accountId === quiet.accountId)).toHaveLength(1);
    expect(first.filter((d) => d.accountId === flood.accountId)).toHaveLength(2);
    // Five of one account at most in a claim, whatever the room.
    const second = await outbox.claimDeliveries(20, at(4000), at(60_000), share);
    expect(second.map((d) => d.accountId)).toEqual(Array(5).fill(flood.accountId));
    // An account the worker says holds its share is skipped.
    expect(await outbox.claimDeliveries(20, at(4000), at(60_000), { perAccount: 5, skip: [flood.accountId] })).toEqual([]);
  });
});
