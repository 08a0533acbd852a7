import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { Account } from '../../src/domain/accounts/accounts.ts';
import type { AuditTrail } from '../../src/domain/accounts/audit.ts';
import { EventImport, type ImportProblem, type ImportSource } from '../../src/import/event-import.ts';
import type { IngestOutcome } from '../../src/domain/events/events.ts';
import type { HoneypotEvent } from '../../src/domain/events/honeypot-event.ts';
import { sampleEvent } from '../support/harness.ts';

const ACCOUNT = { account_id: '6f1d2a3b-0c4d-4e5f-8a9b-0c1d2e3f4a5b', trusted: false } as Account;

/** A source of `count` valid events, read one by one; it logs the start of each ten. */
function source(count: number, log: string[]): ImportSource & { read: number } {
  const events = Array.from({ length: count }, () => sampleEvent());
  const state = {
    kind: 'sentrypeer-log' as const,
    size: count,
    read: 0,
    done: () => state.read,
    async *records() {
      for (const item of events) {
        state.read += 1;
        if (state.read % 10 === 1) log.push(`read from ${state.read}`);
        yield { position: state.read, item };
      }
    },
    close: async () => {},
  };
  return state;
}

/**
 * The import's order of work, recorded: what the store was asked to write and when, how far the
 * source was read by then, and what happened to the indexes. The store here is a recorder, not
 * SQL: what is under test is the import's pipeline (the next batch read while the last one is
 * written, a failure stopping it), which test/cli/import.test.ts drives against real stores.
 */
function recordingImport(failOnBatch?: number, foldAlong = false) {
  const log: string[] = [];
  let batches = 0;
  let src: ReturnType<typeof source>;
  const repo = {
    async ingest(_owner: unknown, events: HoneypotEvent[]): Promise<IngestOutcome[]> {
      const batch = ++batches;
      log.push(`write ${batch} (${events.length}) with ${src.read} read`);
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (batch === failOnBatch) throw new Error('the store failed');
      log.push(`written ${batch}`);
      return events.map(() => 'created');
    },
  };
  const audit = { record: async () => {} } as unknown as AuditTrail;
  const importer = new EventImport(repo, async () => ACCOUNT, audit, {
    drop: async () => void log.push('drop indexes'),
    build: async () => void log.push('build indexes'),
  });
  return {
    log,
    run: (count: number, bulk: boolean) => {
      src = source(count, log);
      // A fold along that ends a turn of the event loop after it began (so writes may come
      // between), logging which batches had committed when it began, and when it ended.
      const fold = async () => {
        log.push(`fold from ${batches}`);
        await nextTurn();
        log.push('folded');
      };
      return importer.run(ACCOUNT.account_id, src, { batchSize: 10, bulk, ...(foldAlong ? { foldAlong: fold } : {}) });
    },
  };
}

