import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normalisePhoneNumber, phoneNumberFacts } from '../../src/domain/phone-number.ts';

describe('normalisePhoneNumber', () => {
  it.each([
    // Every called_number value in the SentryPeer fixtures.
    ['100', '100', '100'],
    ['201', '201', '201'],
    ['1000', '1000', '1000'],
    ['2001', '2001', '2001'],
    ['2564713313', '2564713313', '2564713313'],
    ['0046812118532', '0046812118532', '+46812118532'],
    ['00441224928978', '00441224928978', '+441224928978'],
    ['0037167890123', '0037167890123', '+37167890123'],
    ['00881234567', '00881234567', '+881234567'],
    ['011390662279016', '011390662279016', '+390662279016'],
    ['+972597744894', '+972597744894', '+972597744894'],
    // 9 is a common "outside line" digit, not an exit code: left as written.
    ['9011442033180000', '9011442033180000', '9011442033180000'],
    // URI forms.
    ['tel:+46-8-121-185-32', '+46812118532', '+46812118532'],
    ['tel:+46812118532;phone-context=example.com', '+46812118532', '+46812118532'],
    ['TEL:0046812118532', '0046812118532', '+46812118532'],
    ['Tel:100;ext=2', '100', '100'],
    ['sip:0046812118532@192.0.2.1', '0046812118532', '+46812118532'],
    ['SIP:100@192.0.2.1:5060', '100', '100'],
    ['sips:+46812118532@example.com;user=phone', '+46812118532', '+46812118532'],
    ['sip:+44(20)7946-0000@example.com?subject=hi', '+442079460000', '+442079460000'],
    ['sip:100;user=phone@host', '100', '100'],
    ['sip:100', '100', '100'],
    ['sip:100?x=y', '100', '100'],
    // Parameters and headers without a scheme, as a honeypot writes a Request-URI's user part.
    ['+442071838001;phone-context=example.com', '+442071838001', '+442071838001'],
    ['0046812118532;npdi;rn=+46812000000', '0046812118532', '+46812118532'],
    ['100?x=y', '100', '100'],
    ['46;1', '46', '46'],
    // Separators and surrounding whitespace.
    ['  +1 (800) 555.0199  ', '+18005550199', '+18005550199'],
    ['\t0046 8 121 185 32\n', '0046812118532', '+46812118532'],
    ['0 0 4 6', '0046', '+46'],
    ['01146812118532', '01146812118532', '+46812118532'],
    ['011-46-8-121-185-32', '01146812118532', '+46812118532'],
    // Letters match case-insensitively; * and # are diallable.
    ['Admin', 'Admin', 'admin'],
    ['sip:Alice@example.com', 'Alice', 'alice'],
    ['+44ABC', '+44ABC', '+44abc'],
    ['*97#', '*97#', '*97#'],
    ['#31#100', '#31#100', '#31#100'],
    ['1'.repeat(64), '1'.repeat(64), '1'.repeat(64)],
    [`+${'4'.repeat(64)}`, `+${'4'.repeat(64)}`, `+${'4'.repeat(64)}`],
  ])('%s → written %s, key %s', (input, written, key) => {
    expect(normalisePhoneNumber(input)).toEqual({ written, key });
  });

  it('treats +, 00 and 011 forms of one number as one key', () => {
    const keys = ['+390662279016', '00390662279016', '011390662279016', 'tel:+39 06 622 790 16', 'sip:00390662279016@192.0.2.1'].map(
      (n) => normalisePhoneNumber(n)?.key,
    );
    expect(new Set(keys)).toEqual(new Set(['+390662279016']));
  });

  it('keeps each written form distinct while the key is shared', () => {
    expect(normalisePhoneNumber('0046812118532')?.written).toBe('0046812118532');
    expect(normalisePhoneNumber('01146812118532')?.written).toBe('01146812118532');
    expect(normalisePhoneNumber('+46812118532')?.written).toBe('+46812118532');
  });

  it('does not read bare national digits as international', () => {
    expect(normalisePhoneNumber('46812118532')?.key).toBe('46812118532');
    expect(normalisePhoneNumber('0812118532')?.key).toBe('0812118532');
    expect(normalisePhoneNumber('01')?.key).toBe('01');
  });

  it('needs something after the exit code, and a country code cannot begin with 0', () => {
    // A bare exit code is just what was dialled.
    expect(normalisePhoneNumber('00')).toEqual({ written: '00', key: '00' });
    expect(normalisePhoneNumber('011')).toEqual({ written: '011', key: '011' });
    // Extensions like 0000 are common probe targets; they are not `+00`.
    expect(normalisePhoneNumber('0000')?.key).toBe('0000');
    expect(normalisePhoneNumber('000123')?.key).toBe('000123');
    expect(normalisePhoneNumber('0110')?.key).toBe('0110');
    expect(normalisePhoneNumber('+0123')?.key).toBe('+0123');
    // Not all digits after the prefix: stays as written, lower-cased.
    expect(normalisePhoneNumber('0044ABC')?.key).toBe('0044abc');
    expect(normalisePhoneNumber('+44*1')?.key).toBe('+44*1');
  });

  it.each([
    '',
    '   ',
    '+',
    '++46',
    '46+',
    '1'.repeat(65),
    `+${'4'.repeat(65)}`,
    '12@34',
    'ab$c',
    ';46',
    '?46',
    '46,1',
    '46/1',
    '+46\t8',
    '+46\u00a08',
    '46_1',
    'sip:@host',
    'sip:',
    'tel:',
    'tel:;x=y',
    'mailto:100',
    '☎123',
    '١٢٣',
    '+46 8 12/34',
    '%2B46',
  ])('rejects %j', (input) => {
    expect(normalisePhoneNumber(input)).toBeNull();
  });

  it('never throws, and what it returns always matches the diallable pattern', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 100 }), (input) => {
        const n = normalisePhoneNumber(input);
        if (n === null) return;
        expect(n.written).toMatch(/^\+?[0-9A-Za-z*#]{1,64}$/);
        expect(n.key).toMatch(/^\+?[0-9a-z*#]{1,64}$/);
      }),
    );
  });
});

