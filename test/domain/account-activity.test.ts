import { describe, expect, it } from 'vitest';
import { everyBucket } from '../../src/domain/accounts/account-activity.ts';

describe('the overview’s events over time', () => {
  it('has one bucket per hour of the period, 0 where no event fell', () => {
    const buckets = everyBucket([{ value: '2026-11-23T10', count: 4 }, { value: '2026-11-23T13', count: 1 }], '2026-11-23T09:30:00.000Z', new Date('2026-11-23T14:10:00Z'), 'hour');
    expect(buckets).toEqual([
      { value: '2026-11-23T09', count: 0 },
      { value: '2026-11-23T10', count: 4 },
      { value: '2026-11-23T11', count: 0 },
      { value: '2026-11-23T12', count: 0 },
      { value: '2026-11-23T13', count: 1 },
      { value: '2026-11-23T14', count: 0 },
    ]);
  });

  it('has one bucket per day over a month, and keeps events a node timed after now', () => {
    const buckets = everyBucket([{ value: '2026-11-25', count: 2 }], '2026-10-24T14:00:00.000Z', new Date('2026-11-23T14:00:00Z'), 'day');
    expect(buckets).toHaveLength(32);
    expect(buckets[0]).toEqual({ value: '2026-10-24', count: 0 });
    expect(buckets.at(-2)).toEqual({ value: '2026-11-23', count: 0 });
    expect(buckets.at(-1)).toEqual({ value: '2026-11-25', count: 2 });
  });
});
