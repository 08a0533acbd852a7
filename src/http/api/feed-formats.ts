import { Readable } from 'node:stream';
import { csvField } from '../../domain/csv-cells.ts';
import type { Feed, FeedEntry, FeedFormat, FeedKind } from '../../domain/intelligence/feed-service.ts';
import { indicatorOf, nameUuid, rangeIndicatorOf } from '../../domain/intelligence/stix-indicators.ts';
import { RANGE_DIGITS } from '../../domain/number-range.ts';

export { STIX_NUMBER_TYPE } from '../../domain/intelligence/stix-indicators.ts';

/** The media type each feed format is sent as (docs/api.md §14). */
export const FEED_MEDIA_TYPES: Record<FeedFormat, string> = {
  text: 'text/plain; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  json: 'application/json',
  stix: 'application/stix+json;version=2.1',
};

/** What a request's Accept asks for, by media type without parameters. */
const ACCEPTED: Record<string, FeedFormat> = {
  'text/plain': 'text',
  'text/csv': 'csv',
  'application/json': 'json',
  'application/stix+json': 'stix',
};

/**
 * The format an Accept field prefers (highest q, then first listed). Plain text when it names
 * none we write, or only wildcards: the form ipset, nftables and fail2ban read, and what
 * `curl` gets by default.
 */
export function formatFromAccept(accept: string | undefined): FeedFormat {
  let best: { format: FeedFormat; q: number } | undefined;
  for (const part of (accept ?? '').split(',')) {
    const [type, ...params] = part.split(';').map((p) => p.trim().toLowerCase());
    const format = ACCEPTED[type ?? ''];
    if (!format) continue;
    const qParam = params.find((p) => p.startsWith('q='));
    const q = qParam ? Number(qParam.slice(2)) : 1;
    if (q > 0 && (!best || q > best.q)) best = { format, q };
  }
  return best?.format ?? 'text';
}

/** Whether If-None-Match names `etag` (RFC 9110 §13.1.2: weak comparison, `*` matches any). */
export function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t.replace(/^W\//, '') === etag;
  });
}

/** The feed's body in `format`, written as its entries are read. */
export function feedBody(kind: FeedKind, format: FeedFormat, feed: Feed): Readable {
  const writers = { text: textLines, csv: csvLines, json: jsonParts, stix: stixParts };
  return Readable.from(writers[format](kind, feed), { objectMode: false });
}

/**
 * A range in the text format: its prefix and an `X` per open digit (`+468121185XX`),
 * the dial-plan form Asterisk and Kamailio prefix lists read, and never a number, so a consumer
 * that takes every line for one blocks nothing it did not mean to.
 */
function rangeLine(prefix: string): string {
  return `${prefix}${'X'.repeat(RANGE_DIGITS)}`;
}

async function* textLines(_kind: FeedKind, feed: Feed): AsyncIterable<string> {
  for await (const entry of feed.entries) yield `${entry.range ? rangeLine(entry.value) : entry.value}\n`;
}

async function* csvLines(kind: FeedKind, feed: Feed): AsyncIterable<string> {
  // Addresses carry their tags, space-separated, in a last column; numbers have none.
  const tagged = kind === 'ip-addresses';
  // With ranges=include, a last `kind` column (`number` or `range`); a range's seen_count is its events'.
  yield `${valueName(kind)},score,seen_count,first_seen,last_seen${tagged ? ',tags' : ''}${feed.ranges ? ',kind' : ''}\r\n`;
  for await (const e of feed.entries) {
    // A range's value is its bare prefix, marked by the `kind` column: `+…XX` would be a formula to a spreadsheet (csvField guards it).
    const value = e.value;
    const cells = [value, e.score, e.seen_count, e.first_seen, e.last_seen, ...(tagged ? [(e.tags ?? []).join(' ')] : []), ...(feed.ranges ? [e.range ? 'range' : 'number'] : [])];
    yield `${cells.map((v) => csvField(String(v))).join(',')}\r\n`;
  }
}

async function* jsonParts(kind: FeedKind, feed: Feed): AsyncIterable<string> {
  yield `{"kind":${JSON.stringify(kind)},"scored_at":${JSON.stringify(feed.scoredAt.toISOString())},"entries":[`;
  let first = true;
  for await (const e of feed.entries) {
    const entry = e.range
      ? { range: e.value, score: e.score, numbers_seen: e.range.numbers_seen, first_seen: e.first_seen, last_seen: e.last_seen, ...(e.valid_until ? { valid_until: e.valid_until } : {}) }
      : { [valueName(kind)]: e.value, score: e.score, seen_count: e.seen_count, first_seen: e.first_seen, last_seen: e.last_seen, ...(e.tags ? { tags: e.tags } : {}), ...(e.valid_until ? { valid_until: e.valid_until } : {}), ...(e.peers ? { peers: e.peers.map((p) => p.peer) } : {}) };
    yield `${first ? '' : ','}${JSON.stringify(entry)}`;
    first = false;
  }
  yield ']}';
}

/**
 * A STIX 2.1 bundle of indicators. Ids are name-based (UUIDv5-style over the value), so an
 * indicator keeps its id from one poll to the next and a consumer updates rather than duplicates
 * it; the bundle's id derives from the ETag, so equal tags mean equal bytes.
 */
async function* stixParts(kind: FeedKind, feed: Feed): AsyncIterable<string> {
  yield `{"type":"bundle","id":"bundle--${nameUuid(`bundle:${feed.etag}`)}","objects":[`;
  let first = true;
  for await (const e of feed.entries) {
    yield `${first ? '' : ','}${JSON.stringify(indicator(kind, e))}`;
    first = false;
  }
  yield ']}';
}

/**
 * Without versions (not a STIX feed) the sightings stand in for `created` and `modified`; with
 * them, `created` never changes once published and any change comes with a later `modified`
 * (domain/intelligence/indicator-versions.ts).
 */
function indicator(kind: FeedKind, e: FeedEntry) {
  const { value, score, first_seen, tags } = e;
  if (e.range) return rangeIndicatorOf(value, RANGE_DIGITS, { score, first_seen, created: e.stix?.created ?? e.first_seen, modified: e.stix?.modified ?? e.last_seen, validUntil: e.valid_until });
  // Peers' says marked as in TAXII (label `peer-reported`, `x_tollwatch_peers`): one object, one shape, wherever it is read.
  return indicatorOf(kind, { value, score, first_seen, tags, created: e.stix?.created ?? e.first_seen, modified: e.stix?.modified ?? e.last_seen, validUntil: e.valid_until, ...(e.peers ? { peers: e.peers } : {}) });
}

function valueName(kind: FeedKind): string {
  return kind === 'phone-numbers' ? 'phone_number' : 'ip_address';
}
