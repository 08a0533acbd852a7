import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATOR_LIST } from '../../src/domain/allowlists/allowlists.ts';
import type { DnsServer } from '../../src/dns/dns-server.ts';
import { dig, dnsToolsMissing, serveZones } from '../support/dns-tools.ts';
import { eventually } from '../support/eventually.ts';
import { ago, postEvent, sampleEvent, saveUnlimitedPlan, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { peerRows, type PeerRows } from '../support/peer-rows.ts';
import { spawnCli } from '../support/server-process.ts';

/**
 * What peers said in the DNS zones (docs/dns.md; docs/federation.md, "Scores and publication"):
 * a republishable peer's value is listed, its TXT saying the listing is the peers', and never
 * under TLP:AMBER or RED, nor once the say ends; the operator's allowlist and accepted reports
 * hold as for local listings. Asked with the real `dig`, and written by `tollwatch dns-zone`.
 */

const missing = dnsToolsMissing('dig');

const NUMBERS = 'numbers.peers.test-zones';
const ADDRESSES = 'addresses.peers.test-zones';
const ENV = { TOLLWATCH_DNS_NUMBER_ZONE: NUMBERS, TOLLWATCH_DNS_ADDRESS_ZONE: ADDRESSES, TOLLWATCH_DNS_NAME_SERVER: 'ns1.peers.test-zones' };
const NODES = ['732e7f50-637d-4fde-81e0-5c32f1bb5a92', '0b7d6d7e-2b1a-4c55-9d7e-3f2a1b0c9d8e', 'c1a2b3c4-d5e6-4f70-8192-a3b4c5d6e7f8'];

/** A number key's ENUM name in the test's zone. */
const nameOf = (number: string) => `${[...number.slice(1)].reverse().join('.')}.${NUMBERS}`;
const addressName = (address: string) => `${address.split('.').reverse().join('.')}.${ADDRESSES}`;

const PEERS_ONLY = '+4681500101';
const BOTH = '+4681500202';
const AMBER = '+4681500303';
const RED = '+4681500404';
const CLOSED = '+4681500505';
const ALLOWLISTED = '+4681500606';
const REPORTED = '+4681500707';
const ENDING = '+4681500808';
const ADDRESS = '203.0.113.160';

describe.skipIf(missing)('DNS zones with what peers said (docs/dns.md)', () => {
  let h: Harness;
  let fleet: TestAccount;
  let reporter: TestAccount;
  let rows: PeerRows;
  let server: DnsServer;
  let desk: string;
  let endingId: string;

  const ask = (name: string, type: string) => dig(server.port, name, type);
  const zoneFile = async (zone: 'numbers' | 'addresses') => {
    const run = await spawnCli({ DATABASE_URL: h.config.databaseUrl, ...ENV }, '--json', 'dns-zone', '--format', 'bind', '--zone', zone);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    return (JSON.parse(run.stdout) as { text: string }).text.split('\n');
  };
  const recordsOf = (lines: string[], name: string) => lines.filter((line) => line.startsWith(`${name}. `)).map((line) => line.split(/\s+/).slice(3).join(' '));

  beforeAll(async () => {
    h = await startHarness(ENV);
    const plan = await saveUnlimitedPlan(h);
    fleet = await h.account({ trusted: true, plan });
    reporter = await h.account({ plan });
    for (let i = 0; i < 6; i += 1) {
      const event = sampleEvent({ called_number: BOTH, source_ip: `198.18.50.${i % 3}`, created_by_node_id: NODES[i % 3], sip_method: 'INVITE', event_timestamp: ago(10 + i) });
      expect((await postEvent(fleet, event)).status).toBe(201);
    }
    await h.settled();
    rows = peerRows(h);
    desk = await rows.peer('open-desk', 0.8, { republish: 1 });
    await rows.say(desk, 'number', PEERS_ONLY, 90);
    await rows.say(desk, 'number', BOTH, 70);
    await rows.say(desk, 'ip', ADDRESS, 80, { tlp: 'clear' });
    await rows.say(desk, 'number', AMBER, 100, { tlp: 'amber' });
    await rows.say(desk, 'number', RED, 100, { tlp: 'red' });
    await rows.say(desk, 'number', ALLOWLISTED, 90);
    await rows.say(desk, 'number', REPORTED, 90);
    endingId = await rows.say(desk, 'number', ENDING, 90);
    const closed = await rows.peer('closed-desk', 1);
    await rows.say(closed, 'number', CLOSED, 100);
    await h.services.allowlists.add(OPERATOR_LIST, { kind: 'phone_number', value: ALLOWLISTED }, 'operator');
    const report = await reporter.api('/api/reports', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ phone_number: REPORTED, reason: 'own_number' }) });
    expect(report.status).toBe(201);
    await h.services.reports.accept(((await report.json()) as { id: string }).id, undefined, 'operator');
    await h.services.acceptedReports.load();
    server = await serveZones(h.services.dnsZones);
  });
  afterAll(async () => {
    await server?.close();
    await h?.close();
  });

  it('lists a number only a republishable peer reported, its TXT saying the listing is the peers’', async () => {
    const a = await ask(nameOf(PEERS_ONLY), 'A');
    expect(a.status).toBe('NOERROR');
    // Score 72 (0.8 × 90), not marked, the peer's say made today.
    expect(a.answers.map((r) => r.data)).toEqual(['127.0.70.2']);
    const txt = await ask(nameOf(PEERS_ONLY), 'TXT');
    expect(txt.answers.map((r) => r.data)).toEqual(['"Tollwatch score 72, reported by peers only: peer open-desk says 90 (trusted 80%): 72 points"']);
    const address = await ask(addressName(ADDRESS), 'TXT');
    expect(address.answers.map((r) => r.data)).toEqual(['"Tollwatch score 64, reported by peers only: peer open-desk says 80 (trusted 80%): 64 points"']);
  });

  it('adds a peer’s say to a number seen here, as lookups and feeds add it', async () => {
    const lookup = (await (await fleet.api(`/api/phone-numbers/${encodeURIComponent(BOTH)}`)).json()) as { score: number };
    const txt = (await ask(nameOf(BOTH), 'TXT')).answers.map((r) => r.data);
    expect(txt).toHaveLength(1);
    expect(txt[0]).toMatch(new RegExp(`^"Tollwatch score ${lookup.score}, with peers' reports: `));
  });

  it('is NXDOMAIN for a say under TLP:AMBER or RED, a peer’s whose republish is off, an allowlisted value and a reported one', async () => {
    for (const number of [AMBER, RED, CLOSED, ALLOWLISTED, REPORTED]) expect((await ask(nameOf(number), 'A')).status, number).toBe('NXDOMAIN');
  });

  it('writes the zone file with the same names and texts, and none of the others', async () => {
    const numbers = await zoneFile('numbers');
    expect(recordsOf(numbers, nameOf(PEERS_ONLY))).toEqual(['A 127.0.70.2', 'TXT "Tollwatch score 72, reported by peers only: peer open-desk says 90 (trusted 80%): 72 points"', `NAPTR 100 10 "u" "E2U+x-tollwatch" "!^.*$!tel:${PEERS_ONLY};tollwatch-score=72!" .`]);
    // Listed once, with both parts.
    const both = recordsOf(numbers, nameOf(BOTH));
    expect(both).toHaveLength(3);
    expect(both[1]).toBe(`TXT "${(await ask(nameOf(BOTH), 'TXT')).answers[0]!.data.slice(1, -1)}"`);
    for (const number of [AMBER, RED, CLOSED, ALLOWLISTED, REPORTED]) expect(recordsOf(numbers, nameOf(number)), number).toEqual([]);
    expect(recordsOf(await zoneFile('addresses'), addressName(ADDRESS))[0]).toBe('A 127.0.60.2');
  });

  it('stops listing a value once its say is revoked or its peer stops being passed on', async () => {
    expect((await ask(nameOf(ENDING), 'A')).status).toBe('NOERROR');
    await rows.say(desk, 'number', ENDING, 90, { object_id: endingId, revoked: 1 });
    await eventually('the revoked say unlisted', () => ask(nameOf(ENDING), 'A'), (a) => a.status === 'NXDOMAIN');

    await h.services.peers.change('open-desk', { republish: false }, 'operator');
    await h.services.peerEvidence.refresh();
    expect((await ask(nameOf(PEERS_ONLY), 'A')).status).toBe('NXDOMAIN');
    expect((await ask(nameOf(BOTH), 'TXT')).answers[0]!.data).not.toContain('peer');
    const numbers = await zoneFile('numbers');
    expect(recordsOf(numbers, nameOf(ENDING))).toEqual([]);
    expect(recordsOf(numbers, nameOf(PEERS_ONLY))).toEqual([]);
    expect(recordsOf(numbers, nameOf(BOTH))[1]).not.toContain('peer');
  });
});
