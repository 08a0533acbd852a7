import { describe, expect, it } from 'vitest';
import { DEFAULT_SCORING } from '../../src/domain/scores.ts';
import { TaxiiPublisher, type TaxiiPublicationStore } from '../../src/domain/taxii-publication.ts';

/**
 * A store whose shared data set is `pages` pages of values none of which scores (so nothing is
 * published), counting what the publisher asks of it. The read of page `heldAt` (if given)
 * answers when `release` is called.
 */
function storeOf(pages: number, heldAt?: number, onRead: () => void = () => {}) {
  const asked = { pagesRead: 0, claims: [] as string[] };
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const store: TaxiiPublicationStore = {
    stateOf: async () => undefined,
    claim: async (kind) => {
      asked.claims.push(kind);
      return { foldSeen: undefined, changedThrough: undefined, sweptHour: undefined };
    },
    foldSignature: async () => 'fold 1',
    latestChange: async () => undefined,
    changedAfter: async () => ({ candidates: [], next: undefined }),
    seenSince: async (_kind, _since, page) => {
      asked.pagesRead += 1;
      onRead();
      const at = Number(page ?? 0);
      if (at === heldAt) await held;
      return { candidates: [{ value: `+46${at}`, kept: undefined, object: undefined }], next: at + 1 < pages ? String(at + 1) : undefined };
    },
    liveObjects: async () => ({ candidates: [], next: undefined }),
    latestBodies: async () => new Map(),
    publish: async () => true,
    prune: async () => 0,
  };
  return { store, asked, release };
}

const settings = { minScore: 50, scoring: DEFAULT_SCORING, retentionDays: 30 };

describe('TAXII publisher', () => {
  it('reads every page of a first pass when left to run', async () => {
    const { store, asked } = storeOf(40);
    await new TaxiiPublisher(store, settings).publish();
    expect(asked.pagesRead).toBe(80);
    expect(asked.claims).toEqual(['ip-addresses', 'phone-numbers']);
  });

  it('ends a pass under way after the page it is on, and starts no other collection', async () => {
    const { store, asked, release } = storeOf(40, 2);
    const publisher = new TaxiiPublisher(store, settings);
    const pass = publisher.publish();
    // The third page is being read when the process is told to stop.
    await expect.poll(() => asked.pagesRead).toBe(3);
    const stopped = publisher.stop();
    release();
    await stopped;
    await pass;
    expect(asked.pagesRead).toBe(3);
    expect(asked.claims).toEqual(['ip-addresses']);
  });

  it('rests between pages as long as each took, so a long pass takes at most half of the thread that answers requests', async () => {
    let now = 0;
    const rests: number[] = [];
    // Each page takes 30 ms to read, on the pass's clock.
    const { store } = storeOf(4, undefined, () => (now += 30));
    const pacing = { clock: () => now, rest: async (ms: number) => void rests.push(ms) };
    await new TaxiiPublisher(store, { ...settings, pacing }).publish();
    // Four pages in each collection.
    expect(rests).toEqual(Array(8).fill(30));
  });
});
