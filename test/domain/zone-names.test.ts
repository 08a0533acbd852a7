import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalIpAddress } from '../../src/domain/ip-address.ts';
import { listingCode, listingText, type Listing } from '../../src/domain/dns/zone-listing.ts';
import { addressName, numberName, placeOf } from '../../src/domain/dns/zone-names.ts';

/** The names of the DNS zones and the codes of their answers (docs/dns.md), as pure functions. */

const ORIGINS = { numbers: 'numbers.example', addresses: 'addresses.example' };

describe('zone names', () => {
  it('writes numbers in the ENUM layout and addresses in RFC 5782’s, as docs/dns.md shows', () => {
    expect(numberName('+46812118532', ORIGINS.numbers)).toBe('2.3.5.8.1.1.2.1.8.6.4.numbers.example');
    expect(addressName('192.0.2.1', ORIGINS.addresses)).toBe('1.2.0.192.addresses.example');
    expect(addressName('2001:db8::1', ORIGINS.addresses)).toBe('1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.addresses.example');
    // National forms and extensions have no ENUM name: their digits could be anyone's.
    expect(numberName('0812118532', ORIGINS.numbers)).toBeUndefined();
    expect(numberName('100', ORIGINS.numbers)).toBeUndefined();
  });

  it('reads every number name back to its key, whatever the case of the zone', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[1-9][0-9]{0,20}$/), (digits) => {
        const name = numberName(`+${digits}`, ORIGINS.numbers)!;
        expect(placeOf(name.toUpperCase(), ORIGINS)).toEqual({ zone: 'numbers', at: 'key', key: `+${digits}` });
      }),
    );
  });

  it('reads every address name back to the address’s canonical form', () => {
    fc.assert(
      fc.property(fc.oneof(fc.ipV4(), fc.ipV6()), (address) => {
        const canonical = canonicalIpAddress(address);
        fc.pre(canonical !== null);
        expect(placeOf(addressName(address, ORIGINS.addresses)!, ORIGINS)).toEqual({ zone: 'addresses', at: 'key', key: canonical });
      }),
    );
  });

  it('tells the apex, empty non-terminals, names of nothing and names outside both zones apart', () => {
    expect(placeOf('numbers.example.', ORIGINS)).toEqual({ zone: 'numbers', at: 'apex' });
    expect(placeOf('2.0.192.addresses.example', ORIGINS)).toEqual({ zone: 'addresses', at: 'partial' });
    expect(placeOf('8.b.d.0.1.0.0.2.addresses.example', ORIGINS)).toEqual({ zone: 'addresses', at: 'partial' });
    expect(placeOf('2.1.0.numbers.example', ORIGINS)).toEqual({ zone: 'numbers', at: 'nothing' });
    expect(placeOf('01.2.0.192.addresses.example', ORIGINS)).toEqual({ zone: 'addresses', at: 'nothing' });
    expect(placeOf('www.numbers.example', ORIGINS)).toEqual({ zone: 'numbers', at: 'nothing' });
    expect(placeOf('xnumbers.example', ORIGINS)).toBeUndefined();
    expect(placeOf('example', ORIGINS)).toBeUndefined();
  });
});

describe('listing codes', () => {
  const at = new Date('2026-12-01T12:00:00Z');
  const listing = (score: number, marked: boolean, daysAgo: number): Listing => ({ score, reasons: [], marked, lastSeen: new Date(at.getTime() - daysAgo * 86_400_000).toISOString() });

  it('puts the score band in the third octet and listed, marked and freshness bits in the fourth', () => {
    expect(listingCode(listing(58, true, 0.5), at)).toBe('127.0.50.6');
    expect(listingCode(listing(100, false, 0), at)).toBe('127.0.100.2');
    expect(listingCode(listing(79, true, 3), at)).toBe('127.0.70.14');
    expect(listingCode(listing(50, false, 29), at)).toBe('127.0.50.18');
    expect(listingCode(listing(61, true, 45), at)).toBe('127.0.60.30');
  });

  it('never answers 127.0.0.1 nor leaves 127.0.0.0/8, and always sets the listed bit', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 100 }), fc.boolean(), fc.double({ min: 0, max: 3650, noNaN: true }), (score, marked, days) => {
        const [a, b, c, d] = listingCode(listing(score, marked, days), at).split('.').map(Number);
        expect([a, b]).toEqual([127, 0]);
        expect(c! % 10).toBe(0);
        expect(d! & 2).toBe(2);
        expect(d).toBeLessThan(32);
      }),
    );
  });

  it('keeps the TXT to one character-string, the score first and whole reasons only', () => {
    const long: Listing = { ...listing(77, true, 0), reasons: Array.from({ length: 20 }, (_, i) => `reason number ${i} with some words`) };
    const text = listingText(long);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(255);
    expect(text).toMatch(/^Tollwatch score 77: reason number 0 with some words; /);
    expect(text.endsWith('with some words')).toBe(true);
  });
});
