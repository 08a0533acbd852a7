import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { csvField } from '../domain/csv-cells.ts';
import type { Feed, FeedEntry, FeedFormat, FeedKind } from '../domain/feed-service.ts';

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

async function* textLines(_kind: FeedKind, feed: Feed): AsyncIterable<string> {
  for await (const entry of feed.entries) yield `${entry.value}\n`;
}

async function* csvLines(kind: FeedKind, feed: Feed): AsyncIterable<string> {
  // Addresses carry their tags, space-separated, in a last column; numbers have none.
  const tagged = kind === 'ip-addresses';
  yield `${valueName(kind)},score,seen_count,first_seen,last_seen${tagged ? ',tags' : ''}\r\n`;
  for await (const e of feed.entries) {
    const cells = [e.value, e.score, e.seen_count, e.first_seen, e.last_seen, ...(tagged ? [(e.tags ?? []).join(' ')] : [])];
    yield `${cells.map((v) => csvField(String(v))).join(',')}\r\n`;
  }
}

async function* jsonParts(kind: FeedKind, feed: Feed): AsyncIterable<string> {
  yield `{"kind":${JSON.stringify(kind)},"scored_at":${JSON.stringify(feed.scoredAt.toISOString())},"entries":[`;
  let first = true;
  for await (const e of feed.entries) {
    yield `${first ? '' : ','}${JSON.stringify({ [valueName(kind)]: e.value, score: e.score, seen_count: e.seen_count, first_seen: e.first_seen, last_seen: e.last_seen, ...(e.tags ? { tags: e.tags } : {}) })}`;
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

/** The STIX object type a value is matched on; numbers have no standard one (docs/api.md §14). */
export const STIX_NUMBER_TYPE = 'x-tollwatch-phone-number';

function indicator(kind: FeedKind, e: FeedEntry) {
  const objectType = kind === 'phone-numbers' ? STIX_NUMBER_TYPE : e.value.includes(':') ? 'ipv6-addr' : 'ipv4-addr';
  const what = kind === 'phone-numbers' ? 'Number called by toll-fraud probes' : 'Source of toll-fraud probes';
  return {
    type: 'indicator',
    spec_version: '2.1',
    id: `indicator--${nameUuid(`${kind}:${e.value}`)}`,
    // Never changes once published; any change to the object comes with a later `modified`
    // (domain/indicator-versions.ts). Without versions (not a STIX feed) the sightings stand in.
    created: stixTime(e.stix?.created ?? e.first_seen),
    modified: stixTime(e.stix?.modified ?? e.last_seen),
    name: `${what}: ${e.value}`,
    indicator_types: ['malicious-activity'],
    pattern: `[${objectType}:value = '${e.value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}']`,
    pattern_type: 'stix',
    valid_from: stixTime(e.first_seen),
    ...(e.stix?.validUntil ? { valid_until: stixTime(e.stix.validUntil) } : {}),
    confidence: e.score,
    // STIX labels are open vocabulary: the tools an address's User-Agents name.
    ...(e.tags && e.tags.length > 0 ? { labels: e.tags } : {}),
  };
}

/** `event_time` (nine fraction digits) to STIX's millisecond precision. */
function stixTime(eventTime: string): string {
  return `${eventTime.slice(0, 23)}Z`;
}

/** A version-5-shaped UUID from a SHA-1 of a name in our own namespace. */
function nameUuid(name: string): string {
  const h = createHash('sha1').update(`tollwatch:${name}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const hex = h.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function valueName(kind: FeedKind): string {
  return kind === 'phone-numbers' ? 'phone_number' : 'ip_address';
}
