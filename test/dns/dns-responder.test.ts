import * as dnsPacket from 'dns-packet';
import { describe, expect, it } from 'vitest';
import { respond } from '../../src/dns/dns-responder.ts';
import { DnsZones } from '../../src/domain/dns/dns-zones.ts';
import type { LookupsRepository } from '../../src/domain/lookups/lookup-aggregates.ts';

/**
 * What the DNS responder answers when the store cannot be read (docs/dns.md, "The protocol"):
 * SERVFAIL, which resolvers do not keep, never NXDOMAIN, which they would. The server's other
 * answers are held with dig in dns-zones.test.ts.
 */

const unreachable: LookupsRepository = {
  phoneNumber: () => Promise.reject(new Error('connection refused')),
  ipAddress: () => Promise.reject(new Error('connection refused')),
  numbersByHashPrefix: () => Promise.reject(new Error('connection refused')),
  numberRange: () => Promise.reject(new Error('connection refused')),
};

const zones = new DnsZones(
  { origins: { numbers: 'numbers.example', addresses: 'addresses.example' }, minScore: 50, ttlSeconds: 60, negativeTtlSeconds: 60, nameServer: 'ns.example' },
  { repo: unreachable },
);

const query = (name: string, type: 'A' | 'SOA') => dnsPacket.decode(dnsPacket.encode({ type: 'query', id: 9, questions: [{ type, name }] }));

describe('the DNS responder with the store unreachable', () => {
  it('answers a key’s question SERVFAIL, with no record and no AA', async () => {
    const answered = (await respond(query('2.3.5.8.1.1.2.1.8.6.4.numbers.example', 'A'), zones, 'udp'))!;
    expect(answered).toMatchObject({ rcode: 'SERVFAIL', truncated: false });
    const packet = dnsPacket.decode(answered.bytes);
    expect(packet).toMatchObject({ id: 9, rcode: 'SERVFAIL', flag_aa: false, answers: [], authorities: [] });
  });

  it('still answers the apex, which needs no store', async () => {
    const answered = (await respond(query('numbers.example', 'SOA'), zones, 'udp'))!;
    expect(dnsPacket.decode(answered.bytes)).toMatchObject({ rcode: 'NOERROR', flag_aa: true });
  });
});
