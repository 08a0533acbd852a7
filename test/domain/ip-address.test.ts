import { describe, expect, it } from 'vitest';
import { canonicalIpAddress } from '../../src/domain/ip-address.ts';

describe('canonicalIpAddress', () => {
  it.each([
    ['127.0.0.1', '127.0.0.1'],
    ['203.0.113.255', '203.0.113.255'],
    ['0.0.0.0', '0.0.0.0'],
    ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'],
    ['2001:db8:0000:0000:0001:0000:0000:0001', '2001:db8::1:0:0:1'],
    ['::1', '::1'],
    ['::', '::'],
    ['::ffff:192.0.2.1', '192.0.2.1'],
    ['::FFFF:c000:0201', '192.0.2.1'],
    ['fe80::1', 'fe80::1'],
  ])('%s → %s', (input, canonical) => {
    expect(canonicalIpAddress(input)).toBe(canonical);
  });

  it.each(['', ' 127.0.0.1', '127.0.0.1 ', '256.0.0.1', '1.2.3', '1.2.3.4.5', '127.1', '0x7f.0.0.1', '01.2.3.4', '1.2.3.04', 'fe80::1%eth0', '[::1]', '10.0.0.0/8', '2001:db8::/32', 'example.com', '1:2:3:4:5:6:7:8:9', ':::1', '-1.2.3.4'])(
    'rejects %j',
    (input) => {
      expect(canonicalIpAddress(input)).toBeNull();
    },
  );
});