describe('phoneNumberFacts', () => {
  it('names country and type for valid E.164 numbers', () => {
    expect(phoneNumberFacts('+449098790000')).toEqual({ e164: '+449098790000', country: 'GB', number_type: 'premium-rate' });
    expect(phoneNumberFacts('+448712345678')).toEqual({ e164: '+448712345678', country: 'GB', number_type: 'premium-rate' });
    expect(phoneNumberFacts('+18005550199')).toEqual({ e164: '+18005550199', country: 'US', number_type: 'toll-free' });
    expect(phoneNumberFacts('+972597744894')).toEqual({ e164: '+972597744894', country: 'IL', number_type: 'mobile' });
    expect(phoneNumberFacts('+46812118532')).toEqual({ e164: '+46812118532', country: 'SE', number_type: 'fixed-line' });
    expect(phoneNumberFacts('+12564713313')).toEqual({ e164: '+12564713313', country: 'US', number_type: 'fixed-line-or-mobile' });
  });

  it('gives the same facts however the number was written, through its key', () => {
    for (const written of ['00390662279016', '011390662279016', 'tel:+39-06-6227-9016']) {
      const key = normalisePhoneNumber(written)?.key ?? '';
      expect(phoneNumberFacts(key), written).toEqual({ e164: '+390662279016', country: 'IT', number_type: 'fixed-line' });
    }
  });

  it('answers the same from its cache as the first time', () => {
    const first = phoneNumberFacts('+441224928978');
    expect(first).toMatchObject({ country: 'GB' });
    expect(phoneNumberFacts('+441224928978')).toEqual(first);
    expect(phoneNumberFacts('+2564713313')).toBeNull();
    expect(phoneNumberFacts('+2564713313')).toBeNull();
  });

  it.each(['100', 'admin', '0046812118532', '+999', '+1', '+46', '+881234567', `+${'9'.repeat(30)}`, '+*#', '+0', '+', '', '+44 20 7946 0000', '+1800flowers', '+1800555019#'])(
    'is null for %j',
    (key) => {
      expect(phoneNumberFacts(key)).toBeNull();
    },
  );

  it('never throws', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.stringMatching(/^\+[0-9]{0,20}$/)), (key) => {
        const facts = phoneNumberFacts(key);
        if (facts) expect(facts.e164).toMatch(/^\+[1-9][0-9]+$/);
      }),
    );
  });
});
