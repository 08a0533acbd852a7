import type { EventField } from './event-fields.ts';
import type { HoneypotEvent } from './honeypot-event.ts';

/** What storing one event did: stored it, recognised an identical replay, or refused a conflict. */
export type IngestOutcome = 'created' | 'replayed' | 'conflict';

/** An event as the owning account reads it back: the 13 fields as stored, and two instants. */
export interface StoredEvent extends Record<EventField, string> {
  /** The normalised instant (UTC, nanoseconds). */
  event_time: string;
  /** When the service committed the event. */
  received_at: string;
}

/** Filters of an own-event query (docs/api.md §8), already validated and normalised. */
export interface EventFilter {
  since?: string;
  until?: string;
  numberKey?: string;
  /** An exact stored `called_number` that names no number (empty, NOT_FOUND, `test_user`…). */
  calledNumberUnkeyed?: string;
  sourceIp?: string;
  /** Text the stored source address begins with: a range's coarse part (domain/events/source-range.ts); the query narrows the rest. */
  sourceIpPrefix?: string;
  sipMethod?: string;
  nodeId?: string;
  collectedMethod?: string;
  transportType?: string;
}

/** Position after the last event of a page: newest first by (event_time, id). */
export interface EventPosition {
  eventTime: string;
  id: number;
}

/** Which way a page reads from its position: to older events (newest first) or to newer ones (oldest first). */
export type EventDirection = 'older' | 'newer';

/** Where events and their lookup aggregates are kept. */
export interface EventsRepository {
  /** Stores events of one owner, aggregates included, atomically; one outcome per event. */
  ingest(owner: { accountId: string; scope: string }, events: HoneypotEvent[]): Promise<IngestOutcome[]>;
  find(accountId: string, eventUuid: string): Promise<StoredEvent | undefined>;
  list(
    accountId: string,
    filter: EventFilter,
    after: EventPosition | undefined,
    limit: number,
    direction?: EventDirection,
  ): Promise<Array<{ event: StoredEvent; position: EventPosition }>>;
  /** How many events match, counted no further than `cap` + 1; only those newer than `newerThan` when given. */
  countUpTo(accountId: string, filter: EventFilter, cap: number, newerThan?: EventPosition): Promise<number>;
  /** The source addresses of the first `cap` matching events (newer than `newerThan` when given), for counts a range narrows further. */
  sourceAddresses(accountId: string, filter: EventFilter, cap: number, newerThan?: EventPosition): Promise<string[]>;
}
