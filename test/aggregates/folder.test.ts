import { describe, expect, it, vi } from 'vitest';
import type { FoldResult } from '../../src/store/fold/aggregate-fold.ts';
import { AggregateFolder, INTAKE_HOLD_BACKLOG, INTAKE_HOLD_LAG_MS, type AggregateChangeNotice } from '../../src/aggregates/folder.ts';

// The folder's scheduling, over a step function that stands for the store's fold step: each
// call takes the next scripted result (the real step is tested in aggregate-fold.test.ts).
function scripted(results: Array<Partial<FoldResult> | Error>) {
  const calls: number[] = [];
  const step = async (chunk: number): Promise<FoldResult> => {
    calls.push(chunk);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const next = results.shift() ?? {};
    if (next instanceof Error) throw next;
    return { folded: 0, more: false, behind: 0, changes: { numbers: [], addresses: [] }, ...next };
  };
  return { step, calls };
}

const settings = { intervalMs: 60_000, delayMs: 60_000 };
const settled = (p: Promise<void> | undefined) =>
  p === undefined ? Promise.resolve('at once') : Promise.race([p.then(() => 'resolved'), new Promise((r) => setTimeout(() => r('pending'), 500))]);

describe('the aggregate folder', () => {
  it('settles until it has had the turn, but folds once and leaves the events to the instance that holds it when asked to fold once', async () => {
    // Another instance holds the turn for two steps, then lets go.
    const settling = scripted([{ skipped: true }, { skipped: true }, { folded: 3 }]);
    await new AggregateFolder(settling.step, settings).settle(500);
    expect(settling.calls).toEqual([500, 500, 500]);
    const once = scripted([{ skipped: true }, { folded: 3 }]);
    await new AggregateFolder(once.step, settings).foldOnce(500);
    expect(once.calls).toEqual([500]);
  });

  it('holds intake while the fold is more than INTAKE_HOLD_BACKLOG events behind, and lets it go once under', async () => {
    const { step } = scripted([{ behind: INTAKE_HOLD_BACKLOG + 1, more: false }, { behind: INTAKE_HOLD_BACKLOG + 1 }, { behind: 10 }]);
    const folder = new AggregateFolder(step, settings);
    expect(await settled(folder.roomForIntake())).toBe('at once');
    await folder.settle();
    // The first step left it behind: intake waits for the steps that bring it back.
    const room = folder.roomForIntake();
    expect(room).toBeDefined();
    expect(await settled(room)).toBe('resolved');
    expect(await settled(folder.roomForIntake())).toBe('at once');
  });

  it('holds intake while the oldest event waiting for the fold is older than INTAKE_HOLD_LAG_MS, whatever their count', async () => {
    let now = 1_000_000;
    const since = (ms: number) => new Date(ms).toISOString();
    // A few events waiting, but for long: the fold, not their count, sets the pace.
    const { step } = scripted([{ behind: 5, more: false, waitingSince: since(now - INTAKE_HOLD_LAG_MS - 1) }, { behind: 5, waitingSince: since(now - 10) }]);
    const folder = new AggregateFolder(step, settings, undefined, undefined, () => now);
    await folder.settle();
    expect(folder.lagMs).toBe(INTAKE_HOLD_LAG_MS + 1);
    const room = folder.roomForIntake();
    expect(room).toBeDefined();
    // The next step leaves only a fresh event waiting: intake goes on.
    expect(await settled(room)).toBe('resolved');
    expect(folder.lagMs).toBe(10);
    expect(await settled(folder.roomForIntake())).toBe('at once');
    // This process's own commits count from when they were acknowledged, before any step sees them.
    const quiet = new AggregateFolder(scripted([]).step, settings, undefined, undefined, () => now);
    quiet.committed(new Map(), 3);
    expect(await settled(quiet.roomForIntake())).toBe('at once');
    now += INTAKE_HOLD_LAG_MS + 50;
    expect(quiet.lagMs).toBe(INTAKE_HOLD_LAG_MS + 50);
    expect(quiet.roomForIntake()).toBeDefined();
    await quiet.stop();
    await folder.stop();
  });

  it('tells its listeners of the keys its own commits named when another instance folded them in', async () => {
    // Another instance holds the turn and folds this one's events: this process's next step
    // finds nothing to fold and changes nothing itself, yet lookups here must drop those keys.
    const { step } = scripted([{ skipped: true }, {}]);
    const folder = new AggregateFolder(step, settings);
    const told: AggregateChangeNotice[] = [];
    folder.onChanges((changes) => told.push(changes));
    folder.committed(new Map([['a', ['n:+441', 'a:192.0.2.1']]]));
    expect(await settled(folder.ownWritesVisible('a', 'n:+441'))).toBe('resolved');
    expect(told).toEqual([{ numbers: ['+441'], addresses: ['192.0.2.1'] }]);
    await folder.stop();
  });

  it('tells its listeners what other processes folded, read between positions, and everything after a rebuild', async () => {
    const position = (from: number, through: number, rebuilds = 0) => ({ from, through, rebuilds });
    const { step } = scripted([
      { position: position(10, 10) },
      // Another process folded events 11 to 15 before this step.
      { position: position(15, 15) },
      // This process folds 16 and 17 itself: its own changes only.
      { folded: 2, position: position(15, 17), changes: { numbers: ['+442'], addresses: [] } },
      { position: position(17, 17, 1) },
      // Too many events folded elsewhere to read their keys.
      { position: position(90_000, 90_000, 1) },
      { position: position(90_000, 90_000, 1) },
    ]);
    const reads: Array<[number, number]> = [];
    const folder = new AggregateFolder(step, settings, undefined, async (after, upTo) => {
      reads.push([after, upTo]);
      return upTo - after > 100 ? undefined : { numbers: ['+441'], addresses: ['192.0.2.1'] };
    });
    const told: AggregateChangeNotice[] = [];
    folder.onChanges((changes) => told.push(changes));
    for (let i = 0; i < 6; i++) await folder.settle();
    expect(reads).toEqual([
      [10, 15],
      [17, 90_000],
    ]);
    expect(told).toEqual([
      // What this process may have kept from before its first step is of unknown age.
      'everything',
      { numbers: ['+441'], addresses: ['192.0.2.1'] },
      { numbers: ['+442'], addresses: [] },
      'everything',
      'everything',
    ]);
  });

  it('lets intake go on when a step fails, rather than hold it on a store that fails', async () => {
    const { step } = scripted([{ behind: INTAKE_HOLD_BACKLOG * 2 }, new Error('store away')]);
    const folder = new AggregateFolder(step, settings);
    await folder.settle();
    expect(await settled(folder.roomForIntake())).toBe('resolved');
  });

  it('makes a lookup by an account wait for the fold that covers its own unfolded events about that key, and no other lookup', async () => {
    const { step, calls } = scripted([{ folded: 1 }]);
    const folder = new AggregateFolder(step, settings);
    folder.committed(new Map([['a', ['n:+441', 'a:192.0.2.1']]]));
    expect(folder.ownWritesVisible('b', 'n:+441')).toBeUndefined();
    // The same account asking about something its unfolded events do not name: no wait.
    expect(folder.ownWritesVisible('a', 'n:+442')).toBeUndefined();
    const wait = folder.ownWritesVisible('a', 'n:+441');
    expect(wait).toBeDefined();
    // Without a key (a feed, a range lookup): any of the account's unfolded events.
    expect(folder.ownWritesVisible('a')).toBeDefined();
    expect(await settled(wait)).toBe('resolved');
    expect(calls).toHaveLength(1);
    expect(folder.ownWritesVisible('a', 'n:+441')).toBeUndefined();
    expect(folder.ownWritesVisible('a')).toBeUndefined();
    await folder.stop();
  });

  it('learns how far behind the fold is from a step another instance had the turn for', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let calls = 0;
    const empty = { folded: 0, more: false, changes: { numbers: [], addresses: [] } };
    // The first step finds the other instance's fold far behind; the next waits for the test.
    const step = async (): Promise<FoldResult> => {
      calls += 1;
      if (calls === 1) return { ...empty, skipped: true, behind: INTAKE_HOLD_BACKLOG * 3 };
      await gate;
      return { ...empty, behind: 5 };
    };
    const folder = new AggregateFolder(step, settings);
    folder.committed(new Map([['a', ['n:1']]]), 1);
    const looked = folder.ownWritesVisible('a');
    await vi.waitFor(() => expect(calls).toBe(2), { timeout: 20_000 });
    // The other instance's fold is behind: intake here waits too, until it has caught up.
    const room = folder.roomForIntake();
    expect(room).toBeDefined();
    expect(await settled(room)).toBe('pending');
    release();
    expect(await settled(room)).toBe('resolved');
    await looked;
    await folder.stop();
  });

  it('takes larger steps while the fold is behind', async () => {
    const { step, calls } = scripted([{ more: true }, { more: true }, { more: false }]);
    const folder = new AggregateFolder(step, settings);
    folder.committed(new Map([['a', ['n:1']]]));
    await folder.ownWritesVisible('a');
    expect(calls).toEqual([calls[0], calls[0]! * 2, calls[0]! * 4]);
    await folder.stop();
  });
});
