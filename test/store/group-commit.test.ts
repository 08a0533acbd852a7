import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { IngestOutcome } from '../../src/domain/events/events.ts';
import type { HoneypotEvent } from '../../src/domain/events/honeypot-event.ts';
import type { IngestGroup, SqlEventsRepository } from '../../src/store/repositories/events-repository.ts';
import { GroupCommit, type GroupWriter } from '../../src/store/writer/group-commit.ts';

/**
 * The grouping policy alone, over a writer that records what it was asked: the store's own
 * behaviour is covered by the intake tests on both stores.
 */
class RecordingWriter implements GroupWriter {
  readonly calls: IngestGroup[][] = [];
  private readonly refuse: (group: IngestGroup) => Error | undefined;
  private readonly until: Promise<unknown> | undefined;

  /** `until`: each store call ends once it settles (a commit in flight for as long as the test says); without it, at once. */
  constructor(refuse: (group: IngestGroup) => Error | undefined = () => undefined, until?: Promise<unknown>) {
    this.refuse = refuse;
    this.until = until;
  }

  async ingestGroups(groups: IngestGroup[]): Promise<IngestOutcome[][]> {
    this.calls.push(groups);
    await this.until;
    for (const group of groups) {
      const error = this.refuse(group);
      if (error) throw error;
    }
    return groups.map((g) => g.events.map((): IngestOutcome => 'created'));
  }
}

const event = (uuid: string) => ({ event_uuid: uuid }) as HoneypotEvent;
const owner = (accountId: string) => ({ accountId, scope: accountId });
const unusedReader = {} as SqlEventsRepository;

describe('group commit', () => {
  it('stores submissions that arrive together in one call, answering each its own outcomes', async () => {
    const writer = new RecordingWriter();
    const commit = new GroupCommit(unusedReader, writer);
    const answers = await Promise.all([commit.ingest(owner('a'), [event('1')]), commit.ingest(owner('b'), [event('2'), event('3')])]);
    expect(answers).toEqual([['created'], ['created', 'created']]);
    expect(writer.calls).toHaveLength(1);
  });

  it('with one commit in flight, gathers what arrives meanwhile into the next group', async () => {
    let endFirstCommit!: () => void;
    const writer = new RecordingWriter(undefined, new Promise<void>((resolve) => (endFirstCommit = resolve)));
    const commit = new GroupCommit(unusedReader, writer, { maxInFlight: 1 });
    const first = commit.ingest(owner('a'), [event('1')]);
    await expect.poll(() => writer.calls.length).toBe(1);
    const later = [2, 3, 4].map((n) => commit.ingest(owner('a'), [event(String(n))]));
    endFirstCommit();
    await Promise.all([first, ...later]);
    expect(writer.calls.map((groups) => groups.length)).toEqual([1, 3]);
  });

  it('does not let one refused group fail the others: each is retried alone', async () => {
    const poison = Object.assign(new Error('index row size exceeds maximum'), { code: '54000' });
    const writer = new RecordingWriter((group) => (group.owner.accountId === 'bad' ? poison : undefined));
    const commit = new GroupCommit(unusedReader, writer);
    const results = await Promise.allSettled([commit.ingest(owner('a'), [event('1')]), commit.ingest(owner('bad'), [event('2')]), commit.ingest(owner('c'), [event('3')])]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toBe(poison);
  });

  it('fails the whole group at once when the store is unavailable, without retrying into it', async () => {
    const down = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const writer = new RecordingWriter(() => down);
    const commit = new GroupCommit(unusedReader, writer);
    const results = await Promise.allSettled([commit.ingest(owner('a'), [event('1')]), commit.ingest(owner('b'), [event('2')])]);
    expect(results.every((r) => r.status === 'rejected')).toBe(true);
    expect(writer.calls).toHaveLength(1);
  });

  describe('gathering a stream', () => {
    // The clock and the gathering's timer are the test's: time passes only when it says so, and
    // the store calls below end at once.
    beforeEach(() => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    });
    afterEach(() => {
      vi.useRealTimers();
    });
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    /** What `p` resolved to once the queued work has run with no time passing, or 'waiting'. */
    async function withoutTimePassing<T>(p: Promise<T>): Promise<T | 'waiting'> {
      let outcome: { value: T } | undefined;
      void p.then((value) => (outcome = { value }));
      for (let i = 0; i < 10 && !outcome; i++) await turn();
      return outcome ? outcome.value : 'waiting';
    }

    it('makes the commit after another wait for more while few events wait', async () => {
      const writer = new RecordingWriter();
      const commit = new GroupCommit(unusedReader, writer, { maxInFlight: 1, gathering: { ms: 1000, events: 16, streamMs: 60_000 } });
      await commit.ingest(owner('a'), [event('1')]);
      const a = commit.ingest(owner('a'), [event('2')]);
      // Past the moment an ungathered commit would have taken `a` alone.
      expect(await withoutTimePassing(a)).toBe('waiting');
      const b = commit.ingest(owner('b'), [event('3')]);
      await vi.advanceTimersByTimeAsync(1000);
      await Promise.all([a, b]);
      expect(writer.calls.map((groups) => groups.length)).toEqual([1, 2]);
      // Without gathering, the second submission goes alone.
      const plain = new RecordingWriter();
      const ungathered = new GroupCommit(unusedReader, plain, { maxInFlight: 1 });
      await ungathered.ingest(owner('a'), [event('1')]);
      const c = ungathered.ingest(owner('a'), [event('2')]);
      expect(await withoutTimePassing(c)).toEqual(['created']);
      await ungathered.ingest(owner('b'), [event('3')]);
      expect(plain.calls.map((groups) => groups.length)).toEqual([1, 1, 1]);
    });

    it('does not make a lone submission wait: the first, one after a quiet spell, or enough events at once', async () => {
      const writer = new RecordingWriter();
      const commit = new GroupCommit(unusedReader, writer, { maxInFlight: 1, gathering: { ms: 60_000, events: 3, streamMs: 50 } });
      expect(await withoutTimePassing(commit.ingest(owner('a'), [event('1')]))).toEqual(['created']);
      expect(await withoutTimePassing(commit.ingest(owner('a'), [event('2'), event('3'), event('4')]))).toEqual(['created', 'created', 'created']);
      // Within the stream, one event alone waits for the gathering.
      const gathered = commit.ingest(owner('a'), [event('5')]);
      expect(await withoutTimePassing(gathered)).toBe('waiting');
      await vi.advanceTimersByTimeAsync(60_000);
      expect(await gathered).toEqual(['created']);
      vi.advanceTimersByTime(51); // past streamMs: the stream has stopped
      expect(await withoutTimePassing(commit.ingest(owner('a'), [event('6')]))).toEqual(['created']);
    });
  });
});
