import { describe, expect, it } from 'vitest';
import { AllowlistMatcher, type AllowlistEntry, type AllowlistKind } from '../../src/domain/allowlists/allowlists.ts';

const entry = (kind: AllowlistKind, value: string): AllowlistEntry => ({ id: `${kind}:${value}`, kind, value, note: null, added_by: 'operator', added_at: '2026-12-01T00:00:00Z' });

/** Which allowlist entries keep a number range out of a feed (docs/api.md §14, `ranges=include`). */
describe('AllowlistMatcher.numberRange', () => {
  it('names a prefix covering the block, and a number or longer prefix inside it', () => {
    expect(new AllowlistMatcher([entry('number_prefix', '+46812')]).numberRange('+468121185')?.value).toBe('+46812');
    expect(new AllowlistMatcher([entry('number_prefix', '+468121185')]).numberRange('+468121185')?.value).toBe('+468121185');
    expect(new AllowlistMatcher([entry('number_prefix', '+4681211853')]).numberRange('+468121185')?.value).toBe('+4681211853');
    expect(new AllowlistMatcher([entry('phone_number', '+46812118532')]).numberRange('+468121185')?.value).toBe('+46812118532');
  });

  it('names nothing outside the block: a neighbouring block, a prefix of another, the prefix as a number, addresses', () => {
    const list = new AllowlistMatcher([
      entry('number_prefix', '+468121186'),
      entry('phone_number', '+46812118632'),
      entry('phone_number', '+468121185'),
      entry('number_prefix', '+4681211'.concat('9')),
      entry('ip_address', '203.0.113.7'),
    ]);
    expect(list.numberRange('+468121185')).toBeUndefined();
  });
});
