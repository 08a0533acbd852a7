import { describe, expect, it } from 'vitest';
import { KnownKeys } from '../../src/aggregates/known-keys.ts';
import type { KeySource, LookupKind } from '../../src/domain/lookups/lookup-aggregates.ts';

/**
 * A store of keys by kind, read in pages of `pageSize`; each load can be held until released, or
 * made to fail. Counts the pages read.
 */
function source(initial: Record<Exclude<LookupKind, 'range'>, string[]> & { range?: string[] }, pageSize = 100_000) {
  const kept: Record<LookupKind, string[]> = { number: [...initial.number], ip: [...initial.ip], range: [...(initial.range ?? [])] };
  let loads = 0;
  let gate: Promise<void> | undefined;
  let fail = false;
  let pagesRead = 0;
  const keySource: KeySource = {
    async count(kind) {
      loads += kind === 'number' ? 1 : 0;
      if (fail) throw new Error('store away');
      return kept[kind].length;
    },
    async *keys(kind) {
      await gate;
      const keys = [...kept[kind]];
      for (let i = 0; i < keys.length; i += pageSize) {
        pagesRead += 1;
        yield keys.slice(i, i + pageSize);
      }
    },
  };
  return {
    keySource,
    kept,
    loads: () => loads,
    pagesRead: () => pagesRead,
    hold() {
      let release!: () => void;
      gate = new Promise((resolve) => (release = resolve));
      return () => {
        gate = undefined;
        release();
      };
    },
    failing: (value: boolean) => (fail = value),
  };
}

/** Asks (which starts a load when one is due) and lets the load's few awaits run. */
const loaded = async (known: KnownKeys) => {
  known.mayExist('number', 'asked');
  for (let i = 0; i < 50; i++) await new Promise((resolve) => setImmediate(resolve));
  return known;
};

describe('KnownKeys', () => {
  it('lets every key through until loaded, then only the keys the aggregates hold (and few others)', async () => {
    const store = source({ number: ['+441', '+442'], ip: ['192.0.2.1'] });
    const known = new KnownKeys(store.keySource);
    expect(store.loads()).toBe(0);
    expect(known.mayExist('number', '+449')).toBe(true);
    await loaded(known);
    expect(store.loads()).toBe(1);
    expect(known.mayExist('number', '+441')).toBe(true);
    expect(known.mayExist('number', '+442')).toBe(true);
    expect(known.mayExist('ip', '192.0.2.1')).toBe(true);
    // Kinds apart: an address is not a number.
    const absent = Array.from({ length: 10_000 }, (_, i) => `+4420${i}`);
    const falsePositives = absent.filter((key) => known.mayExist('number', key)).length;
    expect(falsePositives).toBeLessThan(200);
    expect(known.mayExist('ip', '+441')).toBe(false);
  });

  it('never loses a key: 100,000 loaded and 100,000 added are all known', async () => {
    const numbers = Array.from({ length: 100_000 }, (_, i) => `+46${700_000_000 + i}`);
    const known = new KnownKeys(source({ number: numbers, ip: [] }).keySource);
    await loaded(known);
    const added = Array.from({ length: 100_000 }, (_, i) => `+47${i}`);
    known.add(added.map((key) => ({ kind: 'number', key })));
    expect([...numbers, ...added].every((key) => known.mayExist('number', key))).toBe(true);
  });

  it('lets other work run between pages of a load, which on a large store lasts seconds', async () => {
    const store = source({ number: Array.from({ length: 30 }, (_, i) => `+46${i}`), ip: [] }, 10);
    const known = new KnownKeys(store.keySource);
    // A request arriving as the load starts is a task of the event loop, as this one is.
    const pagesWhenServed = new Promise<number>((resolve) => setImmediate(() => resolve(store.pagesRead())));
    known.mayExist('number', 'asked');
    expect(await pagesWhenServed).toBeLessThan(3);
    await loaded(known);
    expect(store.pagesRead()).toBe(3);
    expect(known.mayExist('number', '+4629')).toBe(true);
  });

  it('keeps the keys a fold adds while it loads', async () => {
    const store = source({ number: ['+441'], ip: [] });
    const known = new KnownKeys(store.keySource);
    const release = store.hold();
    await loaded(known);
    // Folded after the load read the store: only the notice tells of it.
    known.add([{ kind: 'number', key: '+443' }]);
    release();
    await loaded(known);
    expect(known.mayExist('number', '+443')).toBe(true);
    expect(known.mayExist('number', '+441')).toBe(true);
  });

  it('forgets and loads again on reload (a rebuild), and does not publish a load a reload overtook', async () => {
    const store = source({ number: ['+441'], ip: [] });
    const known = new KnownKeys(store.keySource);
    await loaded(known);
    expect(known.mayExist('number', '+442')).toBe(false);
    // A rebuild added +442 without a fold's notice.
    const release = store.hold();
    known.reload();
    await loaded(known);
    expect(known.mayExist('number', '+442')).toBe(true);
    store.kept.number.push('+442');
    known.reload();
    release();
    await loaded(known);
    expect(store.loads()).toBe(2);
    // The second load finished after the reload: its filter is not used, and the next ask loads.
    expect(known.mayExist('number', '+449')).toBe(true);
    await loaded(known);
    expect(store.loads()).toBe(3);
    expect(known.mayExist('number', '+442')).toBe(true);
    expect(known.mayExist('number', '+449')).toBe(false);
  });

  it('loads again, larger, once more keys were added than it was sized for', async () => {
    const store = source({ number: [], ip: [] });
    const known = new KnownKeys(store.keySource);
    await loaded(known);
    known.add(Array.from({ length: 200_001 }, (_, i) => ({ kind: 'number' as const, key: `+48${i}` })));
    await loaded(known);
    expect(store.loads()).toBe(2);
  });

  it('lets every key through while the store cannot be read, and tries again 5 s after a failure', async () => {
    const store = source({ number: ['+441'], ip: [] });
    const errors: unknown[] = [];
    let now = 1_000_000;
    const known = new KnownKeys(store.keySource, (err) => errors.push(err), () => now);
    store.failing(true);
    await loaded(known);
    expect(errors).toHaveLength(1);
    expect(known.mayExist('number', '+449')).toBe(true);
    await loaded(known);
    expect(store.loads()).toBe(1);
    store.failing(false);
    now += 5000;
    await loaded(known);
    expect(store.loads()).toBe(2);
    expect(known.mayExist('number', '+449')).toBe(false);
  });

  it('loads nothing once stopped', async () => {
    const store = source({ number: ['+441'], ip: [] });
    const known = new KnownKeys(store.keySource);
    known.stop();
    await loaded(known);
    expect(store.loads()).toBe(0);
  });
});
