import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addCount, countsJson, countsOf, KEPT_NAMES } from '../../src/domain/lookups/kept-counts.ts';

describe('kept counts (space-saving, at most KEPT_NAMES names)', () => {
  it('counts exactly while there are at most KEPT_NAMES names', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 100; i++) addCount(counts, `name-${i % KEPT_NAMES}`, 1);
    expect(counts.size).toBe(KEPT_NAMES);
    expect(counts.get('name-0')).toBe(4);
    expect(counts.get(`name-${KEPT_NAMES - 1}`)).toBe(3);
  });

  it('never keeps more than KEPT_NAMES names, however many are sent', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 10_000; i++) addCount(counts, `agent-${i}`, 1);
    expect(counts.size).toBe(KEPT_NAMES);
    // The total is kept: what an evicted name had carries over to the one that replaced it.
    expect([...counts.values()].reduce((a, b) => a + b, 0)).toBe(10_000);
  });

  it('keeps every name seen more often than the least kept count, counted at most that much too high', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 80 }), { minLength: 1, maxLength: 2000 }), (stream) => {
        const counts = new Map<string, number>();
        const truth = new Map<number, number>();
        for (const n of stream) {
          addCount(counts, `v${n}`, 1);
          truth.set(n, (truth.get(n) ?? 0) + 1);
        }
        const least = counts.size < KEPT_NAMES ? 0 : Math.min(...counts.values());
        for (const [n, seen] of truth) {
          const kept = counts.get(`v${n}`);
          if (seen > least) expect(kept).toBeDefined();
          if (kept !== undefined) {
            expect(kept).toBeGreaterThanOrEqual(seen);
            expect(kept - seen).toBeLessThanOrEqual(least);
          }
        }
      }),
    );
  });

  it('does not depend on the order names tie in', () => {
    const a = new Map<string, number>();
    const b = new Map<string, number>();
    const names = Array.from({ length: KEPT_NAMES + 5 }, (_, i) => `n${i}`);
    for (const name of names) addCount(a, name, 1);
    for (const name of [...names.slice(0, KEPT_NAMES)].reverse().concat(names.slice(KEPT_NAMES))) addCount(b, name, 1);
    expect(countsJson(new Map([...a].sort()))).toBe(countsJson(new Map([...b].sort())));
  });

  it('round-trips through its JSON form', () => {
    const counts = new Map([['INVITE', 3], ['OPTIONS', 1]]);
    expect(countsOf(countsJson(counts))).toEqual(counts);
  });

  it('reads escaped names right after V8 has seen a look-alike key, as JSON.parse does not (nodejs/node#63785)', () => {
    // Teaches V8's key cache a key of one backslash: a plain JSON.parse then reads the quote
    // key below as a backslash.
    JSON.parse('{"h":[],"\\\\":0}');
    expect([...countsOf('{"h":1,"\\"":2}')]).toEqual([['h', 1], ['"', 2]]);
    JSON.parse('{"\\\\":0,"a":1}');
    expect([...countsOf('{"\\"":0,"a":1}')]).toEqual([['"', 0], ['a', 1]]);
  });

  it('reads escaped names in the order and with the last-one-wins of JSON.parse, PostgreSQL spacing included', () => {
    const json = '{"b\\n": 1, "100": 2, "__proto__": 3, "b\\n": 4, "\\u00e9": 5}';
    expect([...countsOf(json)]).toEqual([['100', 2], ['b\n', 4], ['__proto__', 3], ['\u00e9', 5]]);
    for (const broken of ['{"a\\"":1', '["a\\""]', '{"a\\"":"1"}', '{"a\\"":1}x']) expect(() => countsOf(broken)).toThrow(SyntaxError);
  });

  it('writes any map of counts as JSON that reads back the same, whatever the names', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.oneof(fc.string(), fc.constantFrom('__proto__', 'constructor', '100', '"', '\\', '\u2028')), fc.nat()), { maxLength: 40 }), (entries) => {
        const counts = new Map(entries);
        const json = countsJson(counts);
        expect(JSON.parse(json)).toEqual(JSON.parse(JSON.stringify(Object.fromEntries(counts))));
        // A JSON object puts integer-like names first; which names and counts is what matters.
        expect([...countsOf(json)].sort()).toEqual([...counts].sort());
      }),
    );
    expect(countsJson(new Map())).toBe('{}');
  });
});
