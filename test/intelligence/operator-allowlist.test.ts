import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { indicatorId } from '../../src/domain/intelligence/stix-indicators.ts';
import { dig, dnsToolsMissing, serveZones } from '../support/dns-tools.ts';
import { postEvent, sampleEvent, saveUnlimitedPlan, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { cli } from '../support/server-process.ts';
import type { DnsServer } from '../../src/dns/dns-server.ts';

const TAXII = 'application/taxii+json;version=2.1';
const ROOT = '/taxii2/tollwatch';
const NUMBERS = 'numbers.tollwatch.test-zones';
const NUMBER = '+46812118532';
const NUMBER_NAME = `2.3.5.8.1.1.2.1.8.6.4.${NUMBERS}`;
const ADDRESS = '203.0.113.77';
const NODES = ['732e7f50-637d-4fde-81e0-5c32f1bb5a92', '832e7f50-637d-4fde-81e0-5c32f1bb5a92', '932e7f50-637d-4fde-81e0-5c32f1bb5a92'];
const noDig = dnsToolsMissing('dig');

type Json = Record<string, any>;

/**
 * The operator's allowlist (docs/api.md §16), managed with `tollwatch allowlist`: what it holds
 * leaves the feeds, the TAXII collections and the DNS zones, while every account's own lookup
 * still shows the evidence. An account's own list leaves its own feeds only.
 */
describe("the operator's allowlist and what is published", () => {
  let h: Harness;
  let fleet: TestAccount;
  let reader: TestAccount;
  let owner: TestAccount;
  let server: DnsServer | undefined;

  beforeAll(async () => {
    h = await startHarness({ TOLLWATCH_TAXII_PUBLISH_INTERVAL: '3600', TOLLWATCH_DNS_NUMBER_ZONE: NUMBERS });
    const plan = await saveUnlimitedPlan(h);
    fleet = await h.account({ plan, trusted: true });
    reader = await h.account({ plan, permissions: ['read:phone-numbers', 'read:ip-addresses'] });
    owner = await h.account({ plan, permissions: ['read:phone-numbers', 'read:ip-addresses', 'manage:allowlist'] });
    // Both score about 66: eight INVITEs from eight sources through three nodes; twelve numbers dialled.
    for (let i = 0; i < 8; i++) {
      expect((await postEvent(fleet, sampleEvent({ called_number: NUMBER, source_ip: `198.51.100.${i + 1}`, created_by_node_id: NODES[i % 3], sip_method: 'INVITE' }))).status).toBe(201);
    }
    for (let i = 0; i < 12; i++) {
      expect((await postEvent(fleet, sampleEvent({ called_number: `+44207900${String(i).padStart(4, '0')}`, source_ip: ADDRESS, created_by_node_id: NODES[i % 3], sip_method: 'INVITE' }))).status).toBe(201);
    }
    await h.settled();
    if (!noDig) server = await serveZones(h.services.dnsZones);
  });
  afterAll(async () => {
    await server?.close();
    await h?.close();
  });

  const feed = async (who: TestAccount, kind: 'phone-numbers' | 'ip-addresses') => {
    const res = await who.api(`/api/feeds/${kind}?format=json`);
    expect(res.status).toBe(200);
    const values = ((await res.json()) as { entries: Json[] }).entries.map((e) => e.phone_number ?? e.ip_address);
    return { etag: res.headers.get('etag'), values };
  };
  const objects = async (collection: string, ids: string[]) => {
    const res = await reader.api(`${ROOT}/collections/${collection}/objects/?match[version]=all&match[id]=${ids.join(',')}`, { headers: { accept: TAXII } });
    expect(res.status).toBe(200);
    return (((await res.json()) as Json).objects ?? []) as Json[];
  };
  const zoneFile = () => cli(h.config.databaseUrl, 'dns-zone', '--zone', 'numbers', '--format', 'rbldnsd').text as string;

  it('takes an allowlisted number and range out of the feeds, TAXII and the zones, and puts them back once removed; lookups show the evidence throughout', async () => {
    const numberIds = [indicatorId('phone-numbers', NUMBER), indicatorId('phone-numbers', NUMBER, 1)];
    const addressIds = [indicatorId('ip-addresses', ADDRESS)];
    await h.services.taxiiPublisher.publish();
    const before = await feed(reader, 'phone-numbers');
    expect(before.values).toContain(NUMBER);
    expect((await feed(reader, 'ip-addresses')).values).toContain(ADDRESS);
    expect(await objects('phone-numbers', numberIds)).toHaveLength(1);
    if (server) expect((await dig(server.port, NUMBER_NAME, 'A')).status).toBe('NOERROR');
    const lookupBefore = (await (await reader.api(`/api/phone-numbers/${encodeURIComponent(NUMBER)}`)).json()) as Json;

    // The operator's CLI is another process on the same store: the server hears of it.
    const added = cli(h.config.databaseUrl, 'allowlist', 'add', '--kind', 'phone_number', '--value', '0046 8 121 185 32', '--note', 'the fleet operator’s own line');
    expect(added).toMatchObject({ kind: 'phone_number', value: NUMBER, added_by: 'operator', created: true });
    const range = cli(h.config.databaseUrl, 'allowlist', 'add', '--kind', 'ip_range', '--value', '203.0.113.0/24');
    expect(cli(h.config.databaseUrl, 'allowlist', 'list').entries.map((e: Json) => e.id)).toEqual([added.id, range.id]);

    await expect.poll(async () => (await feed(reader, 'phone-numbers')).values).not.toContain(NUMBER);
    const after = await feed(reader, 'phone-numbers');
    expect(after.etag).not.toBe(before.etag);
    expect((await feed(reader, 'ip-addresses')).values).not.toContain(ADDRESS);
    expect((await feed(owner, 'phone-numbers')).values).not.toContain(NUMBER);
    expect(zoneFile()).not.toContain('2.3.5.8.1.1.2.1.8.6.4');
    if (server) expect((await dig(server.port, NUMBER_NAME, 'A')).status).toBe('NXDOMAIN');
    // TAXII: the live objects are revoked (a later version, same id), so subscribers drop them.
    await h.services.taxiiPublisher.publish();
    const revoked = await objects('phone-numbers', numberIds);
    expect(revoked.map((o) => [o.id, o.revoked ?? false])).toEqual([
      [numberIds[0], false],
      [numberIds[0], true],
    ]);
    expect((await objects('ip-addresses', addressIds)).map((o) => o.revoked ?? false)).toEqual([false, true]);
    // The lookup still shows the evidence, unflagged: the operator's list is not the account's.
    const lookupAfter = (await (await reader.api(`/api/phone-numbers/${encodeURIComponent(NUMBER)}`)).json()) as Json;
    expect(lookupAfter).toEqual(lookupBefore);
    expect(lookupAfter).toMatchObject({ found: true, seen_count: 8 });

    cli(h.config.databaseUrl, 'allowlist', 'remove', added.id);
    await expect.poll(async () => (await feed(reader, 'phone-numbers')).values).toContain(NUMBER);
    if (server) expect((await dig(server.port, NUMBER_NAME, 'A')).status).toBe('NOERROR');
    // Published again as a new object, as a value scoring again after a revocation is.
    await h.services.taxiiPublisher.publish();
    const again = await objects('phone-numbers', numberIds);
    expect(again.map((o) => [o.id, o.revoked ?? false])).toEqual([
      [numberIds[0], false],
      [numberIds[0], true],
      [numberIds[1], false],
    ]);
    await h.services.allowlists.remove('operator', range.id, 'operator');

    const audited = (await h.services.audit.list({ limit: 50 })).filter((a) => a.action.startsWith('allowlist.'));
    expect(audited.map((a) => [a.action, a.actor, a.account_id, a.detail?.list, a.detail?.value])).toEqual([
      ['allowlist.entry_removed', 'operator', null, 'operator', '203.0.113.0/24'],
      ['allowlist.entry_removed', 'operator', null, 'operator', NUMBER],
      ['allowlist.entry_added', 'operator', null, 'operator', '203.0.113.0/24'],
      ['allowlist.entry_added', 'operator', null, 'operator', NUMBER],
    ]);
    // Each run of the CLI starts a process that opens the store: seconds each on a loaded machine.
  }, 300_000);

  it('refuses a bad entry at the CLI, naming the field, and stores nothing', () => {
    expect(() => cli(h.config.databaseUrl, 'allowlist', 'add', '--kind', 'ip_range', '--value', '203.0.113.0/40')).toThrow(/value: must be a range in CIDR notation/);
    expect(() => cli(h.config.databaseUrl, 'allowlist', 'add', '--kind', 'phone_number', '--value', '12!34')).toThrow(/value: must be a phone number/);
    expect(() => cli(h.config.databaseUrl, 'allowlist', 'remove', '3f0c1e55-8a2b-4d1c-9b7e-1a2b3c4d5e6f')).toThrow(/no such allowlist entry/);
    expect(cli(h.config.databaseUrl, 'allowlist', 'list').entries).toEqual([]);
  }, 180_000);

  it("takes what an account allowlisted out of that account's own feeds, and no one else's", async () => {
    const entry = (await (await owner.api('/api/allowlist', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ kind: 'ip_address', value: ADDRESS }) })).json()) as Json;
    expect((await feed(owner, 'ip-addresses')).values).not.toContain(ADDRESS);
    expect((await feed(reader, 'ip-addresses')).values).toContain(ADDRESS);
    expect((await owner.api(`/api/allowlist/${entry.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await feed(owner, 'ip-addresses')).values).toContain(ADDRESS);
  });
});
