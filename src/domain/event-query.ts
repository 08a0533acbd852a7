import type { Account } from './accounts.ts';
import { ServiceError } from './errors.ts';
import { parseEventTimestamp } from './event-timestamp.ts';
import type { EventFilter, EventPosition, EventsRepository, StoredEvent } from './events.ts';
import type { FieldError } from './field-error.ts';
import { canonicalIpAddress } from './ip-address.ts';
import { normalisePhoneNumber } from './phone-number.ts';
import { canonicalUuid } from './uuid.ts';

export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;

/** An own-event query as the caller wrote it. */
export interface EventQueryInput {
  since?: string;
  until?: string;
  called_number?: string;
  source_ip?: string;
  sip_method?: string;
  node_id?: string;
  collected_method?: string;
  transport_type?: string;
  limit?: number;
  cursor?: string;
}

export interface EventPage {
  data: StoredEvent[];
  next_cursor: string | null;
}

// Filters compare against stored instants, so a bound far in the future is not an error here.
const NO_FUTURE_LIMIT = new Date(8.64e15);

/** Own-event queries (CONTRACT §8): only the caller's events, newest first, keyset pages. */
export class EventQuery {
  private readonly repo: EventsRepository;

  constructor(repo: EventsRepository) {
    this.repo = repo;
  }

  /** One of the caller's events, or `not_found` (also for another account's event). */
  async get(account: Account, eventUuid: string): Promise<StoredEvent> {
    const uuid = canonicalUuid(eventUuid);
    const event = uuid ? await this.repo.find(account.account_id, uuid) : undefined;
    if (!event) throw new ServiceError('not_found', 'no such event');
    return event;
  }

  /** A page of the caller's events. */
  async list(account: Account, input: EventQueryInput): Promise<EventPage> {
    const { filter, after, limit } = parseQuery(input);
    const rows = await this.repo.list(account.account_id, filter, after, limit + 1);
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      data: page.map((r) => r.event),
      next_cursor: rows.length > limit && last ? encodeCursor(last.position) : null,
    };
  }
}

function parseQuery(input: EventQueryInput): { filter: EventFilter; after: EventPosition | undefined; limit: number } {
  const errors: FieldError[] = [];
  const filter: EventFilter = {};
  const instant = (field: 'since' | 'until') => {
    const value = input[field];
    if (value === undefined) return undefined;
    const parsed = parseEventTimestamp(value, NO_FUTURE_LIMIT);
    if ('error' in parsed) {
      errors.push({ field, message: parsed.error });
      return undefined;
    }
    return parsed.iso;
  };
  filter.since = instant('since');
  filter.until = instant('until');
  if (input.called_number !== undefined) {
    const number = normalisePhoneNumber(input.called_number);
    if (number) filter.numberKey = number.key;
    else errors.push({ field: 'called_number', message: 'is not a phone number' });
  }
  if (input.source_ip !== undefined) {
    const ip = canonicalIpAddress(input.source_ip);
    if (ip) filter.sourceIp = ip;
    else errors.push({ field: 'source_ip', message: 'is not an IPv4 or IPv6 address' });
  }
  if (input.node_id !== undefined) {
    const node = canonicalUuid(input.node_id);
    if (node) filter.nodeId = node;
    else errors.push({ field: 'node_id', message: 'is not a UUID' });
  }
  if (input.sip_method !== undefined) filter.sipMethod = input.sip_method;
  if (input.collected_method !== undefined) filter.collectedMethod = input.collected_method;
  if (input.transport_type !== undefined) filter.transportType = input.transport_type;

  let after: EventPosition | undefined;
  if (input.cursor !== undefined) {
    after = decodeCursor(input.cursor);
    if (!after) errors.push({ field: 'cursor', message: 'is not a cursor this service issued' });
  }
  const limit = input.limit ?? DEFAULT_PAGE;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
    errors.push({ field: 'limit', message: `must be an integer from 1 to ${MAX_PAGE}` });
  }
  if (errors.length > 0) {
    throw new ServiceError('validation_failed', `invalid query: ${errors.map((e) => e.field).join(', ')}`, errors);
  }
  // Drop undefined members so the repository sees only the filters that were asked for.
  for (const key of Object.keys(filter) as Array<keyof EventFilter>) if (filter[key] === undefined) delete filter[key];
  return { filter, after, limit };
}

/** Opaque to callers: the position of the last event of the previous page. */
function encodeCursor(position: EventPosition): string {
  return Buffer.from(JSON.stringify([position.eventTime, position.id])).toString('base64url');
}

function decodeCursor(cursor: string): EventPosition | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      typeof value[0] === 'string' &&
      /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z$/.test(value[0]) &&
      Number.isSafeInteger(value[1])
    ) {
      return { eventTime: value[0], id: value[1] as number };
    }
  } catch {
    // Not base64url JSON: fall through to "not a cursor".
  }
  return undefined;
}
