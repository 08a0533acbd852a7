import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseEventTimestamp } from '../../src/domain/events/event-timestamp.ts';

const NOW = new Date('2026-11-22T12:00:00Z');
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z$/;

function iso(input: string, now = NOW): string {
  const parsed = parseEventTimestamp(input, now);
  if ('error' in parsed) throw new Error(`${input}: ${parsed.error}`);
  return parsed.iso;
}

describe('parseEventTimestamp', () => {
  it('accepts the node form with 0 to 9 fractional digits, keeping nanoseconds', () => {
    const digits = '123456789';
    for (let n = 0; n <= 9; n++) {
      const input = `2022-02-22 11:19:15${n ? `.${digits.slice(0, n)}` : ''}`;
      expect(parseEventTimestamp(input, NOW), input).toEqual({
        iso: `2022-02-22T11:19:15.${digits.slice(0, n).padEnd(9, '0')}Z`,
        epochMs: Date.UTC(2022, 1, 22, 11, 19, 15) + Number(digits.slice(0, Math.min(n, 3)).padEnd(3, '0')),
      });
    }
    expect(iso('2022-02-22 11:19:15.848934346')).toBe('2022-02-22T11:19:15.848934346Z');
    expect(iso('2022-02-22 11:19:15.000000000')).toBe('2022-02-22T11:19:15.000000000Z');
  });

  it('reads the fixtures’ timestamps, short fractions as decimal fractions per the contract', () => {
    expect(iso('2026-11-22 06:36:08.301823373')).toBe('2026-11-22T06:36:08.301823373Z');
    expect(iso('2026-11-22 06:36:09.32244467')).toBe('2026-11-22T06:36:09.322444670Z');
  });

  it('accepts RFC 3339 with 0 to 9 fractional digits', () => {
    const digits = '987654321';
    for (let n = 0; n <= 9; n++) {
      const input = `2022-02-22T11:19:15${n ? `.${digits.slice(0, n)}` : ''}Z`;
      expect(iso(input), input).toBe(`2022-02-22T11:19:15.${digits.slice(0, n).padEnd(9, '0')}Z`);
    }
  });

  it('converts RFC 3339 offsets to UTC without losing the fraction', () => {
    expect(iso('2022-02-22T11:19:15Z')).toBe('2022-02-22T11:19:15.000000000Z');
    expect(iso('2022-02-22t11:19:15.5z')).toBe('2022-02-22T11:19:15.500000000Z');
    expect(iso('2022-02-22T11:19:15.000000001+02:00')).toBe('2022-02-22T09:19:15.000000001Z');
    expect(iso('2022-02-22T11:19:15.123456789+05:45')).toBe('2022-02-22T05:34:15.123456789Z');
    expect(iso('2022-03-01T00:30:00-05:30')).toBe('2022-03-01T06:00:00.000000000Z');
    expect(iso('2022-01-01T00:30:00+01:00')).toBe('2021-12-31T23:30:00.000000000Z');
    expect(iso('2021-12-31T23:30:00-01:00')).toBe('2022-01-01T00:30:00.000000000Z');
    expect(iso('2024-02-28T23:00:00-01:00')).toBe('2024-02-29T00:00:00.000000000Z');
    expect(iso('2023-02-28T23:00:00-01:00')).toBe('2023-03-01T00:00:00.000000000Z');
    expect(iso('2022-02-22T11:19:15+00:00')).toBe('2022-02-22T11:19:15.000000000Z');
    expect(iso('2022-02-22T11:19:15-00:00')).toBe('2022-02-22T11:19:15.000000000Z');
    expect(iso('2022-02-22T11:19:15+23:59')).toBe('2022-02-21T11:20:15.000000000Z');
    expect(parseEventTimestamp('2022-02-22T11:19:15.999999999+02:00', NOW)).toEqual({
      iso: '2022-02-22T09:19:15.999999999Z',
      epochMs: Date.UTC(2022, 1, 22, 9, 19, 15, 999),
    });
  });

  it('gives one instant however it is written', () => {
    const forms = ['2022-02-22 11:19:15.25', '2022-02-22T11:19:15.250Z', '2022-02-22T12:19:15.25+01:00', '2022-02-22T06:49:15.250000000-04:30'];
    expect(new Set(forms.map((f) => iso(f)))).toEqual(new Set(['2022-02-22T11:19:15.250000000Z']));
  });

  it('sorts as text in time order', () => {
    expect(iso('2022-02-22 11:19:15.9') > iso('2022-02-22 11:19:15.10')).toBe(true);
    expect(iso('2022-02-22 11:19:15.000000002') > iso('2022-02-22 11:19:15.000000001')).toBe(true);
    expect(iso('2022-02-22 11:19:16') > iso('2022-02-22 11:19:15.999999999')).toBe(true);
    expect(iso('2022-02-22T11:19:15+01:00') < iso('2022-02-22 11:19:15')).toBe(true);
  });

  it('knows leap years', () => {
    expect(iso('2024-02-29 00:00:00')).toBe('2024-02-29T00:00:00.000000000Z');
    expect(iso('2000-02-29 00:00:00')).toBe('2000-02-29T00:00:00.000000000Z');
    expect(iso('2024-02-29T23:59:59.999999999Z')).toBe('2024-02-29T23:59:59.999999999Z');
    expect(parseEventTimestamp('2025-02-29 00:00:00', NOW)).toEqual({ error: 'is not a real date' });
    expect(parseEventTimestamp('2100-02-29 00:00:00', NOW)).toHaveProperty('error');
    expect(parseEventTimestamp('1900-02-29 00:00:00', NOW)).toHaveProperty('error');
    expect(parseEventTimestamp('2023-02-29T00:00:00Z', NOW)).toEqual({ error: 'is not a real date' });
  });

  it('accepts the last day of every month and not the day after', () => {
    const lastDays = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    lastDays.forEach((last, i) => {
      const month = String(i + 1).padStart(2, '0');
      expect(parseEventTimestamp(`2023-${month}-${last} 00:00:00`, NOW), month).toHaveProperty('iso');
      expect(parseEventTimestamp(`2023-${month}-${last + 1} 00:00:00`, NOW), month).toEqual({ error: 'is not a real date' });
    });
  });

  it('accepts 1970 onwards only, judged in UTC', () => {
    expect(iso('1970-01-01 00:00:00')).toBe('1970-01-01T00:00:00.000000000Z');
    expect(parseEventTimestamp('1970-01-01 00:00:00', NOW)).toEqual({ iso: '1970-01-01T00:00:00.000000000Z', epochMs: 0 });
    expect(iso('1969-12-31T23:30:00-01:00')).toBe('1970-01-01T00:30:00.000000000Z');
    expect(parseEventTimestamp('1969-12-31 23:59:59.999999999', NOW)).toEqual({ error: 'must be in 1970 or later' });
    expect(parseEventTimestamp('1970-01-01T00:30:00+01:00', NOW)).toEqual({ error: 'must be in 1970 or later' });
    expect(parseEventTimestamp('0000-01-01 00:00:00', NOW)).toEqual({ error: 'must be in 1970 or later' });
    expect(parseEventTimestamp('0050-06-01 00:00:00', NOW)).toEqual({ error: 'must be in 1970 or later' });
  });

  it.each([
    '',
    ' 2022-02-22 11:19:15',
    '2022-02-22 11:19:15 ',
    '2022-02-22',
    '2022-02-22 11:19',
    '11:19:15',
    '22-02-2022 11:19:15',
    '2022/02/22 11:19:15',
    '2022-2-22 11:19:15',
    '2022-02-22 1:19:15',
    '22022-02-22 11:19:15',
    '2022-02-22 11:19:15.',
    '2022-02-22 11:19:15,5',
    '2022-02-22 11:19:15.1234567890',
    '2022-02-22  11:19:15',
    '2022-02-22_11:19:15',
    '2022-02-22 11:19:15Z',
    '2022-02-22 11:19:15+01:00',
    '2022-02-22T11:19:15',
    '2022-02-22T11:19:15.5',
    '2022-02-22T11:19:15 Z',
    '2022-02-22T11:19:15+0200',
    '2022-02-22T11:19:15+02',
    '2022-02-22T11:19:15UTC',
    '2022-02-22T11:19:15.1234567890Z',
    '2022-02-22T11:19:15+24:00',
    '2022-02-22T11:19:15+02:60',
    '2022-02-30 00:00:00',
    '2022-04-31 00:00:00',
    '2022-13-01 00:00:00',
    '2022-00-10 00:00:00',
    '2022-01-00 00:00:00',
    '2022-01-32 00:00:00',
    '2022-02-22 24:00:00',
    '2022-02-22 23:60:00',
    '2022-02-22 23:59:60',
    '2016-12-31T23:59:60Z',
    '1969-12-31 23:59:59',
    '１２34-01-01 00:00:00',
    '2022-02-22 11:19:15.٣',
    'yesterday',
    '1645528755',
    'Tue, 22 Feb 2022 11:19:15 GMT',
  ])('rejects %j', (input) => {
    const parsed = parseEventTimestamp(input, NOW);
    expect(parsed).toHaveProperty('error');
    expect(parsed).not.toHaveProperty('iso');
  });

  it('rejects instants more than 24 hours after now, to the nanosecond, and accepts any past', () => {
    expect(parseEventTimestamp('2026-11-23 11:59:59.999999999', NOW)).toHaveProperty('iso');
    expect(parseEventTimestamp('2026-11-23 12:00:00', NOW)).toHaveProperty('iso');
    expect(parseEventTimestamp('2026-11-23 12:00:00.000000000', NOW)).toHaveProperty('iso');
    expect(parseEventTimestamp('2026-11-23 12:00:00.000000001', NOW)).toEqual({ error: 'is more than 24 hours in the future' });
    expect(parseEventTimestamp('2026-11-23 12:00:00.001', NOW)).toEqual({ error: 'is more than 24 hours in the future' });
    expect(parseEventTimestamp('2026-11-23T13:00:00+02:00', NOW)).toHaveProperty('iso');
    expect(parseEventTimestamp('2026-11-23T13:00:01+01:00', NOW)).toHaveProperty('error');
    expect(parseEventTimestamp('9999-12-31 23:59:59', NOW)).toHaveProperty('error');
    expect(parseEventTimestamp('9999-12-31T23:59:59-01:00', NOW)).toHaveProperty('error');
    expect(parseEventTimestamp('2026-11-24 00:00:00', new Date('2026-11-23T00:00:00Z'))).toHaveProperty('iso');
  });

  it('answers errors as short sentences that do not echo the input', () => {
    const input = '2022-02-22 11:19:15.XSECRETX';
    const parsed = parseEventTimestamp(input, NOW);
    expect('error' in parsed && parsed.error).toBeTruthy();
    expect(JSON.stringify(parsed)).not.toContain('SECRET');
  });

  it('agrees with Date for every valid millisecond instant it is given, and never throws', () => {
    const min = Date.UTC(1970, 0, 1);
    const max = NOW.getTime() + 86_400_000;
    fc.assert(
      fc.property(fc.integer({ min, max }), fc.integer({ min: 0, max: 999_999 }), (ms, subMs) => {
        const text = new Date(ms).toISOString().replace(/\.(\d{3})Z$/, (_, frac: string) => `.${frac}${String(subMs).padStart(6, '0')}Z`);
        const parsed = parseEventTimestamp(text, NOW);
        if (ms === max && subMs > 0) {
          expect(parsed).toHaveProperty('error');
          return;
        }
        expect(parsed).toEqual({ iso: text, epochMs: ms });
      }),
    );
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.stringMatching(/^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})?$/)), (input) => {
        const parsed = parseEventTimestamp(input, NOW);
        if ('iso' in parsed) expect(parsed.iso).toMatch(ISO);
        else expect(parsed.error.length).toBeGreaterThan(0);
      }),
    );
  });
});