describe('EventImport: the next batch is read while the last one is written', () => {
  it('reads ahead one batch, writes one at a time, in order, and counts every batch', async () => {
    const { log, run } = recordingImport();
    const { totals } = await run(35, false);
    expect(totals).toEqual({ read: 35, imported: 35, replayed: 0, conflict: 0, invalid: 0 });
    expect(log).toEqual([
      'read from 1',
      'write 1 (10) with 10 read',
      'read from 11',
      'written 1',
      'write 2 (10) with 20 read',
      'read from 21',
      'written 2',
      'write 3 (10) with 30 read',
      'read from 31',
      'written 3',
      'write 4 (5) with 35 read',
      'written 4',
    ]);
  });

  it('a failed write stops the import with its error, before another batch is written', async () => {
    const { log, run } = recordingImport(2);
    await expect(run(60, false)).rejects.toThrow('the store failed');
    expect(log).toEqual(['read from 1', 'write 1 (10) with 10 read', 'read from 11', 'written 1', 'write 2 (10) with 20 read', 'read from 21']);
  });

  it('folds along: after each batch commits, one fold at a time, and it ends once the last fold has', async () => {
    const { log, run } = recordingImport(undefined, true);
    await run(25, false);
    const folds = log.filter((line) => /^fold/.test(line));
    // Never two at once, whatever the timing of writes and folds.
    folds.forEach((line, i) => expect(line.startsWith(i % 2 === 0 ? 'fold from' : 'folded')).toBe(true));
    // Each began once a batch had been written, the last after the last batch.
    for (const line of folds.filter((f) => f.startsWith('fold from'))) expect(log.indexOf(line)).toBeGreaterThan(log.indexOf(`written ${line.slice('fold from '.length)}`));
    expect(folds.at(-2)).toBe('fold from 3');
    // And the import ended after the last one.
    expect(log.at(-1)).toBe('folded');
  });

  it('a bulk import drops the query indexes first and builds them again at the end, also when it fails', async () => {
    const done = recordingImport();
    await done.run(15, true);
    expect(done.log).toEqual(['drop indexes', 'read from 1', 'write 1 (10) with 10 read', 'read from 11', 'written 1', 'write 2 (5) with 15 read', 'written 2', 'build indexes']);

    const failed = recordingImport(1);
    await expect(failed.run(30, true)).rejects.toThrow('the store failed');
    expect(failed.log).toEqual(['drop indexes', 'read from 1', 'write 1 (10) with 10 read', 'read from 11', 'build indexes']);
  });
});

describe('EventImport: problems are told in the order of the source', () => {
  /** Records 1..count: those in `invalid` are not events, those in `conflicting` conflict with stored ones. */
  function mixedImport(count: number, invalid: Set<number>, conflicting: Set<number>, batchSize: number) {
    const events = new Map<string, number>();
    const told: number[] = [];
    let read = 0;
    let mostHeld = 0;
    const src: ImportSource = {
      kind: 'sentrypeer-log',
      size: count,
      done: () => read,
      async *records() {
        for (let position = 1; position <= count; position++) {
          read = position;
          const invalidSoFar = [...invalid].filter((p) => p <= position).length;
          mostHeld = Math.max(mostHeld, invalidSoFar - told.filter((p) => invalid.has(p)).length);
          if (invalid.has(position)) yield { position, item: { not: 'an event' } };
          else {
            const event = sampleEvent();
            events.set(event.event_uuid as string, position);
            yield { position, item: event };
          }
        }
      },
      close: async () => {},
    };
    const repo = {
      async ingest(_owner: unknown, batch: HoneypotEvent[]): Promise<IngestOutcome[]> {
        await new Promise((resolve) => setTimeout(resolve, 2));
        return batch.map((e) => (conflicting.has(events.get(e.event_uuid)!) ? 'conflict' : 'created'));
      },
    };
    const importer = new EventImport(repo, async () => ACCOUNT, { record: async () => {} } as unknown as AuditTrail, { drop: async () => {}, build: async () => {} });
    return {
      told,
      mostHeld: () => mostHeld,
      run: () => importer.run(ACCOUNT.account_id, src, { batchSize, onProblem: (p: ImportProblem) => void told.push(p.position) }),
    };
  }

  it('tells conflicts and invalid records interleaved by position, although the next batch is read while the last is written', async () => {
    const invalid = new Set([2, 5, 9, 12, 13, 20, 31, 33]);
    const conflicting = new Set([1, 4, 10, 11, 21, 30, 32]);
    const im = mixedImport(33, invalid, conflicting, 4);
    const { totals } = await im.run();
    expect(totals).toEqual({ read: 33, imported: 33 - invalid.size - conflicting.size, replayed: 0, conflict: conflicting.size, invalid: invalid.size });
    expect(im.told).toEqual([...invalid, ...conflicting].sort((a, b) => a - b));
  });

  it('holds back at most a batch of invalid records, however many follow an unwritten one', async () => {
    const invalid = new Set(Array.from({ length: 60 }, (_, i) => i + 2));
    const im = mixedImport(61, invalid, new Set([1]), 5);
    await im.run();
    expect(im.told).toEqual(Array.from({ length: 61 }, (_, i) => i + 1));
    expect(im.mostHeld()).toBeLessThanOrEqual(5);
  });
});
