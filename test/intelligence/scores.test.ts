import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decayWeight, ipScore, IP_PARTS, numberScore, NUMBER_PARTS, rangeScore, RANGE_PARTS, type IpEvidence, type NumberEvidence, type RangeEvidence } from '../../src/domain/intelligence/scores.ts';

const NOW = new Date('2026-11-23T12:00:00Z');
const DAY = 86_400_000;
const daysAgo = (days: number) => new Date(NOW.getTime() - days * DAY).toISOString();
const settings = { halfLifeDays: 30 };

const count = fc.integer({ min: 0, max: 100_000 });
const age = fc.double({ min: 0, max: 5000, noNaN: true });
const numberEvidence = fc.record({ seenCount: count, sourceIpCount: count, nodeCount: fc.integer({ min: 0, max: 64 }), inviteCount: count, age });
const ipEvidence = fc.record({ seenCount: count, calledNumberCount: count, nodeCount: fc.integer({ min: 0, max: 64 }), age });

const rangeEvidence = fc.record({ numberCount: fc.integer({ min: 0, max: 100 }), sourceIpCount: count, nodeCount: fc.integer({ min: 0, max: 64 }), inviteCount: count, age });
const asRange = ({ age: a, ...e }: { age: number } & Omit<RangeEvidence, 'lastSeen'>): RangeEvidence => ({ ...e, lastSeen: daysAgo(a) });
const asNumber = ({ age: a, ...e }: { age: number } & Omit<NumberEvidence, 'lastSeen'>): NumberEvidence => ({ ...e, lastSeen: daysAgo(a) });
const asIp = ({ age: a, ...e }: { age: number } & Omit<IpEvidence, 'lastSeen'>): IpEvidence => ({ ...e, lastSeen: daysAgo(a) });

