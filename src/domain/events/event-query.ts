import type { Account } from '../accounts/accounts.ts';
import { ServiceError } from '../errors.ts';
import { EventCursors } from './event-cursor.ts';
import { parseEventTimestamp } from './event-timestamp.ts';
import type { EventDirection, EventFilter, EventPosition, EventsRepository, StoredEvent } from './events.ts';
import type { FieldError } from '../field-error.ts';
import { COLLECTED_METHODS, isAbsentValue, TRANSPORT_TYPES } from './event-fields.ts';
import { sipMethodError } from './honeypot-event.ts';
import { canonicalIpAddress } from '../ip-address.ts';
import { parseSourceRange, type SourceRange } from './source-range.ts';
import { normalisePhoneNumber } from '../phone-number.ts';
import { queryText } from '../query-text.ts';
import type { ServerSecrets } from '../accounts/server-secrets.ts';
import { canonicalUuid } from '../uuid.ts';

export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;

/**
 * About how much event text one page may carry. 1,000 events of up to 128 KiB each would be a
 * 128 MB answer; past this bound a page ends early (never before its first event) and its cursor
 * continues after the last event sent. 4 MiB is 1,000 ordinary events with room to spare.
 */
export const MAX_PAGE_BYTES = 4 * 1024 * 1024;

/** Events a page filtered by an address range reads at most before it ends (docs/api.md §8). */
export const RANGE_SCAN = 10_000;

/** What an event weighs in a page: its text, and a fixed allowance for names and punctuation. */
function pageWeight(event: StoredEvent): number {
  let weight = 400;
  for (const value of Object.values(event)) weight += typeof value === 'string' ? value.length : 0;
  return weight;
}

/** The parameters of an own-event query (docs/api.md §8), in the order their errors are listed. */
export const QUERY_PARAMETERS = [
  'since',
  'until',
  'called_number',
  'source_ip',
  'sip_method',
  'node_id',
  'collected_method',
  'transport_type',
  'limit',
  'cursor',
] as const;

type QueryParameter = (typeof QUERY_PARAMETERS)[number];
const KNOWN_PARAMETERS = new Set<string>(QUERY_PARAMETERS);

/**
 * An own-event query as the caller wrote it: each parameter's value as a query string carries
 * it (a string, or an array when repeated), `limit` also as a number from code. Anything may be
 * in it; the query names every bad or unknown parameter at once.
 */
export type EventQueryInput = Readonly<Record<string, unknown>>;

/** An event as a page lists it, with where the page continues after it. */
type ListedEvent = { event: StoredEvent; position: EventPosition };

export interface EventPage {
  data: StoredEvent[];
  next_cursor: string | null;
}

/** A page read for browsing both ways: `next_cursor` leads to older events, `newer_cursor` to newer ones. */
export interface BrowsedPage extends EventPage {
  newer_cursor: string | null;
}

/** Events a total counts at most (docs/dashboard.md): past it a page says "more than 10,000", so a count costs a bounded read. */
export const COUNT_BOUND = 10_000;

/** How many events match: exactly, more than `count` (the bound was reached), or at least `count` (a range's scan stopped). */
export interface EventTotal {
  count: number;
  bound: 'exact' | 'more-than' | 'at-least';
}

// Filters compare against stored instants, so a bound far in the future is not an error here.
const NO_FUTURE_LIMIT = new Date(8.64e15);

/** Own-event queries (docs/api.md §8): only the caller's events, newest first, keyset pages. */
export class EventQuery {
  private readonly repo: EventsRepository;
  private readonly cursors: EventCursors;

  constructor(repo: EventsRepository, cursors: EventCursors) {
    this.repo = repo;
    this.cursors = cursors;
  }

  /** Event queries whose cursors are sealed with the store's shared cursor key. */
  static async open(repo: EventsRepository, secrets: ServerSecrets): Promise<EventQuery> {
    return new EventQuery(repo, new EventCursors(await secrets.read('cursor')));
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
    const { filter, range, after, limit } = parseQuery(input, (cursor) => this.cursors.open(account.account_id, cursor));
    if (range) return this.rangePage(account, filter, range, after, limit);
    return this.pageOf(account, await this.repo.list(account.account_id, filter, after, limit + 1), limit);
  }

