import type { Account } from '../domain/accounts/accounts.ts';
import type { AuditTrail } from '../domain/accounts/audit.ts';
import { UnreadableItem, uuidOf } from '../domain/events/event-intake.ts';
import type { EventsRepository, IngestOutcome } from '../domain/events/events.ts';
import type { FieldError } from '../domain/field-error.ts';
import { validateHoneypotEvent, type HoneypotEvent } from '../domain/events/honeypot-event.ts';
import { writeScopeOf } from '../domain/visibility.ts';
import { FoldAlong } from './fold-along.ts';

/** One record of an import source: where it is (a line number, a row id) and what it holds. */
export interface ImportRecord {
  position: number;
  /** The record as read: an object to validate as an event, or an UnreadableItem. */
  item: unknown;
}

/** Events to import, read from a file (a SentryPeer JSON log or database: import/sentrypeer-files.ts). */
export interface ImportSource {
  /** What the file is, for reports. */
  readonly kind: 'sentrypeer-log' | 'sentrypeer-database';
  /** How much there is to read, in the unit of `done()`: bytes of a log, rows of a database. */
  readonly size: number;
  /** How much has been read so far, in the unit of `size`. */
  done(): number;
  records(): AsyncIterable<ImportRecord>;
  close(): Promise<void>;
}

/** What an import did, record by record. */
export interface ImportTotals {
  /** Records read (blank lines aside). */
  read: number;
  /** Stored now. */
  imported: number;
  /** Already stored with the same content: a re-run, or an event that reached the API too. */
  replayed: number;
  /** Refused: the uuid is stored with other content (docs/api.md §5). */
  conflict: number;
  /** Refused: not an event by the rules of docs/api.md §5. */
  invalid: number;
}

/** A record not imported, and why. */
export interface ImportProblem {
  position: number;
  status: 'invalid' | 'conflict';
  event_uuid: string | null;
  errors?: FieldError[];
}

/** How an import runs, and who hears of it. */
export interface ImportOptions {
  /** Events stored per transaction; DEFAULT_IMPORT_BATCH unless given. */
  batchSize?: number;
  /** After each transaction: the totals so far and how much of the source was read. */
  onProgress?(totals: ImportTotals, done: number, size: number): void;
  /** For each record not imported, in the source's order. */
  onProblem?(problem: ImportProblem): void;
  /**
   * Load with the events' query indexes set aside, and build them again at the end (by
   * sorting, at once): for a first load or a store no server uses meanwhile (docs/operations.md).
   */
  bulk?: boolean;
  /** When the import moves to a stage of its own (building the indexes again), what it is. */
  onStage?(stage: string): void;
  /**
   * Folds the events stored so far into the lookup aggregates, once: given where the fold runs
   * beside the import's writes (PostgreSQL), it is called after each batch commits, one call at
   * a time (fold-along.ts), and the import ends once the last call has.
   */
  foldAlong?(): Promise<void>;
}

/**
 * The store's secondary indexes on events (the event queries'): a bulk load sets them aside, so
 * each event writes one index (its uuid's, which tells replays) instead of five in random
 * order, and builds them again at the end. The store builds any that are missing whenever it is
 * opened, so an import that stops half-way leaves none missing for long.
 */
export interface EventQueryIndexes {
  drop(): Promise<void>;
  build(): Promise<void>;
}

/**
 * Events per transaction unless told otherwise. A transaction ends in one commit (WAL writes,
 * fsync, checkpoint), and a larger one touches each hot index and aggregate page once for more
 * events: measured on SQLite with a generated log of 200,000 events over 20,000 numbers, 5,000 per
 * transaction ran at 5,200 events/s, 10,000 at 5,800, 20,000 at 7,100. But on SQLite a transaction holds the store's one
 * write lock throughout, and a server's intake waits for it at most 5 s (its busy timeout):
 * 10,000 events hold it 1.7–2.3 s on the machine of docs/performance.md, 20,000 up to 4.1 s.
 * Since the next batch is read while the last one is written (on the writer thread), larger
 * batches no longer pay: a bulk import of the same log ran at 12,379 events/s in batches of
 * 5,000, 11,877 of 10,000, 10,862 of 20,000 and 10,621 of 50,000 (bench/suites/import.ts --bulk).
 */
export const DEFAULT_IMPORT_BATCH = 10_000;

/**
 * The operator's bulk import (docs/operations.md): events from a file into one account, or,
 * for a trusted account, into the shared data set (its trust decides the scope, as at intake,
 * docs/api.md §6). Each event is validated as intake validates it and stored through the same
 * repository ingest, in large transactions: idempotent per event_uuid, and the lookup
 * aggregates kept exactly as intake keeps them. No plan is checked: the operator imports,
 * not a client submitting.
 *
 * Resumable by idempotency alone: each transaction commits whole events (the fold adds them to
 * the aggregates after, as it does intake's), so an interrupted import has stored whole batches,
 * and running it again stores what is missing while every event already there answers as a
 * replay. A bulk import (`bulk`) loads the same way with the events' query indexes set aside.
 */
export class EventImport {
  private readonly repo: Pick<EventsRepository, 'ingest'>;
  private readonly getAccount: (accountId: string) => Promise<Account>;
  private readonly audit: AuditTrail;
  private readonly indexes: EventQueryIndexes;

  /**
   * `repo` should store on a thread other than this one (the SQLite writer thread) where there
   * is one: the next batch is read and validated here while the last one is written there.
   */
  constructor(repo: Pick<EventsRepository, 'ingest'>, getAccount: (accountId: string) => Promise<Account>, audit: AuditTrail, indexes: EventQueryIndexes) {
    this.repo = repo;
    this.getAccount = getAccount;
    this.audit = audit;
    this.indexes = indexes;
  }

