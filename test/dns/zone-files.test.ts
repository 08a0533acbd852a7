import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DnsServer } from '../../src/dns/dns-server.ts';
import { freeUdpPort, scratchDir } from '../support/call-path.ts';
import { dig, dnsToolsMissing, serveZones, startUnbound, type Unbound } from '../support/dns-tools.ts';
import { eventually } from '../support/eventually.ts';
import { ago, postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { spawnCli } from '../support/server-process.ts';

/**
 * `tollwatch dns-zone` (docs/dns.md, "Mirrors"): each format loaded into the program it is for,
 * Debian's rbldnsd, `named-checkzone` and Unbound's RPZ, which must then answer every name as
 * Tollwatch's own server does, and never a contributor's private one.
 */

const missing = dnsToolsMissing('dig', 'rbldnsd', 'named-checkzone', 'unbound');

const NUMBERS = 'numbers.files.test-zones';
const ADDRESSES = 'addresses.files.test-zones';
const NODES = ['732e7f50-637d-4fde-81e0-5c32f1bb5a92', '0b7d6d7e-2b1a-4c55-9d7e-3f2a1b0c9d8e', 'c1a2b3c4-d5e6-4f70-8192-a3b4c5d6e7f8'];
const ENV = { TOLLWATCH_DNS_NUMBER_ZONE: NUMBERS, TOLLWATCH_DNS_ADDRESS_ZONE: ADDRESSES, TOLLWATCH_DNS_TTL: '120', TOLLWATCH_DNS_NEGATIVE_TTL: '30', TOLLWATCH_DNS_NAME_SERVER: 'ns1.files.test-zones' };

const BUSY_NAME = `2.3.5.8.1.1.2.1.8.6.4.${NUMBERS}`;
const SECOND_NAME = `6.1.0.9.7.2.2.6.6.0.9.3.${NUMBERS}`;
const SCANNED_NAME = `0.0.0.0.9.7.0.2.4.4.${NUMBERS}`;
const PRIVATE_NAME = `0.0.0.0.0.0.0.4.1.3.3.${NUMBERS}`;
const V4_NAME = `77.113.0.203.${ADDRESSES}`;
const V6_NAME = `7.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.${ADDRESSES}`;
const PRIVATE_IP_NAME = `99.100.51.198.${ADDRESSES}`;
const LISTED = [BUSY_NAME, SECOND_NAME, V4_NAME, V6_NAME];
const UNLISTED = [SCANNED_NAME, PRIVATE_NAME, PRIVATE_IP_NAME, `1.1.1.1.1.1.1.1.${NUMBERS}`, `1.0.0.127.${ADDRESSES}`];


describe.skipIf(missing)('DNS zone files loaded into rbldnsd, named-checkzone and Unbound (docs/dns.md)', () => {
  let h: Harness;
  let fleet: TestAccount;
  let contributor: TestAccount;
  let server: DnsServer;
  let dir: { path: string; remove(): void };
  const children: ChildProcess[] = [];
  const unbounds: Unbound[] = [];

  async function zoneFile(format: string, zone: string, extra: string[] = []): Promise<string> {
    const file = join(dir.path, `${zone}.${format}`);
    const run = await spawnCli({ DATABASE_URL: h.config.databaseUrl, ...ENV }, '--json', 'dns-zone', '--format', format, '--zone', zone, '--output', file, ...extra);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ format, file, listed: 2 });
    return file;
  }

  beforeAll(async () => {
    h = await startHarness(ENV);
    dir = scratchDir('zone-files');
    // rbldnsd drops root for `nobody`, who must read the files.
    chmodSync(dir.path, 0o755);
    fleet = await h.account({ trusted: true });
    contributor = await h.account();
    for (const [number, minutesAgo] of [
      ['+46812118532', 10],
      ['+390662279016', 60 * 24 * 3],
    ] as const) {
      for (let i = 0; i < 6; i += 1) {
        const event = sampleEvent({ called_number: number, source_ip: `203.0.113.${10 + i}`, created_by_node_id: NODES[i % 3], sip_method: 'INVITE', event_timestamp: ago(minutesAgo + i) });
        expect((await postEvent(fleet, event)).status).toBe(201);
      }
    }
    expect((await postEvent(fleet, sampleEvent({ called_number: '+4420790000', source_ip: '192.0.2.50', sip_method: 'OPTIONS', event_timestamp: ago(3) }))).status).toBe(201);
    for (const [source, userAgent] of [
      ['203.0.113.77', 'Asterisk PBX 18.2.0'],
      ['2001:db8::7', 'friendly-scanner'],
    ] as const) {
      for (let i = 0; i < 12; i += 1) {
        const event = sampleEvent({ called_number: `+44207900${String(i).padStart(4, '0')}`, source_ip: source, sip_user_agent: userAgent, created_by_node_id: NODES[i % 3], sip_method: 'OPTIONS', event_timestamp: ago(20 + i) });
        expect((await postEvent(fleet, event)).status).toBe(201);
      }
    }
    for (let i = 0; i < 12; i += 1) {
      expect((await postEvent(contributor, sampleEvent({ called_number: '+33140000000', source_ip: `198.51.100.${10 + (i % 6)}`, created_by_node_id: NODES[i % 3], event_timestamp: ago(5 + i) }))).status).toBe(201);
      expect((await postEvent(contributor, sampleEvent({ called_number: `+3314000${String(i).padStart(4, '0')}`, source_ip: '198.51.100.99', created_by_node_id: NODES[i % 3], event_timestamp: ago(5 + i) }))).status).toBe(201);
    }
    await h.settled();
    server = await serveZones(h.services.dnsZones);
  });
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    for (const unbound of unbounds) await unbound.stop();
    await server?.close();
    await h?.close();
    dir?.remove();
  });

  /** What Tollwatch's own server answers: the reference every file is held to. */
  const reference = async (name: string, type: string) => (await dig(server.port, name, type)).answers.map((r) => r.data);

  it('rbldnsd serves the rbldnsd data as Tollwatch answers: A codes, TXT, NXDOMAIN for the rest, RFC 5782’s test entry', async () => {
    const numbers = await zoneFile('rbldnsd', 'numbers');
    const addresses = await zoneFile('rbldnsd', 'addresses');
    expect(readFileSync(addresses, 'utf8')).toMatch(/\$DATASET ip4set:tollwatch @\n[^]*\$DATASET ip6trie:tollwatch @\n2001:db8::7\/128 :127\.0\.\d+\.6:Tollwatch score/);
    const port = await freeUdpPort();
    const child = spawn('rbldnsd', ['-n', '-u', 'nobody', '-b', `127.0.0.1/${port}`, '-w', dir.path, `${NUMBERS}:combined:${numbers}`, `${ADDRESSES}:combined:${addresses}`], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let output = '';
    child.stdout!.setEncoding('utf8').on('data', (s: string) => (output += s));
    child.stderr!.setEncoding('utf8').on('data', (s: string) => (output += s));
    await eventually('rbldnsd to answer', async () => {
      if (child.exitCode !== null) throw new Error(`rbldnsd exited: ${output}`);
      return (await dig(port, NUMBERS, 'SOA')).status;
    }, (status) => status === 'NOERROR');
    for (const name of LISTED) {
      const answer = await dig(port, name, 'A');
      expect(answer.answers.map((r) => r.data), name).toEqual(await reference(name, 'A'));
      expect(answer.answers[0]!.ttl).toBe(120);
      expect((await dig(port, name, 'TXT')).answers.map((r) => r.data), name).toEqual(await reference(name, 'TXT'));
    }
    for (const name of UNLISTED) {
      const answer = await dig(port, name, 'A');
      expect(answer.status, name).toBe('NXDOMAIN');
      expect(answer.authorities.find((r) => r.type === 'SOA')?.ttl).toBe(30);
    }
    expect((await dig(port, `2.0.0.127.${ADDRESSES}`, 'A')).answers.map((r) => r.data)).toEqual(['127.0.0.2']);
  });

  it('named-checkzone loads the BIND zone files, whose records are Tollwatch’s answers (NAPTR included)', async () => {
    for (const [zone, origin] of [
      ['numbers', NUMBERS],
      ['addresses', ADDRESSES],
    ] as const) {
      const file = await zoneFile('bind', zone);
      const check = spawnSync('named-checkzone', ['-D', '-o', '-', origin, file], { encoding: 'utf8' });
      expect(check.status, check.stderr + check.stdout).toBe(0);
      // The canonical dump: owner, TTL, class, type, data.
      const records = check.stdout.split('\n').filter((l) => l.trim() !== '' && !l.startsWith(';')).map((l) => l.split(/\s+/));
      const data = (name: string, type: string) => records.filter((r) => r[0] === `${name}.` && r[3] === type).map((r) => r.slice(4).join(' '));
      for (const name of LISTED.filter((n) => n.endsWith(origin))) {
        expect(data(name, 'A'), name).toEqual(await reference(name, 'A'));
        expect(data(name, 'TXT'), name).toEqual(await reference(name, 'TXT'));
        if (zone === 'numbers') expect(data(name, 'NAPTR'), name).toEqual(await reference(name, 'NAPTR'));
      }
      for (const name of UNLISTED) expect(data(name, 'A')).toEqual([]);
      expect(data(origin, 'SOA')[0]).toMatch(new RegExp(`^ns1\\.files\\.test-zones\\. hostmaster\\.${origin.replace(/\./g, '\\.')}\\. \\d+ 3600 600 86400 30$`));
    }
  });

  it('Unbound answers from the RPZ zone alone, with Tollwatch unreachable: listed names as Tollwatch answers them, every other NXDOMAIN', async () => {
    const rpzFiles = [];
    for (const zone of ['numbers', 'addresses']) {
      const origin = `rpz.${zone === 'numbers' ? NUMBERS : ADDRESSES}`;
      const file = await zoneFile('rpz', zone);
      const check = spawnSync('named-checkzone', [origin, file], { encoding: 'utf8' });
      expect(check.status, check.stdout).toBe(0);
      rpzFiles.push({ origin, file });
    }
    const unboundDir = scratchDir('unbound-rpz');
    const unbound = await startUnbound(unboundDir.path, [], 1, { rpz: rpzFiles });
    unbounds.push(unbound);
    try {
      await eventually('Unbound to answer from the RPZ', () => dig(unbound.port, LISTED[0]!, 'A', ['+recurse']), (a) => a.status === 'NOERROR');
      for (const name of LISTED) {
        const answer = await dig(unbound.port, name, 'A', ['+recurse']);
        expect(answer.answers.map((r) => r.data), name).toEqual(await reference(name, 'A'));
        expect((await dig(unbound.port, name, 'TXT', ['+recurse'])).answers.map((r) => r.data), name).toEqual(await reference(name, 'TXT'));
      }
      expect((await dig(unbound.port, `2.0.0.127.${ADDRESSES}`, 'A', ['+recurse'])).answers.map((r) => r.data)).toEqual(['127.0.0.2']);
      for (const name of UNLISTED) expect((await dig(unbound.port, name, 'A', ['+recurse'])).status, name).toBe('NXDOMAIN');
    } finally {
      unboundDir.remove();
    }
  });

  it('writes to standard output without --output, and refuses what it cannot write', async () => {
    const run = await spawnCli({ DATABASE_URL: h.config.databaseUrl, ...ENV }, 'dns-zone', '--format', 'bind', '--zone', 'numbers', '--min-score', '100');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain(`$ORIGIN ${NUMBERS}.`);
    expect(run.stdout).not.toContain(' IN A ');
    const bad = await spawnCli({ DATABASE_URL: h.config.databaseUrl, ...ENV }, 'dns-zone', '--format', 'tinydns');
    expect(bad.status).toBe(2);
  });
});