  /**
   * A page for a person browsing: as `list`, with the cursor read as where to go on `direction`
   * from. A newer page is read oldest first from its cursor and shown newest first; one that
   * reaches the newest events is the first page itself, so pages keep their edges from the top.
   */
  async browse(account: Account, input: EventQueryInput, direction: EventDirection): Promise<BrowsedPage> {
    const { filter, range, after, limit } = parseQuery(input, (cursor) => this.cursors.open(account.account_id, cursor));
    const read = (way: EventDirection) => (range ? this.rangeRead(account, filter, range, after, limit, way) : this.repo.list(account.account_id, filter, after, limit + 1, way).then((rows) => ({ rows, resumeAt: undefined })));
    const seal = (position: EventPosition | undefined) => (position ? this.cursors.seal(account.account_id, position) : null);
    if (direction === 'newer' && after) {
      const { rows, resumeAt } = await read('newer');
      if (rows.length <= limit && !resumeAt) return this.browse(account, { ...input, cursor: undefined }, 'older');
      const shown = pageCut(rows, limit);
      const newest = shown.length < rows.length ? shown.at(-1)?.position : resumeAt;
      return { data: shown.map((r) => r.event).reverse(), next_cursor: seal(shown[0]?.position), newer_cursor: seal(newest) };
    }
    const { rows, resumeAt } = await read('older');
    const shown = pageCut(rows, limit);
    const older = shown.length < rows.length ? shown.at(-1)?.position : resumeAt;
    return { data: shown.map((r) => r.event), next_cursor: seal(older), newer_cursor: after ? seal(shown[0]?.position) : null };
  }

  /**
   * How many events the query's filters keep, counting no further than COUNT_BOUND; with
   * `newerThan` (a cursor), only those newer than its position: a page's place in the whole.
   */
  async count(account: Account, input: EventQueryInput, newerThan?: string): Promise<EventTotal> {
    const { filter, range, after } = parseQuery({ ...input, cursor: newerThan, limit: undefined }, (cursor) => this.cursors.open(account.account_id, cursor));
    if (!range) {
      const count = await this.repo.countUpTo(account.account_id, filter, COUNT_BOUND, after);
      return count > COUNT_BOUND ? { count: COUNT_BOUND, bound: 'more-than' } : { count, bound: 'exact' };
    }
    // The store narrows a range by its addresses' leading text; the rest is judged here, over at most the bound.
    const addresses = await this.repo.sourceAddresses(account.account_id, filter, COUNT_BOUND + 1, after);
    const count = addresses.filter((a) => range.includes(a)).length;
    return { count, bound: addresses.length > COUNT_BOUND ? 'at-least' : 'exact' };
  }

  /**
   * The page of `rows` (up to `limit` + 1 found, the extra one telling that more follow): at most
   * `limit` events and MAX_PAGE_BYTES, its cursor past its last event when more were found, else
   * at `resumeAt` (where a range page stopped reading), else none.
   */
  private pageOf(account: Account, rows: ListedEvent[], limit: number, resumeAt?: EventPosition): EventPage {
    const page = pageCut(rows, limit);
    const next = page.length < rows.length ? page.at(-1)?.position : resumeAt;
    return { data: page.map((r) => r.event), next_cursor: next ? this.cursors.seal(account.account_id, next) : null };
  }

  /**
   * A page filtered by a range of source addresses: the store narrows by the text the range's
   * addresses begin with, this keeps those in the range. A page reads at most RANGE_SCAN events;
   * past that it ends early, perhaps empty, with a cursor to go on from where it stopped.
   */
  private async rangePage(account: Account, filter: EventFilter, range: SourceRange, after: EventPosition | undefined, limit: number): Promise<EventPage> {
    const { rows, resumeAt } = await this.rangeRead(account, filter, range, after, limit, 'older');
    return this.pageOf(account, rows, limit, resumeAt);
  }

  /** Up to `limit` + 1 events in the range, read `direction` from `after`; `resumeAt` where reading stopped short of the store's end. */
  private async rangeRead(account: Account, filter: EventFilter, range: SourceRange, after: EventPosition | undefined, limit: number, direction: EventDirection): Promise<{ rows: ListedEvent[]; resumeAt: EventPosition | undefined }> {
    const kept: ListedEvent[] = [];
    let position = after;
    let scanned = 0;
    let exhausted = false;
    while (kept.length <= limit && scanned < RANGE_SCAN) {
      const asked = Math.min(MAX_PAGE + 1, RANGE_SCAN - scanned);
      const rows = await this.repo.list(account.account_id, filter, position, asked, direction);
      for (const row of rows) {
        scanned += 1;
        position = row.position;
        if (range.includes(row.event.source_ip) && kept.push(row) > limit) break;
      }
      if (rows.length < asked && kept.length <= limit) {
        exhausted = true;
        break;
      }
    }
    // Short of a full page: go on past the last event read, unless the store had no more.
    return { rows: kept, resumeAt: exhausted ? undefined : position };
  }
}

