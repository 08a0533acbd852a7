import { describe, expect, it } from 'vitest';
import { FoldAlong } from '../../src/import/fold-along.ts';

/** A settle the test ends by hand, counting how many were started. */
function settles() {
  const started: Array<{ end(fail?: boolean): void }> = [];
  const settle = () =>
    new Promise<void>((resolve, reject) => {
      started.push({ end: (fail) => (fail ? reject(new Error('store down')) : resolve()) });
    });
  return { started, settle };
}

describe('folding along a load (FoldAlong)', () => {
  it('runs one settle at a time, and one more for every kick that came while it ran', async () => {
    const { started, settle } = settles();
    const along = new FoldAlong(settle);
    along.kick();
    // Three commits while the first settle runs: one settle after it covers them all.
    along.kick();
    along.kick();
    along.kick();
    expect(started).toHaveLength(1);
    let done = false;
    const waited = along.done().then(() => (done = true));
    started[0]!.end();
    await expect.poll(() => started.length).toBe(2);
    expect(done).toBe(false);
    started[1]!.end();
    await waited;
    expect(started).toHaveLength(2);
  });

  it('goes on after a settle that failed', async () => {
    const { started, settle } = settles();
    const along = new FoldAlong(settle);
    along.kick();
    started[0]!.end(true);
    await along.done();
    along.kick();
    expect(started).toHaveLength(2);
    started[1]!.end();
    await along.done();
  });

  it('has nothing to wait for when never kicked', async () => {
    await new FoldAlong(() => Promise.reject(new Error('never called'))).done();
  });
});
