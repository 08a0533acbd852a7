import type { EventFilter, EventPosition, EventsRepository, IngestOutcome, StoredEvent } from '../domain/events.ts';
import type { HoneypotEvent } from '../domain/honeypot-event.ts';
import type { IngestGroup, SqlEventsRepository } from './events-repository.ts';

interface Waiting extends IngestGroup {
  resolve(outcomes: IngestOutcome[]): void;
  reject(error: unknown): void;
}

/**
 * Group commit for a single-writer store: submissions that arrive while a commit is being
 * prepared are stored in one transaction, and every caller is answered only after that
 * transaction has committed. Durability per event is unchanged; the fsync is shared.
 */
export class GroupCommit implements EventsRepository {
  private readonly inner: SqlEventsRepository;
  private waiting: Waiting[] = [];
  private scheduled = false;

  constructor(inner: SqlEventsRepository) {
    this.inner = inner;
  }

  ingest(owner: { accountId: string; scope: string }, events: HoneypotEvent[]): Promise<IngestOutcome[]> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ owner, events, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  find(accountId: string, eventUuid: string): Promise<StoredEvent | undefined> {
    return this.inner.find(accountId, eventUuid);
  }

  list(accountId: string, filter: EventFilter, after: EventPosition | undefined, limit: number) {
    return this.inner.list(accountId, filter, after, limit);
  }

  private async flush(): Promise<void> {
    const batch = this.waiting;
    this.waiting = [];
    this.scheduled = false;
    try {
      const outcomes = await this.inner.ingestGroups(batch);
      batch.forEach((w, i) => w.resolve(outcomes[i] ?? []));
    } catch (error) {
      for (const w of batch) w.reject(error);
    }
  }
}
