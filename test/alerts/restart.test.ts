import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { FAST_ALERTS, startAlertReceiver, type AlertReceiver } from '../support/alert-receiver.ts';
import { postEvent, sampleEvent, startHarness } from '../support/harness.ts';
import { freshDatabase, type TestDatabase } from '../support/test-database.ts';

/** The outbox outlives the process that wrote it (docs/guarantees.md, "Alerts"). */
describe('alerts across a restart (docs/guarantees.md)', () => {
  let database: TestDatabase;
  let receiver: AlertReceiver;

  beforeAll(async () => {
    database = await freshDatabase();
    receiver = await startAlertReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await database?.drop();
  });

  it('delivers an alert written by a process that stopped before delivering it', async () => {
    const env = { DATABASE_URL: database.url, TOLLWATCH_ALLOW_PRIVATE_TARGETS: 'on' };
    // The first process looks at its outbox once, at start, and not again for an hour.
    const first = await startHarness(env, { alerts: { ...FAST_ALERTS, pollMs: 3_600_000 } });
    const owner = await first.account({ permissions: ['write:events', 'manage:integrations'] });
    const created = await owner.api('/api/integrations', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'webhook', url: `${receiver.url}/restart`, alert_types: ['number.first_seen'], min_score: 0 }),
    });
    const { secret } = (await created.json()) as { secret: string };
    expect((await postEvent(owner, sampleEvent({ called_number: '+15557770001' }))).status).toBe(201);
    // The alert is written by the fold step that first counts the number.
    await first.settled();
    const pending = await first.services.database.db.selectFrom('alerts').select(['state']).execute();
    expect(pending).toEqual([{ state: 'new' }]);
    await first.close();
    expect(receiver.received).toHaveLength(0);

    const second = await startHarness(env, { alerts: FAST_ALERTS });
    try {
      const [delivery] = await receiver.waitFor(1, '/restart');
      expect(new Webhook(secret).verify(delivery!.body, delivery!.headers as Record<string, string>)).toMatchObject({
        type: 'number.first_seen',
        data: { phone_number: '+15557770001' },
      });
    } finally {
      await second.close();
    }
  });

  it('has two instances on one store deliver each alert once between them', async () => {
    const env = { DATABASE_URL: database.url, TOLLWATCH_ALLOW_PRIVATE_TARGETS: 'on' };
    const [a, b] = [await startHarness(env, { alerts: FAST_ALERTS }), await startHarness(env, { alerts: FAST_ALERTS })];
    try {
      const owner = await a.account({ permissions: ['write:events', 'manage:integrations'] });
      const created = await owner.api('/api/integrations', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'webhook', url: `${receiver.url}/pair`, alert_types: ['number.first_seen'], min_score: 0 }),
      });
      expect(created.status).toBe(201);
      const numbers = Array.from({ length: 12 }, (_, i) => `+1555888${String(i).padStart(4, '0')}`);
      const batch = await owner.api('/api/events/batch', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(numbers.map((called_number) => sampleEvent({ called_number }))),
      });
      expect(batch.status).toBe(200);
      const deliveries = await receiver.waitFor(numbers.length, '/pair');
      await new Promise((r) => setTimeout(r, 500));
      const ids = receiver.received.filter((r) => r.path === '/pair').map((r) => r.headers['webhook-id']);
      expect(ids).toHaveLength(numbers.length);
      expect(new Set(ids).size).toBe(numbers.length);
      expect(deliveries.map((d) => (JSON.parse(d.body) as { data: { phone_number: string } }).data.phone_number).sort()).toEqual(numbers);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
