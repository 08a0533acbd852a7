import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderDnsGuardConfig } from '../../src/cli/kamailio-dns-guard-config.ts';
import type { DnsServer } from '../../src/dns/dns-server.ts';
import { callPathMissing, freeUdpPort, placeCalls, scratchDir, startKamailio, startPbx, type Decision } from '../support/call-path.ts';
import { dig, dnsToolsMissing, serveZones, startUnbound, type Unbound } from '../support/dns-tools.ts';
import { eventually } from '../support/eventually.ts';
import { postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { completedCallScenario, refusedCallScenario } from '../support/sipp-scenarios.ts';

/**
 * The Kamailio guard in DNS mode (integrations/kamailio/tollwatch-guard-dns.cfg, docs/dns.md)
 * with the real programs: Tollwatch's DNS server in this process, Debian's Unbound as the
 * machine's resolver with the stub zones, Kamailio reading it from a resolv.conf of its own
 * (a private mount namespace: root, as in CI), SIPp as the PBX and the callers.
 */

const missing = callPathMissing() ?? dnsToolsMissing('dig', 'unbound') ?? (process.getuid?.() === 0 ? undefined : 'not root: Kamailio needs a mount namespace for its own resolv.conf');
if (missing && process.env.TOLLWATCH_REQUIRE_CALL_PATH === '1') {
  it('has Kamailio, SIPp, dig, Unbound and root to test the DNS guard with', () => expect(missing).toBeUndefined());
}

const NUMBERS = 'numbers.guard.test-zones';
const ADDRESSES = 'addresses.guard.test-zones';
const LISTED = '+46812118532';
const UNLISTED = '+15550100999';
// A loopback address SIPp can call from, made a listed source by the fleet's events.
const LISTED_SOURCE = '127.0.0.9';
const NODES = ['732e7f50-637d-4fde-81e0-5c32f1bb5a92', '0b7d6d7e-2b1a-4c55-9d7e-3f2a1b0c9d8e', 'c1a2b3c4-d5e6-4f70-8192-a3b4c5d6e7f8'];

function tally(decisions: Decision[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const d of new Map(decisions.map((d) => [`${d.callId} ${d.decision}`, d])).values()) counts[d.decision] = (counts[d.decision] ?? 0) + 1;
  return counts;
}

describe.skipIf(missing !== undefined)('the Kamailio call guard in DNS mode', () => {
  let h: Harness;
  let fleet: TestAccount;
  let server: DnsServer;
  let unbound: Unbound;
  let resolvConf: string;
  const dir = scratchDir('dns-guard');

  beforeAll(async () => {
    h = await startHarness({ TOLLWATCH_DNS_NUMBER_ZONE: NUMBERS, TOLLWATCH_DNS_ADDRESS_ZONE: ADDRESSES });
    fleet = await h.account({ trusted: true });
    for (let i = 0; i < 6; i += 1) {
      const event = sampleEvent({ called_number: LISTED, source_ip: `198.51.100.${10 + i}`, created_by_node_id: NODES[i % 3], sip_method: 'INVITE' });
      expect((await postEvent(fleet, event)).status).toBe(201);
    }
    for (let i = 0; i < 12; i += 1) {
      const event = sampleEvent({ called_number: `+44207900${String(i).padStart(4, '0')}`, source_ip: LISTED_SOURCE, created_by_node_id: NODES[i % 3], sip_method: 'OPTIONS' });
      expect((await postEvent(fleet, event)).status).toBe(201);
    }
    await h.settled();
    server = await serveZones(h.services.dnsZones);
    // The machine's resolver as Kamailio sees it: port 53 (resolv.conf has no port), on a
    // loopback address of this run's own so that runs side by side do not collide.
    const address = `127.${53 + (process.pid % 100)}.${Math.floor(Math.random() * 250) + 1}.${Math.floor(Math.random() * 250) + 1}`;
    unbound = await startUnbound(dir.path, [NUMBERS, ADDRESSES], server.port, { address, port: 53 });
    resolvConf = join(dir.path, 'resolv.conf');
    writeFileSync(resolvConf, `nameserver ${address}\noptions attempts:1 timeout:1\n`);
    expect((await dig(53, `2.3.5.8.1.1.2.1.8.6.4.${NUMBERS}`, 'NAPTR', ['+recurse'], address)).answers).toHaveLength(1);
  });
  afterAll(async () => {
    await unbound?.stop();
    await server?.close();
    await h?.close();
    dir?.remove();
  });

  async function callPath(checkSource = false) {
    const pbx = await startPbx(dir.path, await freeUdpPort());
    const guard = renderDnsGuardConfig({ numberZone: NUMBERS, addressZone: ADDRESSES, threshold: 50, refuseCode: 403, checkSource });
    const kamailio = await startKamailio(dir.path, { port: await freeUdpPort(), pbxPort: pbx.port, guard, resolvConf, tokenless: true });
    return { pbx, kamailio };
  }
  const reason = 'SIP;cause=403;text="Tollwatch: score [0-9]+, ';

  it('refuses every call to a listed number with 403 and its score, and lets every other call reach the PBX', async () => {
    const { pbx, kamailio } = await callPath();
    try {
      const refused = await placeCalls(dir.path, { scenario: refusedCallScenario(403, reason), number: '0046812118532', calls: 20, rate: 20, proxyPort: kamailio.port });
      const passed = await placeCalls(dir.path, { scenario: completedCallScenario(), number: UNLISTED, calls: 20, rate: 20, proxyPort: kamailio.port });
      expect(refused).toMatchObject({ successful: 20, failed: 0 });
      expect(passed).toMatchObject({ successful: 20, failed: 0 });
      expect(await pbx.stop()).toEqual({ successful: 20, failed: 0 });
      const decisions = kamailio.decisions();
      expect(tally(decisions)).toEqual({ refused: 20, passed: 20 });
      // The score the NAPTR carries, as Tollwatch answers it.
      const naptr = (await dig(server.port, `2.3.5.8.1.1.2.1.8.6.4.${NUMBERS}`, 'NAPTR')).answers[0]!.data;
      const score = Number(/tollwatch-score=(\d+)/.exec(naptr)![1]);
      expect(score).toBeGreaterThanOrEqual(50);
      expect(decisions.filter((d) => d.decision === 'refused').map((d) => [d.score, d.via, d.number])).toEqual(Array(20).fill([score, 'dns', '0046812118532']));
      expect(decisions.filter((d) => d.decision === 'passed').every((d) => d.score === -1)).toBe(true);
    } finally {
      await kamailio.stop();
    }
  });

  it('refuses calls from a listed source address by its band when the source is checked, and lets the others through', async () => {
    const { pbx, kamailio } = await callPath(true);
    try {
      const fromListed = await placeCalls(dir.path, { scenario: refusedCallScenario(403, reason), number: UNLISTED, calls: 5, rate: 10, proxyPort: kamailio.port, address: LISTED_SOURCE });
      const fromOther = await placeCalls(dir.path, { scenario: completedCallScenario(), number: UNLISTED, calls: 5, rate: 10, proxyPort: kamailio.port });
      expect(fromListed).toMatchObject({ successful: 5, failed: 0 });
      expect(fromOther).toMatchObject({ successful: 5, failed: 0 });
      expect(await pbx.stop()).toEqual({ successful: 5, failed: 0 });
      const decisions = kamailio.decisions();
      expect(tally(decisions)).toEqual({ refused: 5, passed: 5 });
      // The address zone's A code carries the band, 50 for this source's score of 54.
      expect(decisions.filter((d) => d.decision === 'refused').map((d) => d.score)).toEqual([50, 50, 50, 50, 50]);
    } finally {
      await kamailio.stop();
    }
  });

  it('fails open when Tollwatch is gone: calls it cannot ask about go through, and the resolver’s held answers still refuse', async () => {
    const { pbx, kamailio } = await callPath();
    try {
      expect(await placeCalls(dir.path, { scenario: refusedCallScenario(403, reason), number: LISTED, calls: 3, rate: 10, proxyPort: kamailio.port })).toMatchObject({ successful: 3, failed: 0 });
      await server.close();
      const fresh = ['+15550100001', '+15550100002', '+15550100003'];
      const passed = await placeCalls(dir.path, { scenario: completedCallScenario(), number: fresh[0]!, numbers: fresh, calls: 3, rate: 1, proxyPort: kamailio.port });
      expect(passed).toMatchObject({ successful: 3, failed: 0 });
      // Still held by Unbound (and Kamailio's cache) for the TTL: refused without Tollwatch.
      expect(await placeCalls(dir.path, { scenario: refusedCallScenario(403, reason), number: LISTED, calls: 3, rate: 10, proxyPort: kamailio.port })).toMatchObject({ successful: 3, failed: 0 });
      expect(await pbx.stop()).toEqual({ successful: 3, failed: 0 });
      expect(tally(kamailio.decisions())).toEqual({ refused: 6, passed: 3 });
    } finally {
      await kamailio.stop();
      server = await serveZones(h.services.dnsZones);
      await eventually('the server back', () => dig(server.port, NUMBERS, 'SOA'), (a) => a.status === 'NOERROR');
    }
  });
});
