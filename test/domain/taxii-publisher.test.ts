import { describe, expect, it } from 'vitest';
import { DEFAULT_SCORING } from '../../src/domain/intelligence/scores.ts';
import { TaxiiPublisher, type PublicationState, type TaxiiPublicationStore } from '../../src/domain/intelligence/taxii-publication.ts';
import type { IndicatorKind } from '../../src/domain/intelligence/stix-indicators.ts';

/**
 * A store whose shared data set is `pages` pages of values none of which scores (so nothing is
 * published), counting what the publisher asks of it and keeping the state it is told to. The
 * read of page `heldAt` (if given) answers when `release` is called.
 */
function storeOf(pages: number, heldAt?: number, onRead: () => void = () => {}) {
  const asked = { pagesRead: [] as string[], claims: [] as string[], sweeps: [] as string[], latest: '2026-11-01T10:00:00.000Z' };
  const states = new Map<IndicatorKind, PublicationState>();
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const store: TaxiiPublicationStore = {
    stateOf: async (kind) => states.get(kind),
    claim: async (kind) => {
      asked.claims.push(kind);
      return states.get(kind) ?? { foldSeen: undefined, changedThrough: undefined, sweptHour: undefined };
    },
    release: async () => {},
    foldSignature: async () => 'fold 1',
    latestChange: async () => asked.latest,
    changedAfter: async () => ({ candidates: [], next: undefined }),
    seenSince: async (kind, _since, page) => {
      asked.pagesRead.push(`${kind} ${page ?? 0}`);
      onRead();
      const at = Number(page ?? 0);
      if (at === heldAt) await held;
      return { candidates: [{ value: `+46${at}`, kept: undefined, object: undefined }], next: at + 1 < pages ? String(at + 1) : undefined };
    },
    liveObjects: async (kind) => {
      asked.sweeps.push(kind);
      return { candidates: [], next: undefined };
    },
    latestBodies: async () => new Map(),
    peerValuesAfter: async () => [],
    candidatesOf: async () => [],
    publish: async (kind, _holder, _versions, change) => {
      const { firstPass, ...rest } = change;
      const state: PublicationState = { ...(states.get(kind) ?? { foldSeen: undefined, changedThrough: undefined, sweptHour: undefined }) };
      for (const [field, value] of Object.entries(rest)) if (value !== undefined) Object.assign(state, { [field]: value });
      if (firstPass === null) delete state.firstPass;
      else if (firstPass) state.firstPass = firstPass;
      states.set(kind, state);
      return true;
    },
    prune: async () => 0,
  };
  return { store, asked, states, release };
}

const settings = { minScore: 50, scoring: DEFAULT_SCORING, retentionDays: 30 };

/** Starts a pass and stops the publisher while the store holds the third page's read; resolves once both ended. */
async function stopDuringThirdPage(publisher: TaxiiPublisher, { asked, release }: Pick<ReturnType<typeof storeOf>, 'asked' | 'release'>) {
  const pass = publisher.publish();
  await expect.poll(() => asked.pagesRead.length).toBe(3);
  const stopped = publisher.stop();
  release();
  await stopped;
  await pass;
}