describe('scores (docs/scoring.md)', () => {
  it('weights add up to 100 for either kind', () => {
    expect(Object.values(NUMBER_PARTS).reduce((s, p) => s + p.weight, 0)).toBe(100);
    expect(Object.values(IP_PARTS).reduce((s, p) => s + p.weight, 0)).toBe(100);
    expect(Object.values(RANGE_PARTS).reduce((s, p) => s + p.weight, 0)).toBe(100);
  });

  it('more of any kind of evidence never lowers a score, for numbers and addresses alike', () => {
    const grows = <E extends { age: number }>(evidence: fc.Arbitrary<E>, fields: Array<keyof E & string>, score: (e: E) => number) =>
      fc.assert(
        fc.property(evidence, fc.constantFrom(...fields), fc.integer({ min: 1, max: 1000 }), (e, field, more) => {
          expect(score({ ...e, [field]: (e[field] as number) + more })).toBeGreaterThanOrEqual(score(e));
        }),
        { numRuns: 500 },
      );
    grows(numberEvidence, ['seenCount', 'sourceIpCount', 'nodeCount', 'inviteCount'], (e) => numberScore(asNumber(e), NOW, settings).score);
    grows(ipEvidence, ['seenCount', 'calledNumberCount', 'nodeCount'], (e) => ipScore(asIp(e), NOW, settings).score);
    grows(rangeEvidence, ['numberCount', 'sourceIpCount', 'nodeCount', 'inviteCount'], (e) => rangeScore(asRange(e), NOW, settings).score);
  });

  it('the same evidence, older, never scores higher', () => {
    fc.assert(
      fc.property(numberEvidence, ipEvidence, fc.double({ min: 0, max: 5000, noNaN: true }), (n, i, older) => {
        expect(numberScore(asNumber({ ...n, age: n.age + older }), NOW, settings).score).toBeLessThanOrEqual(numberScore(asNumber(n), NOW, settings).score);
        expect(ipScore(asIp({ ...i, age: i.age + older }), NOW, settings).score).toBeLessThanOrEqual(ipScore(asIp(i), NOW, settings).score);
      }),
      { numRuns: 500 },
    );
    fc.assert(
      fc.property(rangeEvidence, fc.double({ min: 0, max: 5000, noNaN: true }), (r, older) => {
        expect(rangeScore(asRange({ ...r, age: r.age + older }), NOW, settings).score).toBeLessThanOrEqual(rangeScore(asRange(r), NOW, settings).score);
      }),
      { numRuns: 500 },
    );
  });

  it('stays an integer from 0 to 100', () => {
    fc.assert(
      fc.property(numberEvidence, ipEvidence, rangeEvidence, (n, i, r) => {
        for (const { score } of [numberScore(asNumber(n), NOW, settings), ipScore(asIp(i), NOW, settings), rangeScore(asRange(r), NOW, settings)]) {
          expect(Number.isInteger(score)).toBe(true);
          expect(score).toBeGreaterThanOrEqual(0);
          expect(score).toBeLessThanOrEqual(100);
        }
      }),
    );
  });

  it('one half-life halves the weight of evidence, two quarter it', () => {
    for (const halfLifeDays of [1, 7, 30, 365]) {
      expect(decayWeight(0, halfLifeDays)).toBe(1);
      expect(decayWeight(halfLifeDays, halfLifeDays)).toBeCloseTo(0.5, 12);
      expect(decayWeight(2 * halfLifeDays, halfLifeDays)).toBeCloseTo(0.25, 12);
    }
    fc.assert(
      fc.property(numberEvidence, fc.integer({ min: 1, max: 365 }), (e, halfLifeDays) => {
        const fresh = numberScore(asNumber({ ...e, age: 0 }), NOW, { halfLifeDays }).score;
        const halved = numberScore(asNumber({ ...e, age: halfLifeDays }), NOW, { halfLifeDays }).score;
        // Each is rounded on its own: within one point of exactly half.
        expect(Math.abs(halved - fresh / 2)).toBeLessThanOrEqual(1);
      }),
    );
  });

  it('scores the worked examples of docs/scoring.md', () => {
    const busy = numberScore({ seenCount: 120, sourceIpCount: 14, nodeCount: 3, inviteCount: 40, lastSeen: daysAgo(2) }, NOW, settings);
    expect(busy.score).toBe(78);
    expect(busy.reasons).toEqual([
      'called from 14 distinct source addresses',
      'seen by 3 honeypot nodes',
      '40 INVITE attempts, not only OPTIONS scans',
      'seen 120 times',
      'last seen 2 days ago',
      'evidence weighs 95% for its age (half-life 30 days)',
    ]);
    const once = numberScore({ seenCount: 1, sourceIpCount: 1, nodeCount: 1, inviteCount: 0, lastSeen: daysAgo(3 * 365) }, NOW, settings);
    expect(once.score).toBe(0);
    expect(once.reasons).toContain('scans only, no INVITE attempts');
    expect(once.reasons).toContain('last seen 3 years ago');
    const onceToday = numberScore({ seenCount: 1, sourceIpCount: 1, nodeCount: 1, inviteCount: 0, lastSeen: daysAgo(0) }, NOW, settings);
    expect(onceToday).toEqual({ score: 18, reasons: ['called from 1 distinct source address', 'seen by 1 honeypot node', 'scans only, no INVITE attempts', 'seen 1 time', 'last seen today'] });
    const scanner = ipScore({ seenCount: 500, calledNumberCount: 60, nodeCount: 4, lastSeen: daysAgo(0.5) }, NOW, settings);
    expect(scanner.score).toBe(85);
    const tested = rangeScore({ numberCount: 5, sourceIpCount: 3, nodeCount: 2, inviteCount: 12, lastSeen: daysAgo(1) }, NOW, settings);
    expect(tested).toEqual({
      score: 59,
      reasons: [
        '5 distinct numbers of the range seen',
        'called from 3 distinct source addresses',
        'seen by 2 honeypot nodes',
        '12 INVITE attempts, not only OPTIONS scans',
        'last seen 1 day ago',
        'evidence weighs 98% for its age (half-life 30 days)',
      ],
    });
    const oneScan = rangeScore({ numberCount: 1, sourceIpCount: 1, nodeCount: 1, inviteCount: 0, lastSeen: daysAgo(0) }, NOW, settings);
    expect(oneScan).toEqual({ score: 22, reasons: ['1 number of the range seen', 'called from 1 distinct source address', 'seen by 1 honeypot node', 'scans only, no INVITE attempts', 'last seen today'] });
  });

  it('a range’s score never falls when a number of it is seen for the first time', () => {
    fc.assert(
      fc.property(rangeEvidence, (r) => {
        const before = rangeScore(asRange(r), NOW, settings).score;
        // A new number of the range, dialled once by a known source on a known node.
        expect(rangeScore(asRange({ ...r, numberCount: r.numberCount + 1 }), NOW, settings).score).toBeGreaterThanOrEqual(before);
      }),
    );
  });
});
