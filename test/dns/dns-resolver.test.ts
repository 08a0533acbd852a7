import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freeUdpPort, scratchDir } from '../support/call-path.ts';
import { dig, dnsToolsMissing, startUnbound, type Unbound } from '../support/dns-tools.ts';
import { eventually } from '../support/eventually.ts';
import { ago, sampleEvent } from '../support/harness.ts';
import { cli, startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { freshDatabase, type TestDatabase } from '../support/test-database.ts';

/**
 * The zones as a PBX meets them: through Debian's Unbound, the caching resolver docs/dns.md
 * puts in front (a stub zone per Tollwatch zone), with Tollwatch run as an operator runs it
 * (src/server.ts, TOLLWATCH_DNS_LISTEN). Cached answers and their TTLs, negative caching, the
 * fallback to TCP, IPv6 names, the privacy rule, a restart while Unbound holds answers, and what
 * the server logs at the default level.
 */

const missing = dnsToolsMissing('dig', 'unbound');

const NUMBERS = 'numbers.resolver.test-zones';
const ADDRESSES = 'addresses.resolver.test-zones';
const NODES = ['732e7f50-637d-4fde-81e0-5c32f1bb5a92', '0b7d6d7e-2b1a-4c55-9d7e-3f2a1b0c9d8e', 'c1a2b3c4-d5e6-4f70-8192-a3b4c5d6e7f8'];
const TTL = 30;
const NEGATIVE_TTL = 10;

const BUSY = '+46812118532';
const BUSY_NAME = `2.3.5.8.1.1.2.1.8.6.4.${NUMBERS}`;
const PRIVATE = '+33140000000';
const PRIVATE_NAME = `0.0.0.0.0.0.0.4.1.3.3.${NUMBERS}`;
const SCANNER_V6 = '2001:db8::7';
const SCANNER_V6_NAME = `7.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.${ADDRESSES}`;


describe.skipIf(missing)('DNS zones through a caching Unbound (docs/dns.md)', () => {
  let database: TestDatabase;
  let server: ServerProcess;
  let unbound: Unbound;
  let smallUnbound: Unbound;
  let dnsPort: number;
  let env: Record<string, string>;
  const dirs: Array<{ remove(): void }> = [];
  const tokens = new Map<string, string>();

  const resolve = (name: string, type: string, options: string[] = []) => dig(unbound.port, name, type, ['+recurse', ...options]);

  async function tokenFor(trusted: boolean): Promise<string> {
    const account = cli(database.url, 'accounts', 'create', '--name', trusted ? 'fleet' : 'contributor', '--plan', 'contributor', ...(trusted ? ['--trusted'] : []));
    const client = cli(database.url, 'clients', 'create', '--account', account.account_id, '--name', 'node');
    const res = await fetch(`${server.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: client.client_id, client_secret: client.client_secret, audience: `${server.url}/api`, grant_type: 'client_credentials' }),
    });
    return ((await res.json()) as { access_token: string }).access_token;
  }

  async function submit(who: 'fleet' | 'contributor', overrides: Record<string, unknown>): Promise<void> {
    const res = await fetch(`${server.url}/api/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.get(who)}`, 'content-type': 'application/json' },
      body: JSON.stringify(sampleEvent(overrides)),
    });
    expect(res.status).toBe(201);
  }

  /** Six INVITEs from six sources seen by three nodes: a score of 61, over the default threshold. */
  async function listNumber(who: 'fleet' | 'contributor', number: string): Promise<void> {
    for (let i = 0; i < 6; i += 1) await submit(who, { called_number: number, source_ip: `203.0.113.${10 + i}`, created_by_node_id: NODES[i % 3], sip_method: 'INVITE', event_timestamp: ago(5 + i) });
  }

  beforeAll(async () => {
    database = await freshDatabase();
    dnsPort = await freeUdpPort();
    env = {
      DATABASE_URL: database.url,
      TOLLWATCH_DNS_LISTEN: `127.0.0.1:${dnsPort}`,
      TOLLWATCH_DNS_NUMBER_ZONE: NUMBERS,
      TOLLWATCH_DNS_ADDRESS_ZONE: ADDRESSES,
      TOLLWATCH_DNS_TTL: String(TTL),
      TOLLWATCH_DNS_NEGATIVE_TTL: String(NEGATIVE_TTL),
      // The default level: what it logs must never hold a number asked.
      LOG_LEVEL: 'info',
    };
    server = await startServerProcess(env);
    tokens.set('fleet', await tokenFor(true));
    tokens.set('contributor', await tokenFor(false));
    await listNumber('fleet', BUSY);
    await listNumber('contributor', PRIVATE);
    for (let i = 0; i < 12; i += 1) {
      await submit('fleet', { called_number: `+44207900${String(i).padStart(4, '0')}`, source_ip: SCANNER_V6, created_by_node_id: NODES[i % 3], sip_method: 'OPTIONS', event_timestamp: ago(20 + i) });
    }
    await eventually('the fleet’s number to be listed', () => dig(dnsPort, BUSY_NAME, 'A'), (a) => a.status === 'NOERROR');
    const dir = scratchDir('unbound');
    dirs.push(dir);
    unbound = await startUnbound(dir.path, [NUMBERS, ADDRESSES], dnsPort);
    // One that offers only 512 bytes over UDP, so large answers come to it truncated.
    const small = scratchDir('unbound-512');
    dirs.push(small);
    smallUnbound = await startUnbound(small.path, [NUMBERS, ADDRESSES], dnsPort, { ednsBufferSize: 512 });
  });
  afterAll(async () => {
    await unbound?.stop();
    await smallUnbound?.stop();
    await server?.stop();
    await database?.drop();
    for (const dir of dirs) dir.remove();
  });

  it('answers a listed number through the resolver, which keeps it for the configured TTL', async () => {
    const first = await resolve(BUSY_NAME, 'A');
    expect(first.status).toBe('NOERROR');
    expect(first.answers.map((r) => r.data)).toEqual(['127.0.60.6']);
    expect(first.answers[0]!.ttl).toBeLessThanOrEqual(TTL);
    // From the cache, its TTL counts down (whole seconds); Tollwatch's own answers always say 30.
    const later = await eventually('the cached TTL to count down', () => resolve(BUSY_NAME, 'A'), (a) => (a.answers[0]?.ttl ?? TTL) < TTL - 1);
    expect(later.answers.map((r) => r.data)).toEqual(['127.0.60.6']);
    expect((await dig(dnsPort, BUSY_NAME, 'A')).answers[0]!.ttl).toBe(TTL);
    expect((await resolve(BUSY_NAME, 'TXT')).answers[0]!.data).toMatch(/^"Tollwatch score 61: called from 6 distinct source addresses; /);
    expect((await resolve(BUSY_NAME, 'NAPTR')).answers[0]!.data).toBe('100 10 "u" "E2U+x-tollwatch" "!^.*$!tel:+46812118532;tollwatch-score=61!" .');
  });

  it('finds a listed number after an unlisted prefix of it was asked (a query-name-minimising resolver)', async () => {
    expect((await resolve(`4.${NUMBERS}`, 'A')).status).toBe('NXDOMAIN');
    expect((await resolve(`6.4.${NUMBERS}`, 'A')).status).toBe('NXDOMAIN');
    expect((await resolve(`1.2.3.5.8.1.1.2.1.8.6.4.${NUMBERS}`, 'A')).status).toBe('NXDOMAIN');
    expect((await resolve(BUSY_NAME, 'TXT')).status).toBe('NOERROR');
  });

  it('answers an IPv6 source address under its nibbles', async () => {
    const answer = await resolve(SCANNER_V6_NAME, 'A');
    expect(answer.status).toBe('NOERROR');
    expect(answer.answers[0]!.data).toMatch(/^127\.0\.[5-9]0\.6$/);
  });

  it('never answers a contributor’s private number, through the resolver either', async () => {
    expect((await dig(dnsPort, PRIVATE_NAME, 'A')).status).toBe('NXDOMAIN');
    expect((await resolve(PRIVATE_NAME, 'A')).status).toBe('NXDOMAIN');
    expect((await resolve(PRIVATE_NAME, 'NAPTR')).status).toBe('NXDOMAIN');
  });

  it('keeps "not listed" for the negative TTL, then answers the number the fleet has listed since, within the stated bound', async () => {
    const number = '+4915112345678';
    const name = `8.7.6.5.4.3.2.1.1.5.1.9.4.${NUMBERS}`;
    const negative = await resolve(name, 'A');
    expect(negative.status).toBe('NXDOMAIN');
    expect(negative.authorities.map((r) => [r.type, r.ttl <= NEGATIVE_TTL])).toEqual([['SOA', true]]);
    const askedAt = Date.now();
    await listNumber('fleet', number);
    const listedAt = Date.now();
    await eventually('Tollwatch itself to list it', () => dig(dnsPort, name, 'A'), (a) => a.status === 'NOERROR', { timeoutMs: 3000 });
    // Unbound still holds "not listed" (RFC 2308) until the negative TTL has run from its question.
    if (Date.now() - askedAt < (NEGATIVE_TTL - 2) * 1000) expect((await resolve(name, 'A')).status).toBe('NXDOMAIN');
    // The bound of docs/dns.md: the lookup bound (3 s on a saturated machine) plus the negative TTL.
    const answer = await eventually('the resolver to answer it', () => resolve(name, 'A'), (a) => a.status === 'NOERROR', { timeoutMs: 3000 + NEGATIVE_TTL * 1000 - (Date.now() - listedAt), everyMs: 200 });
    expect(answer.answers[0]!.data).toMatch(/^127\.0\.60\.6$/);
  });

  it('answers a TXT too large for the resolver’s UDP size through TCP: truncated first, then in full', async () => {
    const direct = await dig(dnsPort, NUMBERS, 'TXT', ['+tcp']);
    const answer = await dig(smallUnbound.port, NUMBERS, 'TXT', ['+recurse', '+tcp']);
    expect(answer.status).toBe('NOERROR');
    expect(answer.answers.map((r) => r.data)).toEqual(direct.answers.map((r) => r.data));
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(/tollwatch_dns_answers_total\{zone="numbers",rcode="NOERROR",transport="udp",truncated="true"\} [1-9]/);
    expect(metrics).toMatch(/tollwatch_dns_answers_total\{zone="numbers",rcode="NOERROR",transport="tcp",truncated="false"\} [1-9]/);
  });

  it('logs no number asked at the default level', () => {
    const logged = server.logged.join('\n');
    expect(logged).toContain('DNS zones are served');
    for (const asked of ['46812118532', '2.3.5.8.1.1.2.1.8.6.4', '33140000000', '4915112345678', '8.7.6.5.4.3.2.1']) expect(logged).not.toContain(asked);
  });

  it('keeps answering what the resolver holds while Tollwatch restarts, and answers afresh after', async () => {
    expect((await resolve(BUSY_NAME, 'A')).status).toBe('NOERROR');
    await server.stop();
    // Held: the listed number's answer, within its TTL. Not held: a question never asked.
    const held = await resolve(BUSY_NAME, 'A');
    expect(held.status).toBe('NOERROR');
    expect(held.answers.map((r) => r.data)).toEqual(['127.0.60.6']);
    // (Unbound says SERVFAIL once it gives up on the server, or nothing within dig's 3 s.)
    expect(['SERVFAIL', 'NO ANSWER']).toContain((await resolve(`1.1.1.1.1.1.1.1.1.${NUMBERS}`, 'A', ['+time=3'])).status);
    server = await startServerProcess(env);
    const fresh = await eventually('answers after the restart', () => resolve(`2.2.2.2.2.2.2.2.2.${NUMBERS}`, 'A'), (a) => a.status === 'NXDOMAIN');
    expect(fresh.authorities.map((r) => r.type)).toEqual(['SOA']);
    expect((await dig(dnsPort, BUSY_NAME, 'A')).answers.map((r) => r.data)).toEqual(['127.0.60.6']);
  });
});
