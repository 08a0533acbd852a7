import { describe, expect, it } from 'vitest';
import { addressRanges, connectionNetwork } from '../../src/domain/address-ranges.ts';

describe('connectionNetwork: what one party’s connections count under', () => {
  it('is the IPv4 address, however the socket wrote it', () => {
    expect(connectionNetwork('192.0.2.1')).toBe('192.0.2.1');
    expect(connectionNetwork('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(connectionNetwork('192.0.2.2')).not.toBe(connectionNetwork('192.0.2.1'));
  });

  it('is the /64 of an IPv6 address: every address of one subscriber’s /64 counts together', () => {
    const network = connectionNetwork('2001:db8:1:2::5');
    expect(network).toBe('2001:db8:1:2::/64');
    expect(connectionNetwork('2001:DB8:1:2:ffff:ffff:ffff:ffff')).toBe(network);
    expect(connectionNetwork('2001:db8:1:3::5')).not.toBe(network);
    expect(connectionNetwork('::1')).toBe('0:0:0:0::/64');
  });

  it('counts text that is no address as itself', () => {
    expect(connectionNetwork('')).toBe('');
    expect(connectionNetwork('fe80::1%eth0')).toBe('fe80::1%eth0');
  });
});

describe('addressRanges: the trusted proxies of TOLLWATCH_TRUST_PROXY', () => {
  it('matches addresses, CIDR ranges in both notations and the named ranges', () => {
    const trusted = addressRanges(['203.0.113.7', '10.0.0.0/8', '172.16.0.0/255.240.0.0', '2001:db8::/32', 'loopback']);
    for (const address of ['203.0.113.7', '10.1.2.3', '172.31.255.255', '2001:db8:ffff::1', '127.0.0.5', '::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1']) {
      expect(trusted(address), address).toBe(true);
    }
    for (const address of ['203.0.113.8', '11.0.0.1', '172.32.0.0', '2001:db9::1', '192.168.1.1', 'nonsense', '']) {
      expect(trusted(address), address).toBe(false);
    }
  });

  it('knows linklocal and uniquelocal as proxy-addr does', () => {
    const trusted = addressRanges(['linklocal', 'uniquelocal']);
    for (const address of ['169.254.1.1', 'fe80::1', '10.0.0.1', '172.16.0.1', '192.168.0.1', 'fd00::1']) expect(trusted(address), address).toBe(true);
    for (const address of ['8.8.8.8', '2001:db8::1', '127.0.0.1']) expect(trusted(address), address).toBe(false);
  });
});
