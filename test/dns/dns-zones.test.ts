import { createSocket } from 'node:dgram';
import { connect } from 'node:net';
import * as dnsPacket from 'dns-packet';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DnsServer } from '../../src/dns/dns-server.ts';
import { NO_METRICS, type Metrics } from '../../src/metrics/metrics.ts';
import { PrometheusMetrics } from '../../src/metrics/prometheus-metrics.ts';
import { dig, dnsToolsMissing, serveZones } from '../support/dns-tools.ts';
import { eventually } from '../support/eventually.ts';
import { ago, postEvent, sampleEvent, startHarness, type Harness, type TestAccount } from '../support/harness.ts';
import { seededRandom } from '../support/seeded-random.ts';

/**
 * The DNS zones (docs/dns.md) asked with the real `dig`, against the server as src/server.ts
 * starts it, over a real store: what listed and unlisted names answer, the zone's apex, the
 * privacy rule (the shared data set only), the protocol's edges, the allow-list, the rate limit
 * and a fuzz of malformed packets.
 */

const missing = dnsToolsMissing('dig');

const NUMBERS = 'numbers.tollwatch.test-zones';
const ADDRESSES = 'addresses.tollwatch.test-zones';
const NODES = ['732e7f50-637d-4fde-81e0-5c32f1bb5a92', '0b7d6d7e-2b1a-4c55-9d7e-3f2a1b0c9d8e', 'c1a2b3c4-d5e6-4f70-8192-a3b4c5d6e7f8'];

// The fleet's busy number (score 58, as in docs/scoring.md's neighbour test), its number last
// seen ten days ago, its one-scan number (under the threshold), a contributor's private number.
const BUSY = '+46812118532';
const BUSY_NAME = `2.3.5.8.1.1.2.1.8.6.4.${NUMBERS}`;
const OLDER = '+390662279016';
const OLDER_NAME = `6.1.0.9.7.2.2.6.6.0.9.3.${NUMBERS}`;
const SCANNED = '+4420790000';
const PRIVATE = '+33140000000';
const PRIVATE_NAME = `0.0.0.0.0.0.0.4.1.3.3.${NUMBERS}`;
const SCANNER_V4 = '203.0.113.77';
const SCANNER_V6 = '2001:db8::7';
const SCANNER_V6_NAME = `7.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.${ADDRESSES}`;
const PRIVATE_IP = '198.51.100.99';


