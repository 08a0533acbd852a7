import { describe, expect, it } from 'vitest';
import { indicatorTimes } from '../../src/domain/intelligence/indicator-versions.ts';
import { decayWeight } from '../../src/domain/intelligence/scores.ts';

const HOUR = 3_600_000;
const DAY = 86_400_000;

/**
 * An indicator's versions as a poller sees them (docs/api.md §14): polled every hour for months,
 * its `modified` moves exactly when what it shows (the score) moves, never otherwise, and its
 * `valid_until` is the first hour whose score is below the threshold.
 */
describe('indicator versions under decay', () => {
  const cases = [
    { fresh: 97.3, halfLifeDays: 30, minScore: 50 },
    { fresh: 61.2, halfLifeDays: 30, minScore: 20 },
    { fresh: 35.5, halfLifeDays: 7, minScore: 1 },
    { fresh: 88.8, halfLifeDays: 90, minScore: 80 },
    { fresh: 50.5, halfLifeDays: 1, minScore: 50 },
  ];
  for (const c of cases) {
    it(`fresh ${c.fresh}, half-life ${c.halfLifeDays} days, threshold ${c.minScore}`, () => {
      const lastSeen = Date.UTC(2026, 9, 1, 10, 17, 3, 250);
      const changedAt = lastSeen + 42 * 60_000;
      const score = (t: number) => Math.round(c.fresh * decayWeight((t - lastSeen) / DAY, c.halfLifeDays));
      let previous: { score: number; modified: string } | undefined;
      let firstBelow: number | undefined;
      const start = Math.floor(changedAt / HOUR) * HOUR;
      for (let hour = start; hour < start + 400 * DAY && firstBelow === undefined; hour += HOUR) {
        const shown = score(hour);
        if (shown < c.minScore) {
          firstBelow = hour;
          break;
        }
        const times = indicatorTimes({ fresh: c.fresh, lastSeen: new Date(lastSeen).toISOString(), changedAt: new Date(changedAt).toISOString(), scoredAt: new Date(hour), minScore: c.minScore, halfLifeDays: c.halfLifeDays });
        expect(Date.parse(times.modified)).toBeGreaterThanOrEqual(changedAt);
        expect(Date.parse(times.modified)).toBeLessThanOrEqual(Math.max(hour, changedAt));
        if (previous) {
          if (shown === previous.score) expect(times.modified, `hour ${new Date(hour).toISOString()}`).toBe(previous.modified);
          else expect(Date.parse(times.modified)).toBeGreaterThan(Date.parse(previous.modified));
        }
        // Shown first at this hour: modified is this hour (or the change itself, if later).
        if (previous && shown !== previous.score) expect(times.modified).toBe(new Date(hour).toISOString());
        previous = { score: shown, modified: times.modified };
        // The same promise of when it ends, whatever hour it is asked at.
        const until = Date.parse(times.validUntil!);
        expect(score(until)).toBeLessThan(c.minScore);
        expect(score(until - HOUR)).toBeGreaterThanOrEqual(c.minScore);
      }
      expect(firstBelow).toBeDefined();
    });
  }

  it('a threshold of 0 never expires', () => {
    const times = indicatorTimes({ fresh: 40, lastSeen: '2026-11-01T00:00:00.000Z', changedAt: '2026-11-01T00:05:00.000Z', scoredAt: new Date('2026-11-20T00:00:00Z'), minScore: 0, halfLifeDays: 30 });
    expect(times.validUntil).toBeUndefined();
  });

  it('a change after the hour the feed scores at is the version', () => {
    const times = indicatorTimes({ fresh: 40, lastSeen: '2026-11-20T10:15:00.000Z', changedAt: '2026-11-20T10:16:00.000Z', scoredAt: new Date('2026-11-20T10:00:00Z'), minScore: 20, halfLifeDays: 30 });
    expect(times.modified).toBe('2026-11-20T10:16:00.000Z');
  });
});
