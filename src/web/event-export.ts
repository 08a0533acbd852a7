import type { Account } from '../domain/accounts/accounts.ts';
import { csvField } from '../domain/csv-cells.ts';
import { EVENT_FIELDS } from '../domain/events/event-fields.ts';
import { MAX_PAGE, type EventQuery, type EventQueryInput } from '../domain/events/event-query.ts';
import type { StoredEvent } from '../domain/events/events.ts';

/** The columns of an export: the 13 fields as stored, then the two instants. */
export const EXPORT_COLUMNS: readonly (keyof StoredEvent)[] = [...EVENT_FIELDS, 'event_time', 'received_at'];

/**
 * Every event the filters select, page after page through the same query and cursor as
 * `GET /api/events` (docs/api.md §8), so an export holds one page in memory whatever its size.
 */
export async function* exportedEvents(query: EventQuery, account: Account, filters: EventQueryInput): AsyncGenerator<StoredEvent> {
  let cursor: string | null = null;
  do {
    const page = await query.list(account, { ...filters, limit: MAX_PAGE, ...(cursor ? { cursor } : {}) });
    yield* page.data;
    cursor = page.next_cursor;
  } while (cursor);
}

/** CSV (RFC 4180): a header line, then one line per event, CRLF-terminated. */
export async function* csvLines(events: AsyncIterable<StoredEvent>): AsyncGenerator<string> {
  yield `${EXPORT_COLUMNS.join(',')}\r\n`;
  for await (const event of events) yield `${EXPORT_COLUMNS.map((c) => csvField(event[c])).join(',')}\r\n`;
}

/** NDJSON: one JSON object per event and line. */
export async function* ndjsonLines(events: AsyncIterable<StoredEvent>): AsyncGenerator<string> {
  for await (const event of events) yield `${JSON.stringify(event)}\n`;
}
