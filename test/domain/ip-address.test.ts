import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalIpAddress } from '../../src/domain/ip-address.ts';

describe('canonicalIpAddress', () => {
  it.each([
    ['127.0.0.1', '127.0.0.1'],
    ['203.0.113.255', '203.0.113.255'],
    ['0.0.0.0', '0.0.0.0'],
    ['255.255.255.255', '255.255.255.255'],
    ['10.0.0.10', '10.0.0.10'],
    // RFC 5952: lower case, leading zeros dropped, the longest zero run compressed...
    ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'],
    ['2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8::1'],
    ['2001:db8:0000:0000:0001:0000:0000:0001', '2001:db8::1:0:0:1'],
    ['2001:0:0:1:0:0:0:1', '2001:0:0:1::1'],
    // ...but never a single zero group.
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
    ['2001:db8::1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
    ['1:2:3:4:5:6:7::', '1:2:3:4:5:6:7:0'],
    ['FE80::1', 'fe80::1'],
    ['::1', '::1'],
    ['::', '::'],
    ['0:0:0:0:0:0:0:0', '::'],
    // IPv4-mapped addresses are the IPv4 address, however written.
    ['::ffff:192.0.2.1', '192.0.2.1'],
    ['::FFFF:c000:0201', '192.0.2.1'],
    ['0:0:0:0:0:ffff:192.0.2.1', '192.0.2.1'],
    ['::ffff:0.0.0.0', '0.0.0.0'],
    // Other dotted tails stay IPv6: `::1.2.3.4` is IPv4-compatible, not mapped.
    ['::1.2.3.4', '::102:304'],
    ['64:ff9b::192.0.2.33', '64:ff9b::c000:221'],
    ['::ffff:0:1.2.3.4', '::ffff:0:102:304'],
    ['1:2:3:4:5:6:1.2.3.4', '1:2:3:4:5:6:102:304'],
  ])('%s → %s', (input, canonical) => {
    expect(canonicalIpAddress(input)).toBe(canonical);
  });

  it.each([
    '',
    ' 127.0.0.1',
    '127.0.0.1 ',
    '127.0.0.1\n',
    '256.0.0.1',
    '1.2.3.256',
    '1.2.3',
    '1.2.3.4.5',
    '1.2.3.4.',
    '.1.2.3.4',
    '127.1',
    '2130706433',
    '0x7f.0.0.1',
    '0177.0.0.1',
    '01.2.3.4',
    '1.2.3.04',
    '0.0.0.00',
    '-1.2.3.4',
    '+1.2.3.4',
    '1.2.3.4:5060',
    '１.2.3.4',
    'fe80::1%eth0',
    'fe80::1%25eth0',
    'fe80::1%1',
    '[::1]',
    '[::1]:5060',
    '10.0.0.0/8',
    '2001:db8::/32',
    ' ::1',
    'example.com',
    'localhost',
    '1:2:3:4:5:6:7:8:9',
    '1:2:3:4:5:6:7',
    '1::2::3',
    ':::1',
    ':1::2',
    '1::2:',
    '00000::1',
    '12345::1',
    'g::1',
    // Dotted tails inside IPv6 are held to the same strict IPv4 rules.
    '::ffff:01.2.3.4',
    '::ffff:1.2.3.04',
    '::ffff:0x7f.0.0.1',
    '::ffff:256.1.1.1',
    '::ffff:1.2.3',
    '::1.2.3.4.5',
    '1.2.3.4::',
    '::1.2.3.4:1',
    '1:2:3:4:5:6:7:1.2.3.4',
    `${'0000:'.repeat(6)}255.255.255.255 `,
    '1'.repeat(1000),
  ])('rejects %j', (input) => {
    expect(canonicalIpAddress(input)).toBeNull();
  });

  it('accepts the longest valid text, 45 characters', () => {
    expect(canonicalIpAddress(`${'0000:'.repeat(5)}ffff:255.255.255.255`)).toBe('255.255.255.255');
  });

  it('round-trips every IPv4 address it returns', () => {
    fc.assert(
      fc.property(fc.ipV4(), (ip) => {
        expect(canonicalIpAddress(ip)).toBe(ip);
      }),
    );
  });

  it('gives every text form of one IPv6 address the same canonical text, and that text is a fixed point', () => {
    fc.assert(
      fc.property(fc.ipV6(), (ip) => {
        const canonical = canonicalIpAddress(ip);
        expect(canonical).not.toBeNull();
        expect(canonicalIpAddress(canonical!)).toBe(canonical);
        expect(canonicalIpAddress(ip.toUpperCase())).toBe(canonical);
      }),
    );
  });

  it('never throws', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.stringMatching(/^[0-9a-fA-F:.]{0,45}$/)), (input) => {
        const canonical = canonicalIpAddress(input);
        if (canonical !== null) expect(canonical).toMatch(/^[0-9a-f:.]+$/);
      }),
    );
  });
});
