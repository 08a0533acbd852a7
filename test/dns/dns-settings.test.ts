import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';

/** The TOLLWATCH_DNS_* settings as the server reads them (docs/operations.md, "Configuration"). */

const load = (env: Record<string, string>) => loadConfig({ DATABASE_URL: 'sqlite::memory:', ...env }, false).dns;

describe('the DNS settings', () => {
  it('are off by default, with the documented zones, threshold, TTLs, loopback-only allow-list and rate', () => {
    expect(load({})).toEqual({
      listen: undefined,
      zones: { origins: { numbers: 'numbers.tollwatch.internal', addresses: 'addresses.tollwatch.internal' }, minScore: 50, ttlSeconds: 60, negativeTtlSeconds: 60, nameServer: 'localhost' },
      allow: ['127.0.0.0/8', '::1'],
      answersPerSecond: 100,
    });
  });

  it('read where to listen, the zones (any case, a final dot) and the name server from the public URL', () => {
    const dns = load({ TOLLWATCH_DNS_LISTEN: '[::1]:5353', TOLLWATCH_DNS_NUMBER_ZONE: 'ENUM.Example.NET.', TOLLWATCH_PUBLIC_URL: 'https://tollwatch.example.com' });
    expect(dns.listen).toEqual({ host: '::1', port: 5353 });
    expect(dns.zones.origins.numbers).toBe('enum.example.net');
    expect(dns.zones.nameServer).toBe('tollwatch.example.com');
    expect(load({ TOLLWATCH_DNS_LISTEN: '127.0.0.1:53' }).listen).toEqual({ host: '127.0.0.1', port: 53 });
  });

  it('refuse what they cannot serve, naming the variable', () => {
    expect(() => load({ TOLLWATCH_DNS_LISTEN: 'localhost:5353' })).toThrow(/TOLLWATCH_DNS_LISTEN/);
    expect(() => load({ TOLLWATCH_DNS_LISTEN: '127.0.0.1' })).toThrow(/TOLLWATCH_DNS_LISTEN/);
    expect(() => load({ TOLLWATCH_DNS_LISTEN: '127.0.0.1:70000' })).toThrow(/TOLLWATCH_DNS_LISTEN/);
    expect(() => load({ TOLLWATCH_DNS_ALLOW: '10.0.0.0/8,not-an-address' })).toThrow(/TOLLWATCH_DNS_ALLOW/);
    expect(() => load({ TOLLWATCH_DNS_NUMBER_ZONE: 'zone with spaces' })).toThrow(/not a DNS zone name/);
    // One zone inside the other would make a name of one a name of both.
    expect(() => load({ TOLLWATCH_DNS_NUMBER_ZONE: 'a.example', TOLLWATCH_DNS_ADDRESS_ZONE: 'b.a.example' })).toThrow(/must be apart/);
    expect(() => load({ TOLLWATCH_DNS_MIN_SCORE: '0' })).toThrow();
  });
});
