import { describe, expect, it } from 'vitest';
import { parseEventTimestamp } from '../../src/domain/event-timestamp.ts';

const NOW = new Date('2026-11-22T12:00:00Z');

describe('parseEventTimestamp', () => {
  it('accepts the node form with 0 to 9 fractional digits, keeping nanoseconds', () => {
    const digits = '123456789';
    for (let n = 0; n <= 9; n++) {
      const input = `2022-02-22 11:19:15${n ? `.${digits.slice(0, n)}` : ''}`;
      const parsed = parseEventTimestamp(input, NOW);
      expect(parsed, input).toEqual({ iso: `2022-02-22T11:19:15.${digits.slice(0, n).padEnd(9, '0')}Z`, epochMs: Date.UTC(2022, 1, 22, 11, 19, 15) + Number(digits.slice(0, Math.min(n, 3)).padEnd(3, '0')) });
    }
    expect(parseEventTimestamp('2022-02-22 11:19:15.848934346', NOW)).toMatchObject({ iso: '2022-02-22T11:19:15.848934346Z' });
  });

  it('accepts RFC 3339 with Z or an offset, converting to UTC', () => {
    expect(parseEventTimestamp('2022-02-22T11:19:15Z', NOW)).toMatchObject({ iso: '2022-02-22T11:19:15.000000000Z' });
    expect(parseEventTimestamp('2022-02-22t11:19:15.5z', NOW)).toMatchObject({ iso: '2022-02-22T11:19:15.500000000Z' });
    expect(parseEventTimestamp('2022-02-22T11:19:15.000000001+02:00', NOW)).toMatchObject({ iso: '2022-02-22T09:19:15.000000001Z' });
    expect(parseEventTimestamp('2022-03-01T00:30:00-05:30', NOW)).toMatchObject({ iso: '2022-03-01T06:00:00.000000000Z' });
    expect(parseEventTimestamp('2022-01-01T00:30:00+01:00', NOW)).toMatchObject({ iso: '2021-12-31T23:30:00.000000000Z' });
  });

  it('sorts as text in time order', () => {
    const a = parseEventTimestamp('2022-02-22 11:19:15.9', NOW) as { iso: string };
    const b = parseEventTimestamp('2022-02-22 11:19:15.10', NOW) as { iso: string };
    expect(a.iso > b.iso).toBe(true);
  });

  it('knows leap years', () => {
    expect(parseEventTimestamp('2024-02-29 00:00:00', NOW)).toHaveProperty('iso');
    expect(parseEventTimestamp('2000-02-29 00:00:00', NOW)).toHaveProperty('iso');
    expect(parseEventTimestamp('2025-02-29 00:00:00', NOW)).toHaveProperty('error');
    expect(parseEventTimestamp('1900-02-29 00:00:00', NOW)).toHaveProperty('error');
  });

  it.each([
    '',
    '2022-02-22',
    '2022-02-22 11:19',
    '22-02-2022 11:19:15',
    '2022-2-22 11:19:15',
    '2022-02-22 11:19:15.',
    '2022-02-22 11:19:15.1234567890',
    '2022-02-22  11:19:15',
    '2022-02-22 11:19:15Z',
    '2022-02-22T11:19:15',
    '2022-02-22T11:19:15+0200',
    '2022-02-30 00:00:00',
    '2022-04-31 00:00:00',
    '2022-13-01 00:00:00',
    '2022-00-10 00:00:00',
    '2022-02-22 24:00:00',
    '2022-02-22 23:60:00',
    '2022-02-22 23:59:60',
    '2022-02-22T11:19:15+24:00',
    '1969-12-31 23:59:59',
    '１２34-01-01 00:00:00',
    'yesterday',
  ])('rejects %j', (input) => {
    expect(parseEventTimestamp(input, NOW)).toHaveProperty('error');
  });

  it('rejects instants more than 24 hours after now, not before', () => {
    expect(parseEventTimestamp('2026-11-23 11:59:59.999', NOW)).toHaveProperty('iso');
    expect(parseEventTimestamp('2026-11-23 12:00:00.001', NOW)).toHaveProperty('error');
    expect(parseEventTimestamp('2026-11-23T13:00:00+02:00', NOW)).toHaveProperty('iso');
  });
});