describe('TAXII publisher', () => {
  it('reads every page of a first pass when left to run', async () => {
    const { store, asked } = storeOf(40);
    await new TaxiiPublisher(store, settings).publish();
    expect(asked.pagesRead).toHaveLength(120);
    expect(asked.claims).toEqual(['ip-addresses', 'phone-numbers', 'number-ranges']);
  });

  it('ends a pass under way after the page it is on, and starts no other collection', async () => {
    const held = storeOf(40, 2);
    const { store, asked } = held;
    // The third page is being read when the process is told to stop.
    await stopDuringThirdPage(new TaxiiPublisher(store, settings), held);
    expect(asked.pagesRead).toHaveLength(3);
    expect(asked.claims).toEqual(['ip-addresses']);
  });

  it('takes up a first pass stopped part-way at the page it had reached, with the position and hour of its start', async () => {
    const held = storeOf(40, 2);
    const { store, asked, states } = held;
    let clock = Date.parse('2026-11-01T10:59:00.000Z');
    const options = { ...settings, now: () => new Date(clock) };
    await stopDuringThirdPage(new TaxiiPublisher(store, options), held);
    // The page in flight was published whole, with where the pass stands past it.
    expect(states.get('ip-addresses')).toMatchObject({ changedThrough: undefined, firstPass: { next: '3', through: '2026-11-01T10:00:00.000Z', hour: '2026-11-01T10:00:00.000Z' } });

    // Restarted in the next hour, after the fold changed more rows.
    clock = Date.parse('2026-11-01T11:05:00.000Z');
    asked.latest = '2026-11-01T11:04:00.000Z';
    asked.pagesRead.length = 0;
    await new TaxiiPublisher(store, options).publish();
    expect(asked.pagesRead.filter((p) => p.startsWith('ip-addresses'))).toEqual(Array.from({ length: 37 }, (_, k) => `ip-addresses ${k + 3}`));
    expect(asked.pagesRead.filter((p) => p.startsWith('phone-numbers'))).toHaveLength(40);
    expect(asked.pagesRead.filter((p) => p.startsWith('number-ranges'))).toHaveLength(40);
    // The passes after it read changes from before it began; the pages it scored in the hour
    // before were swept again at its end. The other collections' first passes began this hour.
    expect(states.get('ip-addresses')).toEqual({ foldSeen: 'fold 1', changedThrough: '2026-11-01T10:00:00.000Z', sweptHour: '2026-11-01T11:00:00.000Z' });
    expect(states.get('phone-numbers')).toEqual({ foldSeen: 'fold 1', changedThrough: '2026-11-01T11:04:00.000Z', sweptHour: '2026-11-01T11:00:00.000Z' });
    expect(asked.sweeps).toEqual(['ip-addresses']);
  });

  it('reads on past a page of changes whose rows changed again since, and is not taken for quiet by it', async () => {
    const { store, asked, states } = storeOf(1);
    const hour = '2026-11-01T11:00:00.000Z';
    const through = '2026-11-01T11:04:00.000Z';
    for (const kind of ['ip-addresses', 'phone-numbers', 'number-ranges'] as const) states.set(kind, { foldSeen: 'fold 1', changedThrough: through, sweptHour: hour });
    store.foldSignature = async () => 'fold 2';
    // The store passes over entries of rows changed again since: the first page holds no row.
    const reads: Array<string | undefined> = [];
    store.changedAfter = async (kind, _since, page) => {
      reads.push(`${kind} ${page ?? 'first'}`);
      if (page === undefined) return { candidates: [], next: 'p2', changedThrough: '2026-11-01T11:04:30.000Z' };
      return { candidates: [{ value: '+46700', kept: undefined, object: undefined }], next: undefined, changedThrough: '2026-11-01T11:05:00.000Z' };
    };
    await new TaxiiPublisher(store, { ...settings, now: () => new Date('2026-11-01T11:30:00.000Z') }).publish();
    expect(asked.claims).toEqual(['ip-addresses', 'phone-numbers', 'number-ranges']);
    expect(reads).toEqual(['ip-addresses first', 'ip-addresses first', 'ip-addresses p2', 'phone-numbers first', 'phone-numbers first', 'phone-numbers p2', 'number-ranges first', 'number-ranges first', 'number-ranges p2']);
    expect(states.get('phone-numbers')).toMatchObject({ foldSeen: 'fold 2', changedThrough: '2026-11-01T11:05:00.000Z' });
  });

  it('rests between pages as long as each took, so a long pass takes at most half of the thread that answers requests', async () => {
    let now = 0;
    const rests: number[] = [];
    // Each page takes 30 ms to read, on the pass's clock.
    const { store } = storeOf(4, undefined, () => (now += 30));
    const pacing = { clock: () => now, rest: async (ms: number) => void rests.push(ms) };
    await new TaxiiPublisher(store, { ...settings, pacing }).publish();
    // Four pages in each of the three collections.
    expect(rests).toEqual(Array(12).fill(30));
  });
});
