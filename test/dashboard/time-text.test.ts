import { describe, expect, it } from 'vitest';
import { durationText } from '../../src/web/time-text.ts';

describe('durations as people read them (not "resets in 3600 s")', () => {
  it('names the largest unit that fits, rounded up, singular for one', () => {
    expect(durationText(0)).toBe('0 seconds');
    expect(durationText(1)).toBe('1 second');
    expect(durationText(45.2)).toBe('46 seconds');
    expect(durationText(60)).toBe('1 minute');
    expect(durationText(61)).toBe('2 minutes');
    expect(durationText(3600)).toBe('1 hour');
    expect(durationText(3599)).toBe('60 minutes');
    expect(durationText(86_400 * 400)).toBe('400 days');
  });
});