describe.skipIf(missing)('DNS zones asked with dig (docs/dns.md)', () => {
  let h: Harness;
  let fleet: TestAccount;
  let contributor: TestAccount;
  let server: DnsServer;
  const warnings: string[] = [];

  const ask = (name: string, type: string, options: string[] = []) => dig(server.port, name, type, options);
  const scoreOf = async (who: TestAccount, path: string) => ((await (await who.api(path)).json()) as { score: number }).score;

  beforeAll(async () => {
    h = await startHarness({ TOLLWATCH_DNS_NUMBER_ZONE: NUMBERS, TOLLWATCH_DNS_ADDRESS_ZONE: ADDRESSES, TOLLWATCH_DNS_TTL: '45', TOLLWATCH_DNS_NEGATIVE_TTL: '15', TOLLWATCH_DNS_NAME_SERVER: 'ns1.tollwatch.test-zones' });
    fleet = await h.account({ trusted: true });
    contributor = await h.account();
    const sources = ['203.0.113.7', '203.0.113.8', '203.0.113.9', '2001:db8::70'];
    for (let i = 0; i < 6; i += 1) {
      const event = sampleEvent({ called_number: i % 2 ? '0046812118532' : BUSY, source_ip: sources[i % 4], created_by_node_id: NODES[i % 3], sip_method: 'INVITE', event_timestamp: ago(10 + i) });
      expect((await postEvent(fleet, event)).status).toBe(201);
    }
    for (let i = 0; i < 12; i += 1) {
      const event = sampleEvent({ called_number: OLDER, source_ip: `192.0.2.${10 + (i % 6)}`, created_by_node_id: NODES[i % 3], sip_method: 'INVITE', event_timestamp: ago(10 * 1440 + i) });
      expect((await postEvent(fleet, event)).status).toBe(201);
    }
    expect((await postEvent(fleet, sampleEvent({ called_number: SCANNED, source_ip: '192.0.2.50', sip_method: 'OPTIONS', event_timestamp: ago(3) }))).status).toBe(201);
    for (const [source, userAgent] of [
      [SCANNER_V4, 'Asterisk PBX 18.2.0'],
      [SCANNER_V6, 'friendly-scanner'],
    ] as const) {
      for (let i = 0; i < 12; i += 1) {
        const event = sampleEvent({ called_number: `+44207900${String(i).padStart(4, '0')}`, source_ip: source, sip_user_agent: userAgent, created_by_node_id: NODES[i % 3], sip_method: 'OPTIONS', event_timestamp: ago(20 + i) });
        expect((await postEvent(fleet, event)).status).toBe(201);
      }
    }
    // The contributor's own events score high for the contributor, and must never reach DNS.
    for (let i = 0; i < 12; i += 1) {
      const event = sampleEvent({ called_number: PRIVATE, source_ip: `198.51.100.${10 + (i % 6)}`, created_by_node_id: NODES[i % 3], sip_method: 'INVITE', event_timestamp: ago(5 + i) });
      expect((await postEvent(contributor, event)).status).toBe(201);
      const probe = sampleEvent({ called_number: `+3314000${String(i).padStart(4, '0')}`, source_ip: PRIVATE_IP, created_by_node_id: NODES[i % 3], event_timestamp: ago(5 + i) });
      expect((await postEvent(contributor, probe)).status).toBe(201);
    }
    await h.settled();
    const log = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
    server = await serveZones(h.services.dnsZones, { log });
  });
  afterAll(async () => {
    await server?.close();
    await h?.close();
  });

  describe('a listed number (ENUM layout)', () => {
    it('answers A 127.0.B.C: B the score band, C listed + INVITE seen + seen within a day, with the configured TTL and AA', async () => {
      expect(await scoreOf(fleet, `/api/phone-numbers/${encodeURIComponent(BUSY)}`)).toBe(58);
      const answer = await ask(BUSY_NAME, 'A');
      expect(answer.status).toBe('NOERROR');
      expect(answer.flags).toContain('aa');
      expect(answer.answers).toEqual([{ name: `${BUSY_NAME}.`, ttl: 45, type: 'A', data: '127.0.50.6' }]);
    });

    it('answers TXT with the score and its top reasons, and NAPTR for ENUM functions', async () => {
      const txt = await ask(BUSY_NAME, 'TXT');
      expect(txt.answers).toHaveLength(1);
      expect(txt.answers[0]!.data).toBe('"Tollwatch score 58: called from 4 distinct source addresses; seen by 3 honeypot nodes; 6 INVITE attempts, not only OPTIONS scans; seen 6 times; last seen today"');
      const naptr = await ask(BUSY_NAME, 'NAPTR');
      expect(naptr.answers).toEqual([{ name: `${BUSY_NAME}.`, ttl: 45, type: 'NAPTR', data: '100 10 "u" "E2U+x-tollwatch" "!^.*$!tel:+46812118532;tollwatch-score=58!" .' }]);
    });

    it('puts the freshness band in the code: last seen ten days ago is band 2 (C = 2 + 4 + 16)', async () => {
      const score = await scoreOf(fleet, `/api/phone-numbers/${encodeURIComponent(OLDER)}`);
      expect(score).toBeGreaterThanOrEqual(50);
      expect((await ask(OLDER_NAME, 'A')).answers.map((r) => r.data)).toEqual([`127.0.${Math.floor(score / 10) * 10}.22`]);
    });

    it('has no data of other types: NOERROR, no answer, the SOA (RFC 2308 NODATA)', async () => {
      const aaaa = await ask(BUSY_NAME, 'AAAA');
      expect(aaaa.status).toBe('NOERROR');
      expect(aaaa.answers).toEqual([]);
      expect(aaaa.authorities.map((r) => r.type)).toEqual(['SOA']);
    });
  });

  describe('names not listed', () => {
    it('a number never seen is NXDOMAIN with the zone’s SOA, whose TTL and minimum are the negative TTL', async () => {
      const answer = await ask(`9.9.9.9.9.9.9.9.1.${NUMBERS}`, 'A');
      expect(answer.status).toBe('NXDOMAIN');
      expect(answer.flags).toContain('aa');
      expect(answer.answers).toEqual([]);
      const [soa] = answer.authorities;
      expect(soa).toMatchObject({ name: `${NUMBERS}.`, ttl: 15, type: 'SOA' });
      expect(soa!.data.split(' ')).toEqual(['ns1.tollwatch.test-zones.', `hostmaster.${NUMBERS}.`, expect.stringMatching(/^\d+$/), '3600', '600', '86400', '15']);
    });

    it('a number seen, but scoring under the threshold, is NXDOMAIN', async () => {
      expect(await scoreOf(fleet, `/api/phone-numbers/${encodeURIComponent(SCANNED)}`)).toBeLessThan(50);
      expect((await ask(`0.0.0.0.9.7.0.2.4.4.${NUMBERS}`, 'A')).status).toBe('NXDOMAIN');
    });

    it('a contributor’s private events never answer, however high they score for the contributor', async () => {
      expect(await scoreOf(contributor, `/api/phone-numbers/${encodeURIComponent(PRIVATE)}`)).toBeGreaterThanOrEqual(50);
      expect(await scoreOf(contributor, `/api/ip-addresses/${PRIVATE_IP}`)).toBeGreaterThanOrEqual(50);
      for (const type of ['A', 'TXT', 'NAPTR', 'ANY']) expect((await ask(PRIVATE_NAME, type)).status).toBe('NXDOMAIN');
      expect((await ask(`99.100.51.198.${ADDRESSES}`, 'A')).status).toBe('NXDOMAIN');
    });

    it('labels that are no key are NXDOMAIN; fewer labels than an address has are an empty non-terminal (NOERROR, no data)', async () => {
      expect((await ask(`x.${NUMBERS}`, 'A')).status).toBe('NXDOMAIN');
      expect((await ask(`12.${NUMBERS}`, 'A')).status).toBe('NXDOMAIN');
      expect((await ask(`256.1.168.192.${ADDRESSES}`, 'A')).status).toBe('NXDOMAIN');
      const partial = await ask(`113.0.203.${ADDRESSES}`, 'A');
      expect(partial.status).toBe('NOERROR');
      expect(partial.answers).toEqual([]);
      expect(partial.authorities.map((r) => r.type)).toEqual(['SOA']);
    });
  });

  describe('addresses (RFC 5782 layout)', () => {
    it('a listed IPv4 address answers under its reversed octets; no scanning tool named, so C = 2', async () => {
      const score = await scoreOf(fleet, `/api/ip-addresses/${SCANNER_V4}`);
      expect(score).toBeGreaterThanOrEqual(50);
      const answer = await ask(`77.113.0.203.${ADDRESSES}`, 'A');
      expect(answer.answers.map((r) => r.data)).toEqual([`127.0.${Math.floor(score / 10) * 10}.2`]);
      expect((await ask(`77.113.0.203.${ADDRESSES}`, 'TXT')).answers[0]!.data).toMatch(new RegExp(`^"Tollwatch score ${score}: dialled 12 distinct numbers; seen by 3 honeypot nodes; sent 12 probes; last seen today"$`));
    });

    it('a listed IPv6 address answers under its 32 reversed nibbles; its User-Agent names a scanner, so C = 2 + 4', async () => {
      const score = await scoreOf(fleet, `/api/ip-addresses/${encodeURIComponent(SCANNER_V6)}`);
      expect(score).toBeGreaterThanOrEqual(50);
      const answer = await ask(SCANNER_V6_NAME, 'A');
      expect(answer.answers).toEqual([{ name: `${SCANNER_V6_NAME}.`, ttl: 45, type: 'A', data: `127.0.${Math.floor(score / 10) * 10}.6` }]);
      // Upper-case nibbles are the same name (DNS names compare without case).
      expect((await ask(SCANNER_V6_NAME.replace('8.b.d', '8.B.D'), 'A')).answers.map((r) => r.data)).toEqual([`127.0.${Math.floor(score / 10) * 10}.6`]);
    });

    it('holds RFC 5782’s test entries: 127.0.0.2 (and its IPv4-mapped IPv6 name) listed, 127.0.0.1 never', async () => {
      expect((await ask(`2.0.0.127.${ADDRESSES}`, 'A')).answers.map((r) => r.data)).toEqual(['127.0.0.2']);
      const mapped = `2.0.0.0.0.0.f.7.f.f.f.f.${'0.'.repeat(20)}${ADDRESSES}`;
      expect((await ask(mapped, 'A')).answers.map((r) => r.data)).toEqual(['127.0.0.2']);
      expect((await ask(`1.0.0.127.${ADDRESSES}`, 'A')).status).toBe('NXDOMAIN');
    });
  });

  describe('the apex and the protocol', () => {
    it('answers SOA and NS at each apex, with AA and EDNS(0)', async () => {
      for (const zone of [NUMBERS, ADDRESSES]) {
        const soa = await ask(zone, 'SOA');
        expect(soa.status).toBe('NOERROR');
        expect(soa.flags).toContain('aa');
        expect(soa.text).toContain('; EDNS: version: 0, flags:; udp: 1232');
        expect(soa.answers.map((r) => r.type)).toEqual(['SOA']);
        expect((await ask(zone, 'NS')).answers).toEqual([{ name: `${zone}.`, ttl: 45, type: 'NS', data: 'ns1.tollwatch.test-zones.' }]);
      }
    });

    it('refuses names outside both zones, without AA', async () => {
      for (const name of ['example.com', 'tollwatch.test-zones', `${NUMBERS}.evil.example`]) {
        const answer = await ask(name, 'A');
        expect(answer.status).toBe('REFUSED');
        expect(answer.flags).not.toContain('aa');
      }
    });

    it('refuses zone transfers and other classes; answers an unknown EDNS version BADVERS', async () => {
      expect((await ask(NUMBERS, 'AXFR', ['+tcp'])).text).toMatch(/Transfer failed|REFUSED/);
      expect((await ask('version.bind', 'TXT', ['-c', 'CH'])).status).toBe('REFUSED');
      expect((await ask(BUSY_NAME, 'A', ['+edns=1', '+noednsnegotiation'])).status).toBe('BADVERS');
    });

    it('truncates a large TXT over UDP without EDNS, and answers the same over TCP', async () => {
      const udp = await ask(NUMBERS, 'TXT', ['+noedns', '+ignore']);
      expect(udp.flags).toContain('tc');
      expect(udp.answers).toEqual([]);
      const tcp = await ask(NUMBERS, 'TXT', ['+noedns', '+tcp']);
      expect(tcp.flags).not.toContain('tc');
      expect(tcp.answers).toHaveLength(1);
      expect(tcp.text).toMatch(/MSG SIZE {2}rcvd: (\d+)/);
      expect(Number(/MSG SIZE {2}rcvd: (\d+)/.exec(tcp.text)![1])).toBeGreaterThan(512);
      // dig itself retries the truncated answer over TCP, as a resolver does.
      const retried = await ask(NUMBERS, 'TXT', ['+noedns']);
      expect(retried.transport).toBe('TCP');
      expect(retried.answers).toEqual(tcp.answers);
      // With EDNS's 1232 bytes the same answer fits over UDP.
      const edns = await ask(NUMBERS, 'TXT');
      expect(edns.transport).toBe('UDP');
      expect(edns.answers).toEqual(tcp.answers);
    });

    it('answers listed names over TCP as over UDP', async () => {
      expect((await ask(BUSY_NAME, 'A', ['+tcp'])).answers).toEqual((await ask(BUSY_NAME, 'A')).answers);
    });
  });

  it('an event from the trusted fleet becomes an answer within the lookup bound (docs/dns.md, "Freshness")', async () => {
    const fresh = '+4915112345678';
    const name = `8.7.6.5.4.3.2.1.1.5.1.9.4.${NUMBERS}`;
    expect((await ask(name, 'A')).status).toBe('NXDOMAIN');
    for (let i = 0; i < 6; i += 1) {
      const event = sampleEvent({ called_number: fresh, source_ip: `203.0.113.${20 + i}`, created_by_node_id: NODES[i % 3], sip_method: 'INVITE', event_timestamp: ago(1) });
      expect((await postEvent(fleet, event)).status).toBe(201);
    }
    // The bound is the lookups' (1 s, docs/api.md §7), which a saturated two-core machine keeps
    // at 1–2 s: held at 3 s from the last 201, as test/faults/freshness-under-load.test.ts does.
    const answer = await eventually('the new number to be listed', () => ask(name, 'A'), (a) => a.status === 'NOERROR', { timeoutMs: 3000, everyMs: 50 });
    expect(answer.answers[0]!.data).toMatch(/^127\.0\.\d+\.6$/);
  });

  it('answers the same from a second instance on the same store, including what the first has just listed', async () => {
    const other = await startHarness({ DATABASE_URL: h.config.databaseUrl, TOLLWATCH_DNS_NUMBER_ZONE: NUMBERS, TOLLWATCH_DNS_ADDRESS_ZONE: ADDRESSES, TOLLWATCH_DNS_TTL: '45', TOLLWATCH_DNS_NEGATIVE_TTL: '15', TOLLWATCH_DNS_NAME_SERVER: 'ns1.tollwatch.test-zones' });
    const second = await serveZones(other.services.dnsZones);
    try {
      for (const [name, type] of [[BUSY_NAME, 'A'], [BUSY_NAME, 'TXT'], [BUSY_NAME, 'NAPTR'], [SCANNER_V6_NAME, 'A'], [PRIVATE_NAME, 'A'], [`77.113.0.203.${ADDRESSES}`, 'TXT']] as const) {
        const [mine, theirs] = await Promise.all([ask(name, type), dig(second.port, name, type)]);
        expect([theirs.status, theirs.answers], `${name} ${type}`).toEqual([mine.status, mine.answers]);
      }
      // Listed through the first instance's intake, answered by the second within the lookup bound.
      const name = `1.0.0.0.0.0.0.5.5.5.1.${NUMBERS}`;
      expect((await dig(second.port, name, 'A')).status).toBe('NXDOMAIN');
      for (let i = 0; i < 6; i += 1) {
        const event = sampleEvent({ called_number: '+15550000001', source_ip: `203.0.113.${40 + i}`, created_by_node_id: NODES[i % 3], sip_method: 'INVITE', event_timestamp: ago(1) });
        expect((await postEvent(fleet, event)).status).toBe(201);
      }
      await eventually('the second instance to list it', () => dig(second.port, name, 'A'), (a) => a.status === 'NOERROR', { timeoutMs: 3000, everyMs: 50 });
    } finally {
      await second.close();
      await other.close();
    }
  });

  it('refuses clients outside the allow-list, and answers those inside it', async () => {
    const guarded = await serveZones(h.services.dnsZones, { allow: ['127.0.0.2/32'] });
    try {
      const outside = await dig(guarded.port, BUSY_NAME, 'A', ['-b', '127.0.0.1']);
      expect(outside.status).toBe('REFUSED');
      expect(outside.answers).toEqual([]);
      expect((await dig(guarded.port, BUSY_NAME, 'A', ['-b', '127.0.0.1', '+tcp'])).status).toBe('REFUSED');
      expect((await dig(guarded.port, NUMBERS, 'SOA', ['-b', '127.0.0.1'])).status).toBe('REFUSED');
      const inside = await dig(guarded.port, BUSY_NAME, 'A', ['-b', '127.0.0.2']);
      expect(inside.answers.map((r) => r.data)).toEqual(['127.0.50.6']);
    } finally {
      await guarded.close();
    }
  });

  it('limits answers per client network over UDP: past the rate, half are sent truncated and empty, half dropped; others still answered', async () => {
    const counted = { answered: 0, drop: 0, truncate: 0 };
    const metrics: Metrics = { ...NO_METRICS, dnsAnswered: () => void (counted.answered += 1), dnsLimited: (verdict) => void (counted[verdict] += 1) };
    const limited = await serveZones(h.services.dnsZones, { answersPerSecond: 10, metrics });
    const socket = createSocket('udp4');
    const received: dnsPacket.DecodedPacket[] = [];
    socket.on('message', (message) => received.push(dnsPacket.decode(message)));
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    try {
      const sent = 200;
      for (let id = 1; id <= sent; id += 1) {
        socket.send(dnsPacket.encode({ type: 'query', id, flags: 0, questions: [{ type: 'A', name: BUSY_NAME }] }), limited.port, '127.0.0.1');
      }
      // Every question has met its fate once the counts add up to what was sent.
      await eventually('every question counted', () => ({ ...counted }), (c) => c.answered + c.drop + c.truncate === sent);
      await eventually('every answer sent to arrive', () => received.length, (n) => n === counted.answered + counted.truncate);
      const full = received.filter((r) => !r.flag_tc);
      const truncated = received.filter((r) => r.flag_tc);
      // A burst may straddle one turn of the second: two windows' worth at most.
      expect(full.length).toBeGreaterThanOrEqual(10);
      expect(full.length).toBeLessThanOrEqual(20);
      expect(truncated.every((r) => (r.answers ?? []).length === 0)).toBe(true);
      expect(Math.abs(counted.truncate - counted.drop)).toBeLessThanOrEqual(2);
      expect(counted.drop).toBeGreaterThan(sent / 3);
      // Another client network is counted apart, and answered.
      expect((await dig(limited.port, BUSY_NAME, 'A', ['-b', '127.0.0.2'])).answers.map((r) => r.data)).toEqual(['127.0.50.6']);
    } finally {
      socket.close();
      await limited.close();
    }
  });

  it('counts answers by zone and rcode in /metrics, never the names asked', async () => {
    const metrics = new PrometheusMetrics();
    const counted = await serveZones(h.services.dnsZones, { metrics });
    try {
      await dig(counted.port, BUSY_NAME, 'A');
      await dig(counted.port, PRIVATE_NAME, 'A');
      await dig(counted.port, `77.113.0.203.${ADDRESSES}`, 'A', ['+tcp']);
      await dig(counted.port, 'example.com', 'A');
      const text = await metrics.exposition.text();
      expect(text).toContain('tollwatch_dns_answers_total{zone="numbers",rcode="NOERROR",transport="udp",truncated="false"} 1');
      expect(text).toContain('tollwatch_dns_answers_total{zone="numbers",rcode="NXDOMAIN",transport="udp",truncated="false"} 1');
      expect(text).toContain('tollwatch_dns_answers_total{zone="addresses",rcode="NOERROR",transport="tcp",truncated="false"} 1');
      expect(text).toContain('tollwatch_dns_answers_total{zone="none",rcode="REFUSED",transport="udp",truncated="false"} 1');
      for (const asked of ['46812118532', '2.3.5.8', '33140000000', '203.0.113.77', '77.113.0.203', 'example.com']) expect(text).not.toContain(asked);
    } finally {
      await counted.close();
    }
  });

  it('survives a fuzz of malformed packets over UDP and TCP, and answers after it', async () => {
    const random = seededRandom(50);
    const valid = dnsPacket.encode({ type: 'query', id: 7, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type: 'TXT', name: BUSY_NAME }], additionals: [{ type: 'OPT', name: '.', udpPayloadSize: 4096, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] }] });
    const packets: Buffer[] = [];
    for (let i = 0; i < 3000; i += 1) {
      const kind = random(4);
      if (kind === 0) packets.push(Buffer.from(Array.from({ length: random(600) }, () => random(256))));
      else if (kind === 1) packets.push(valid.subarray(0, random(valid.length)));
      else {
        const mutated = Buffer.from(valid);
        for (let j = 0; j <= random(6); j += 1) mutated[random(mutated.length)] = random(256);
        if (kind === 3) mutated.writeUInt16BE(random(65536), 4 + 2 * random(4));
        packets.push(mutated);
      }
    }
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    for (const packet of packets) socket.send(packet, server.port, '127.0.0.1');
    // The same garbage over TCP, a framed message at a time, on connections the server may close.
    for (let c = 0; c < 20; c += 1) {
      await new Promise<void>((resolve) => {
        const tcp = connect(server.port, '127.0.0.1', () => {
          for (const packet of packets.slice(c * 50, c * 50 + 50)) {
            const length = Buffer.alloc(2);
            length.writeUInt16BE(packet.length);
            tcp.write(Buffer.concat([length, packet]));
          }
          tcp.end();
        });
        tcp.on('error', () => resolve());
        tcp.on('close', () => resolve());
        tcp.resume();
      });
    }
    socket.close();
    const after = await eventually('an answer after the fuzz', () => ask(BUSY_NAME, 'A'), (a) => a.status === 'NOERROR');
    expect(after.answers.map((r) => r.data)).toEqual(['127.0.50.6']);
    expect((await ask(BUSY_NAME, 'A', ['+tcp'])).answers.map((r) => r.data)).toEqual(['127.0.50.6']);
    expect(warnings).toEqual([]);
  });

  it('answers a question count other than one FORMERR, another opcode NOTIMP, and no response at all', async () => {
    const socket = createSocket('udp4');
    const received = new Map<number, dnsPacket.DecodedPacket>();
    socket.on('message', (message) => {
      const packet = dnsPacket.decode(message);
      received.set(packet.id ?? -1, packet);
    });
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    try {
      const send = (packet: dnsPacket.Packet) => socket.send(dnsPacket.encode(packet), server.port, '127.0.0.1');
      send({ type: 'query', id: 1, questions: [{ type: 'A', name: BUSY_NAME }, { type: 'A', name: BUSY_NAME }] });
      send({ type: 'query', id: 2, questions: [] });
      // Opcode 2 (STATUS) in the flags' bits 11–14.
      send({ type: 'query', id: 3, flags: 2 << 11, questions: [{ type: 'A', name: BUSY_NAME }] });
      // A response is never answered: two servers could otherwise answer each other forever.
      send({ type: 'response', id: 4, questions: [{ type: 'A', name: BUSY_NAME }] });
      send({ type: 'query', id: 5, questions: [{ type: 'A', name: BUSY_NAME }] });
      await eventually('the answers', () => received.size, (n) => n >= 4);
      expect(received.get(1)).toMatchObject({ rcode: 'FORMERR' });
      expect(received.get(2)).toMatchObject({ rcode: 'FORMERR' });
      expect(received.get(3)).toMatchObject({ rcode: 'NOTIMP' });
      expect(received.get(5)).toMatchObject({ rcode: 'NOERROR', flag_aa: true });
      // The response (id 4) was sent before the last question, whose answer has come: none came for it.
      expect(received.has(4)).toBe(false);
    } finally {
      socket.close();
    }
  });
});
