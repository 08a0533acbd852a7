import type { EventDirection, EventFilter, EventPosition, EventsRepository, IngestOutcome, StoredEvent } from '../../domain/events/events.ts';
import type { HoneypotEvent } from '../../domain/events/honeypot-event.ts';
import type { IngestGroup, SqlEventsRepository } from '../repositories/events-repository.ts';
import { lookupKeysOf } from '../../domain/events/own-writes.ts';
import { isStoreUnavailable } from '../store-errors.ts';

/** Stores several owners' events in one transaction; one outcome list per group. */
export interface GroupWriter {
  ingestGroups(groups: IngestGroup[]): Promise<IngestOutcome[][]>;
}

/**
 * How a commit gathers a stream of submissions: while one flows (the last commit ended at most
 * `streamMs` ago) and fewer than `events` wait, the next commit waits `ms` for more.
 */
export interface Gathering {
  ms: number;
  events: number;
  streamMs: number;
}

interface Waiting extends IngestGroup {
  resolve(outcomes: IngestOutcome[]): void;
  reject(error: unknown): void;
}

/**
 * Group commit: submissions that arrive while a commit is being prepared, or while earlier
 * commits are in flight (up to `maxInFlight`), are stored in one transaction, and every caller
 * is answered only after that transaction has committed. Durability per event is unchanged;
 * the fsync is shared.
 */
export class GroupCommit implements EventsRepository {
  private readonly reader: SqlEventsRepository;
  private readonly writer: GroupWriter;
  private readonly maxInFlight: number;
  /** Told which accounts' events each acknowledged commit stored (the aggregate fold). */
  private readonly onCommitted: ((keysByAccount: Map<string, Set<string>>, events: number) => void) | undefined;
  /** Asked before each commit; a promise holds the commit back (the fold's backpressure). */
  private readonly beforeCommit: (() => Promise<void> | undefined) | undefined;
  private readonly gathering: Gathering | undefined;
  private waiting: Waiting[] = [];
  private waitingEvents = 0;
  private scheduled = false;
  private inFlight = 0;
  /** When the last commit ended (performance.now()), or -Infinity. */
  private lastCommitEnded = Number.NEGATIVE_INFINITY;

  /** `writer` stores the groups (by default `reader` itself); `reader` answers reads. */
  constructor(
    reader: SqlEventsRepository,
    writer: GroupWriter = reader,
    {
      maxInFlight = Number.POSITIVE_INFINITY,
      onCommitted,
      beforeCommit,
      gathering,
    }: { maxInFlight?: number; onCommitted?: (keysByAccount: Map<string, Set<string>>, events: number) => void; beforeCommit?: () => Promise<void> | undefined; gathering?: Gathering } = {},
  ) {
    this.reader = reader;
    this.writer = writer;
    this.maxInFlight = maxInFlight;
    this.gathering = gathering;
    this.onCommitted = onCommitted;
    this.beforeCommit = beforeCommit;
  }

  ingest(owner: { accountId: string; scope: string }, events: HoneypotEvent[]): Promise<IngestOutcome[]> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ owner, events, resolve, reject });
      this.waitingEvents += events.length;
      this.schedule();
    });
  }

  find(accountId: string, eventUuid: string): Promise<StoredEvent | undefined> {
    return this.reader.find(accountId, eventUuid);
  }

  list(accountId: string, filter: EventFilter, after: EventPosition | undefined, limit: number, direction?: EventDirection) {
    return this.reader.list(accountId, filter, after, limit, direction);
  }

  countUpTo(accountId: string, filter: EventFilter, cap: number, newerThan?: EventPosition) {
    return this.reader.countUpTo(accountId, filter, cap, newerThan);
  }

  sourceAddresses(accountId: string, filter: EventFilter, cap: number, newerThan?: EventPosition) {
    return this.reader.sourceAddresses(accountId, filter, cap, newerThan);
  }

  /**
   * A group that the store refused for its content must not take the others with it (they may
   * be other accounts' events): each is tried in a transaction of its own.
   */
  private async oneByOne(batch: Waiting[]): Promise<void> {
    for (const w of batch) {
      try {
        const [outcomes] = await this.writer.ingestGroups([w]);
        this.onCommitted?.(lookupKeysByAccount([w]), w.events.length);
        w.resolve(outcomes ?? []);
      } catch (error) {
        w.reject(error);
      }
    }
  }

  private schedule(): void {
    if (this.scheduled || this.waiting.length === 0 || this.inFlight >= this.maxInFlight) return;
    this.scheduled = true;
    const gathering = this.gathering;
    if (gathering && this.waitingEvents < gathering.events && performance.now() - this.lastCommitEnded <= gathering.streamMs) setTimeout(() => void this.flush(), gathering.ms);
    else setImmediate(() => void this.flush());
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    const batch = this.waiting;
    this.waiting = [];
    this.waitingEvents = 0;
    this.inFlight += 1;
    try {
      await this.beforeCommit?.();
      const outcomes = await this.writer.ingestGroups(batch);
      this.onCommitted?.(lookupKeysByAccount(batch), batch.reduce((sum, w) => sum + w.events.length, 0));
      batch.forEach((w, i) => w.resolve(outcomes[i] ?? []));
    } catch (error) {
      if (batch.length > 1 && !isStoreUnavailable(error)) await this.oneByOne(batch);
      else for (const w of batch) w.reject(error);
    } finally {
      this.inFlight -= 1;
      this.lastCommitEnded = performance.now();
      this.schedule();
    }
  }
}

/** Per account, the lookup keys (numbers and addresses) its stored events name. */
function lookupKeysByAccount(groups: IngestGroup[]): Map<string, Set<string>> {
  const keys = new Map<string, Set<string>>();
  for (const { owner, events } of groups) {
    let account = keys.get(owner.accountId);
    if (!account) keys.set(owner.accountId, (account = new Set()));
    for (const event of events) for (const key of lookupKeysOf(event)) account.add(key);
  }
  return keys;
}
