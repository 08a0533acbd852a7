import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isRangePrefix, RANGE_DIGITS, rangeOfNumberKey } from '../../src/domain/number-range.ts';
import { normalisePhoneNumber } from '../../src/domain/phone-number.ts';

/** The range of a number (docs/scoring.md, "Ranges"): its international key less its last two digits. */
describe('number ranges', () => {
  it('is the key less its last two digits, for international keys of 8 to 15 digits', () => {
    expect(rangeOfNumberKey('+46812118532')).toBe('+468121185');
    expect(rangeOfNumberKey('+12345678')).toBe('+123456');
    expect(rangeOfNumberKey('+123456789012345')).toBe('+1234567890123');
  });

  it('gives no range to national forms, extensions, short, over-long or malformed keys', () => {
    for (const key of ['0812118532', '100', '+1234567', '+1234567890123456', '+0812118532', '+4681211853a', '', '+', '+46 812118532', '*100#']) {
      expect(rangeOfNumberKey(key), key).toBeNull();
    }
  });

  it('puts every written form of a number in one range, and the 100 numbers of a block in the same one', () => {
    for (const written of ['+46812118532', '0046812118532', '01146812118532', 'tel:+46-8-121-185-32']) {
      expect(rangeOfNumberKey(normalisePhoneNumber(written)!.key), written).toBe('+468121185');
    }
    fc.assert(
      fc.property(fc.stringMatching(/^\+[1-9][0-9]{5,12}$/), fc.integer({ min: 0, max: 10 ** RANGE_DIGITS - 1 }), (prefix, n) => {
        const key = `${prefix}${String(n).padStart(RANGE_DIGITS, '0')}`;
        expect(rangeOfNumberKey(key)).toBe(prefix);
        expect(isRangePrefix(prefix)).toBe(true);
        // A key one digit longer or shorter is in another range.
        expect(rangeOfNumberKey(`${key}0`)).not.toBe(prefix);
        expect(rangeOfNumberKey(key.slice(0, -1))).not.toBe(prefix);
      }),
    );
  });
});