/** The first `limit` of `rows`, ended early once they weigh more than MAX_PAGE_BYTES (never before the first). */
function pageCut(rows: ListedEvent[], limit: number): ListedEvent[] {
  const page = rows.slice(0, limit);
  let weight = 0;
  const cut = page.findIndex((row, index) => (weight += pageWeight(row.event)) > MAX_PAGE_BYTES && index > 0);
  return cut > 0 ? page.slice(0, cut) : page;
}

/**
 * Reads every parameter in one pass (docs/api.md §4: one 422 names every bad field, each with one
 * message), unknown parameters included, so a caller fixes its query in one round trip.
 */
function parseQuery(
  input: EventQueryInput,
  openCursor: (cursor: string) => EventPosition | undefined,
): { filter: EventFilter; range: SourceRange | undefined; after: EventPosition | undefined; limit: number } {
  const errors: FieldError[] = [];
  const refuse = (field: string, message: string) => void errors.push({ field, message });
  const text = (name: QueryParameter) => queryText(input, name, refuse);
  const filter: EventFilter = {};

  for (const field of ['since', 'until'] as const) {
    const value = text(field);
    if (value === undefined) continue;
    const parsed = parseEventTimestamp(value, NO_FUTURE_LIMIT);
    if ('error' in parsed) refuse(field, parsed.error);
    else filter[field] = parsed.iso;
  }
  const calledNumber = text('called_number');
  if (calledNumber !== undefined) {
    // A number matches every form it was written in; any other value an event can hold (empty,
    // NOT_FOUND, `test_user`, 70 digits) matches exactly, so an owner can filter by what they see.
    const number = isAbsentValue(calledNumber) ? null : normalisePhoneNumber(calledNumber);
    if (number) filter.numberKey = number.key;
    else filter.calledNumberUnkeyed = calledNumber;
  }
  const sourceIp = text('source_ip');
  let range: SourceRange | undefined;
  if (sourceIp !== undefined) {
    const ip = canonicalIpAddress(sourceIp);
    range = ip ? undefined : parseSourceRange(sourceIp);
    if (ip) filter.sourceIp = ip;
    else if (range) filter.sourceIpPrefix = range.textPrefix || undefined;
    else refuse('source_ip', 'must be an IPv4 or IPv6 address, or a range of them in CIDR notation such as 198.51.100.0/22');
  }
  const sipMethod = text('sip_method');
  if (sipMethod !== undefined) {
    const error = sipMethodError(sipMethod);
    if (error) refuse('sip_method', error);
    else filter.sipMethod = sipMethod;
  }
  const nodeId = text('node_id');
  if (nodeId !== undefined) {
    const node = canonicalUuid(nodeId);
    if (node) filter.nodeId = node;
    else refuse('node_id', 'must be a UUID (8-4-4-4-12 hexadecimal digits)');
  }
  const collectedMethod = text('collected_method');
  if (collectedMethod !== undefined) {
    if (oneOf(COLLECTED_METHODS, collectedMethod)) filter.collectedMethod = collectedMethod;
    else refuse('collected_method', `must be one of: ${COLLECTED_METHODS.join(', ')}`);
  }
  const transportType = text('transport_type');
  if (transportType !== undefined) {
    if (oneOf(TRANSPORT_TYPES, transportType)) filter.transportType = transportType;
    else refuse('transport_type', `must be one of: ${TRANSPORT_TYPES.join(', ')}`);
  }

  let limit = DEFAULT_PAGE;
  const rawLimit = typeof input.limit === 'number' ? input.limit : text('limit');
  if (rawLimit !== undefined) {
    // Digits only: Number() would also take '1e2', '0x10' or ' 5'.
    const value = typeof rawLimit === 'number' ? rawLimit : /^\d{1,7}$/.test(rawLimit) ? Number(rawLimit) : NaN;
    if (Number.isInteger(value) && value >= 1 && value <= MAX_PAGE) limit = value;
    else refuse('limit', `must be an integer from 1 to ${MAX_PAGE}`);
  }

  let after: EventPosition | undefined;
  const cursor = text('cursor');
  if (cursor !== undefined) {
    after = openCursor(cursor);
    // Another account's cursor is refused exactly as a malformed or altered one: one message
    // for all, so a refusal tells nothing about whose it was.
    if (!after) refuse('cursor', 'is not a cursor this service issued');
  }

  for (const name of Object.keys(input)) {
    if (!KNOWN_PARAMETERS.has(name) && input[name] !== undefined) refuse(name, 'is not a known parameter');
  }
  if (errors.length > 0) {
    throw new ServiceError('validation_failed', `invalid query: ${errors.map((e) => e.field).join(', ')}`, errors);
  }
  return { filter, range, after, limit };
}

function oneOf<T extends string>(allowed: readonly T[], value: string): value is T {
  return (allowed as readonly string[]).includes(value);
}
