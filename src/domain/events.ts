import type { HoneypotEvent } from './honeypot-event.ts';

/** What storing one event did: stored it, recognised an identical replay, or refused a conflict. */
export type IngestOutcome = 'created' | 'replayed' | 'conflict';

/** An event as the owning account reads it back. */
export interface StoredEvent {
  app_name: string;
  app_version: string;
  event_timestamp: string;
  event_uuid: string;
  created_by_node_id: string;
  collected_method: string;
  transport_type: string;
  source_ip: string;
  destination_ip: string;
  called_number: string;
  sip_method: string;
  sip_user_agent: string;
  sip_message: string;
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
  sourceIp?: string;
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
  ): Promise<Array<{ event: StoredEvent; position: EventPosition }>>;
}
