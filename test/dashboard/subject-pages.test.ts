import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { signedIn, type WebClient } from './web-client.ts';

/**
 * A number's page (docs/dashboard.md, "Number and address"): what the federation's peers said
 * beside this server's own evidence, and the per-day chart's partial days; and the clients
 * page's permissions, each kept whole.
 */
describe('number pages and the clients page', () => {
  let h: Harness;
  let owner: TestAccount;
  let browser: WebClient;

  beforeAll(async () => {
    h = await startHarness();
    owner = await h.account();
    ({ browser } = await signedIn(h, owner.account.account_id));
  });
  afterAll(() => h?.close());

  it('shows what a peer said of a number beside this server’s own score', async () => {
    const number = '+4681300909';
    const peer_id = randomUUID();
    const db = h.services.database.db;
    await db
      .insertInto('peers')
      .values({ peer_id, name: 'carrier-b', api_root: 'https://carrier-b.example/taxii2/root/', collections: '[]', auth: 'none', username: null, credential: null, trust: 0.5, poll_seconds: 300, republish: 0, enabled: 1, created_at: new Date().toISOString() })
      .execute();
    await db
      .insertInto('peer_indicators')
      .values({ peer_id, object_id: `indicator--${randomUUID()}`, kind: 'number', value: number, confidence: 80, valid_from: '2026-11-20T10:00:00.000Z', modified: new Date().toISOString(), valid_until: '2099-01-01T00:00:00.000Z', revoked: 0, tlp: null, seq: 1 })
      .execute();
    await h.services.peerEvidence.refresh();
    const page = await browser.get(`/numbers/${encodeURIComponent(number)}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<strong>REPORTED BY PEERS</strong>: Not seen by this service');
    expect(page.text).toContain('What peers say');
    expect(page.text).toContain('This server’s own evidence scores 0 of 100; its peers’ say 40.');
    expect(page.text).toContain('carrier-b: confidence 80, trusted 50%, 40 points, until 2099-01-01 00:00:00 UTC');
  });

  it('marks the last day of a number’s chart partial when it is today, and keeps permissions whole', async () => {
    const number = '+4681300910';
    // An event of now, in the node's form of time.
    const now = new Date().toISOString().replace('T', ' ').replace('Z', '');
    expect((await postEvent(owner, sampleEvent({ called_number: number, event_timestamp: now }))).status).toBe(201);
    await h.settled();
    const page = await browser.get(`/numbers/${encodeURIComponent(number)}`);
    expect(page.text).toContain(`${new Date().toISOString().slice(0, 10)} (partial)`);
    expect(page.text).toContain('the last day partial, still going');
    const clients = await browser.get('/settings/clients');
    expect(clients.text).toMatch(/<code class="token">read:phone-numbers<\/code>/);
  });
});