  /** Imports every record of `source` into the account; resolves with the totals once the last batch has committed. */
  async run(accountId: string, source: ImportSource, options: ImportOptions): Promise<{ account: Account; scope: string; totals: ImportTotals }> {
    const account = await this.getAccount(accountId);
    const owner = { accountId: account.account_id, scope: writeScopeOf(account) };
    const totals: ImportTotals = { read: 0, imported: 0, replayed: 0, conflict: 0, invalid: 0 };
    const batchSize = options.batchSize ?? DEFAULT_IMPORT_BATCH;
    let batch: Array<{ position: number; event: HoneypotEvent }> = [];
    // The clock of the "at most 24 hours in the future" rule, read once per batch.
    let now = new Date();
    // The batch being written while the next one is read: one at a time, so a failed write stops
    // the import before another batch is sent, and the totals count batches in order.
    let writing: Promise<void> = Promise.resolve();
    let inFlight = false;
    // Problems are told in the source's order: an invalid record read while an earlier one's
    // outcome is still unknown (in a batch not yet written) waits here for it.
    const problems = new ProblemsInOrder((p) => options.onProblem?.(p));
    const folding = options.foldAlong && new FoldAlong(options.foldAlong);

    const count = (sent: typeof batch, outcomes: IngestOutcome[]) => {
      const conflicts: ImportProblem[] = [];
      outcomes.forEach((outcome, i) => {
        if (outcome === 'created') totals.imported += 1;
        else if (outcome === 'replayed') totals.replayed += 1;
        else {
          totals.conflict += 1;
          conflicts.push({ position: sent[i]!.position, status: 'conflict', event_uuid: sent[i]!.event.event_uuid });
        }
      });
      inFlight = false;
      folding?.kick();
      // Every record before the next unwritten one now has its outcome.
      problems.settled(conflicts, batch[0]?.position ?? Infinity);
      options.onProgress?.({ ...totals }, source.done(), source.size);
    };
    const invalid = async (p: ImportProblem) => {
      totals.invalid += 1;
      if (!inFlight && batch.length === 0) return problems.tell(p);
      problems.hold(p);
      // A source of mostly invalid records must not be held in memory whole: write what is
      // waiting now, and tell what it held back.
      if (problems.held >= batchSize) {
        await flush();
        await writing;
      }
    };
    const flush = async () => {
      await writing;
      if (batch.length === 0) return;
      const sent = batch;
      batch = [];
      now = new Date();
      inFlight = true;
      writing = this.repo.ingest(
        owner,
        sent.map((b) => b.event),
      ).then((outcomes) => count(sent, outcomes));
      // Awaited at the next flush: until then a failure must not count as unhandled.
      writing.catch(() => {});
    };

    if (options.bulk) await this.indexes.drop();
    try {
      for await (const { position, item } of source.records()) {
        totals.read += 1;
        if (item instanceof UnreadableItem) {
          await invalid({ position, status: 'invalid', event_uuid: null, errors: [{ field: '(record)', message: item.message }] });
          continue;
        }
        const result = validateHoneypotEvent(item, now);
        if (!result.ok) {
          await invalid({ position, status: 'invalid', event_uuid: uuidOf(item), errors: result.errors });
          continue;
        }
        batch.push({ position, event: result.event });
        if (batch.length >= batchSize) await flush();
      }
      await flush();
      await writing;
      problems.settled([], Infinity);
      options.onProgress?.({ ...totals }, source.done(), source.size);
    } finally {
      try {
        // Built again whether the load finished or not: a store is not left without them. A fold
        // along goes on meanwhile: it reads the events by id, which no query index serves.
        if (options.bulk) {
          await writing.catch(() => {});
          options.onStage?.('building the event indexes again');
          await this.indexes.build();
        }
      } finally {
        // Even an import that failed leaves no fold running on a store about to close.
        await folding?.done();
      }
    }
    await this.audit.record({
      action: 'events.imported',
      actor: 'operator',
      accountId: account.account_id,
      detail: { source: source.kind, scope: owner.scope === account.account_id ? 'account' : 'shared', ...totals },
    });
    return { account, scope: owner.scope, totals };
  }
}

/** Problems told in position order, the invalid ones held until every record before them has its outcome. */
class ProblemsInOrder {
  private readonly report: (problem: ImportProblem) => void;
  private waiting: ImportProblem[] = [];

  constructor(report: (problem: ImportProblem) => void) {
    this.report = report;
  }

  /** How many are held. */
  get held(): number {
    return this.waiting.length;
  }

  tell(problem: ImportProblem): void {
    this.report(problem);
  }

  hold(problem: ImportProblem): void {
    this.waiting.push(problem);
  }

  /**
   * A batch's outcomes are known: its conflicts are told together with the held problems before
   * `before` (the first record whose outcome is still unknown), merged in position order. Both
   * lists are in position order already, as the source was read.
   */
  settled(conflicts: ImportProblem[], before: number): void {
    let ready = 0;
    while (ready < this.waiting.length && this.waiting[ready]!.position < before) ready++;
    const held = this.waiting.slice(0, ready);
    this.waiting = this.waiting.slice(ready);
    let c = 0;
    let h = 0;
    while (c < conflicts.length || h < held.length) {
      if (h === held.length || (c < conflicts.length && conflicts[c]!.position < held[h]!.position)) this.report(conflicts[c++]!);
      else this.report(held[h++]!);
    }
  }
}
