import { describe, expect, it } from 'vitest';
import { normalisePhoneNumber, phoneNumberFacts } from '../../src/domain/phone-number.ts';

describe('normalisePhoneNumber', () => {
  it.each([
    // Real called_number values from the SentryPeer fixtures.
    ['100', '100', '100'],
    ['0046812118532', '0046812118532', '+46812118532'],
    ['011390662279016', '011390662279016', '+390662279016'],
    ['+972597744894', '+972597744894', '+972597744894'],
    ['9011442033180000', '9011442033180000', '9011442033180000'],
    // URI forms and separators.
    ['tel:+46-8-121-185-32', '+46812118532', '+46812118532'],
    ['tel:+46812118532;phone-context=example.com', '+46812118532', '+46812118532'],
    ['TEL:0046812118532', '0046812118532', '+46812118532'],
    ['sip:0046812118532@192.0.2.1', '0046812118532', '+46812118532'],
    ['sips:+46812118532@example.com;user=phone', '+46812118532', '+46812118532'],
    ['sip:100;user=phone@host', '100', '100'],
    ['  +1 (800) 555.0199  ', '+18005550199', '+18005550199'],
    ['01146812118532', '01146812118532', '+46812118532'],
    // Letters match case-insensitively; * and # are diallable.
    ['Admin', 'Admin', 'admin'],
    ['*97#', '*97#', '*97#'],
    ['1'.repeat(64), '1'.repeat(64), '1'.repeat(64)],
  ])('%s → written %s, key %s', (input, written, key) => {
    expect(normalisePhoneNumber(input)).toEqual({ written, key });
  });

  it('treats +, 00 and 011 forms of one number as one key', () => {
    const keys = ['+390662279016', '00390662279016', '011390662279016', 'tel:+39 06 622 790 16'].map((n) => normalisePhoneNumber(n)?.key);
    expect(new Set(keys)).toEqual(new Set(['+390662279016']));
  });

  it('does not read bare national digits as international', () => {
    expect(normalisePhoneNumber('46812118532')?.key).toBe('46812118532');
    expect(normalisePhoneNumber('0812118532')?.key).toBe('0812118532');
  });

  it.each(['', '   ', '+', '++46', '1'.repeat(65), '12@34', 'ab$c', '46;1', 'sip:@host', 'tel:', '☎123', '+46 8 12/34'])(
    'rejects %j',
    (input) => {
      expect(normalisePhoneNumber(input)).toBeNull();
    },
  );
});

describe('phoneNumberFacts', () => {
  it('names country and type for valid E.164 numbers', () => {
    expect(phoneNumberFacts('+448712345678')).toEqual({ e164: '+448712345678', country: 'GB', number_type: 'premium-rate' });
    expect(phoneNumberFacts('+18005550199')).toMatchObject({ country: 'US', number_type: 'toll-free' });
    expect(phoneNumberFacts('+972597744894')).toMatchObject({ e164: '+972597744894', number_type: 'mobile' });
    expect(phoneNumberFacts('+46812118532')).toMatchObject({ country: 'SE' });
  });

  it('is null for non-international keys and invalid numbers, and never throws', () => {
    for (const key of ['100', 'admin', '+999', '+1', '+46', '+' + '9'.repeat(30), '+*#']) {
      expect(phoneNumberFacts(key)).toBeNull();
    }
  });
});
