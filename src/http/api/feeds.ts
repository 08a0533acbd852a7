import type { FastifyInstance } from 'fastify';
import { Type, type TSchema } from 'typebox';
import { DEFAULT_MIN_SCORE, FEED_FORMATS, FEED_RANGES, MAX_FEED_ENTRIES, type FeedKind } from '../../domain/intelligence/feed-service.ts';
import type { Permission } from '../../domain/accounts/permissions.ts';
import type { Services } from '../../services.ts';
import { apiAnswers } from '../route-responses.ts';
import { principalOf } from './api-auth.ts';
import { feedBody, FEED_MEDIA_TYPES, formatFromAccept, matchesIfNoneMatch, STIX_NUMBER_TYPE } from './feed-formats.ts';
import { formatSchema } from '../schemas.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'feeds'>;

const FeedQuery = Type.Object(
  {
    min_score: Type.Optional(Type.Integer({ minimum: 0, maximum: 100, default: DEFAULT_MIN_SCORE, description: 'Only entries scoring at least this (docs/scoring.md)' })),
    since: Type.Optional(formatSchema('timestamp', { description: 'Only entries last seen at or after this instant', example: '2026-11-20T10:00:00Z' })),
    format: Type.Optional(Type.Enum([...FEED_FORMATS], { type: 'string', description: 'Overrides Accept: text, csv, json or stix (a STIX 2.1 bundle)' })),
  },
  { additionalProperties: false },
);

/** The phone-number feed's query: also `ranges` (docs/api.md §14). */
const NumberFeedQuery = Type.Object(
  {
    ...FeedQuery.properties,
    ranges: Type.Optional(
      Type.Enum([...FEED_RANGES], {
        type: 'string',
        default: 'exclude',
        description: 'include: also the number ranges (blocks of 100, docs/scoring.md "Ranges") scoring at least min_score, each marked as a range; only: those ranges alone',
      }),
    ),
  },
  { additionalProperties: false },
);

const ETAG = {
  type: 'string' as const,
  description: 'Strong validator of this answer: send it back as If-None-Match to get 304 while nothing changed',
  required: true,
  example: '"Hq8m1d3yq7D1lq9vN0a2rVb4Qk6s2Yt1"',
};

/**
 * The answer's schemas, named after the feed (`IpAddressFeed`, `PhoneNumberStixBundle`…): the
 * /api scope registers them, and each media type of the answer refers to its own.
 */
function feedSchemas({ name, kind, valueName, valueSchema, stixPattern, stixExample, example }: FeedRoute) {
  // Addresses carry the tools their User-Agents name (docs/scoring.md, "Tags"); numbers keep no User-Agents.
  const tagged = kind === 'ip-addresses';
  const tags = { tags: Type.Array(Type.String(), { description: 'The scanning tools the address’s User-Agents name (docs/scoring.md, "Tags")' }) };
  const sample = { score: 78, seen_count: 120, first_seen: '2026-11-20T10:00:01.123456789Z', last_seen: '2026-11-22T06:25:32.918708020Z', ...(tagged ? { tags: ['sipvicious'] } : {}) };
  // The JSON format's entries also say when they stop holding (docs/api.md §14).
  const jsonSample = { ...sample, valid_until: '2026-12-22T07:00:00.000Z' };
  const entry = Type.Object(
    {
      [valueName]: valueSchema,
      score: Type.Integer({ minimum: 0, maximum: 100 }),
      seen_count: Type.Integer({ minimum: 0, description: 'Events that name it; 0 for a value only peers know (`peers`)' }),
      first_seen: Type.String(),
      last_seen: Type.String(),
      ...(tagged ? tags : {}),
      valid_until: Type.Optional(
        Type.String({ description: 'The first hour at which the score falls below min_score: drop the entry then (a firewall element’s timeout). Absent with min_score=0', example: '2026-12-22T07:00:00.000Z' }),
      ),
      peers: Type.Optional(Type.Array(Type.String(), { description: 'The peers whose say is in the score, where the operator lets it be passed on (docs/federation.md); absent otherwise' })),
    },
    { $id: `${name}FeedEntry` },
  );
  // With ranges=include, the phone-number feed's entries may also be ranges (docs/api.md §14).
  const rangeEntry = Type.Object(
    {
      range: Type.String({ description: 'A number range’s prefix: every number that begins with it and has two more digits (docs/scoring.md, "Ranges")', example: '+468121185' }),
      score: Type.Integer({ minimum: 0, maximum: 100 }),
      numbers_seen: Type.Integer({ minimum: 1, description: 'Distinct numbers of the range seen' }),
      first_seen: Type.String(),
      last_seen: Type.String(),
      valid_until: Type.Optional(Type.String({ description: 'The first hour at which the score falls below min_score; absent with min_score=0' })),
    },
    { $id: `${name}RangeFeedEntry` },
  );
  const entryRef = tagged ? Type.Ref(`${name}FeedEntry`) : Type.Union([Type.Ref(`${name}FeedEntry`), Type.Ref(`${name}RangeFeedEntry`)]);
  const indicator = Type.Object(
    {
      type: Type.Literal('indicator'),
      spec_version: Type.Literal('2.1'),
      id: Type.String({ pattern: '^indicator--' }),
      created: Type.String(),
      modified: Type.String(),
      name: Type.String(),
      indicator_types: Type.Array(Type.String()),
      pattern: Type.String({ description: tagged ? stixPattern : `${stixPattern}; a range (ranges=include): [${STIX_NUMBER_TYPE}:value LIKE '+…__']` }),
      pattern_type: Type.Literal('stix'),
      valid_from: Type.String(),
      confidence: Type.Integer({ minimum: 0, maximum: 100, description: 'The score' }),
      valid_until: Type.Optional(Type.String({ description: 'The first hour at which the score falls below min_score; absent with min_score=0' })),
      labels: Type.Optional(Type.Array(Type.String(), { description: tagged ? 'The tags, when the address has any; `peer-reported` where peers’ say is in the confidence' : '`peer-reported` where peers’ say is in the confidence' })),
      x_tollwatch_peers: Type.Optional(
        Type.Array(Type.Object({ peer: Type.String(), confidence: Type.Integer({ minimum: 0, maximum: 100 }) }), {
          description: 'The peers whose say is in the confidence, each with the confidence it published (docs/federation.md); absent when it is this server’s own evidence alone',
        }),
      ),
    },
    { $id: `${name}StixIndicator` },
  );
  return [
    Type.String({ $id: `${name}FeedText`, description: tagged ? 'One value per line' : 'One value per line; with ranges=include a range as its prefix and XX (+468121185XX)', example: `${example}\n` }),
    Type.String({
      $id: `${name}FeedCsv`,
      description: `RFC 4180 with a header line: ${valueName},score,seen_count,first_seen,last_seen${tagged ? ',tags (space-separated)' : '; with ranges=include also a last column kind, number or range (a range’s value is its prefix, its seen_count its events)'}`,
      example: `${valueName},score,seen_count,first_seen,last_seen${tagged ? ',tags' : ''}\r\n${example},${sample.score},${sample.seen_count},${sample.first_seen},${sample.last_seen}${tagged ? ',sipvicious' : ''}\r\n`,
    }),
    entry,
    ...(tagged ? [] : [rangeEntry]),
    Type.Object(
      {
        kind: Type.String(),
        scored_at: Type.String({ description: 'The instant scores were computed at: the start of the hour' }),
        entries: Type.Array(entryRef, { maxItems: MAX_FEED_ENTRIES }),
      },
      { $id: `${name}Feed`, example: { kind, scored_at: '2026-11-22T07:00:00.000Z', entries: [{ [valueName]: example, ...jsonSample }] } },
    ),
    indicator,
    Type.Object(
      {
        type: Type.Literal('bundle'),
        id: Type.String({ pattern: '^bundle--' }),
        objects: Type.Array(Type.Ref(`${name}StixIndicator`), { maxItems: MAX_FEED_ENTRIES }),
      },
      {
        $id: `${name}StixBundle`,
        description: 'A STIX 2.1 bundle of indicators (`application/stix+json;version=2.1`)',
        example: {
          type: 'bundle',
          id: 'bundle--5a7d2c1e-0b3f-5c4d-9e8f-1a2b3c4d5e6f',
          objects: [
            {
              type: 'indicator',
              spec_version: '2.1',
              id: 'indicator--0c9b8a7d-6e5f-5a4b-8c3d-2e1f0a9b8c7d',
              created: '2026-11-20T10:00:01.123Z',
              modified: '2026-11-22T06:25:32.918Z',
              name: `Toll fraud: ${example}`,
              indicator_types: ['malicious-activity'],
              pattern: stixExample,
              pattern_type: 'stix',
              valid_from: '2026-11-20T10:00:01.123Z',
              confidence: sample.score,
              ...(tagged ? { labels: ['sipvicious'] } : {}),
            },
          ],
        },
      },
    ),
  ];
}

/** The answer's media types, each with its named schema. */
function feedContent({ name }: FeedRoute) {
  return {
    'text/plain': { schema: Type.Ref(`${name}FeedText`) },
    'text/csv': { schema: Type.Ref(`${name}FeedCsv`) },
    'application/json': { schema: Type.Ref(`${name}Feed`) },
    'application/stix+json': { schema: Type.Ref(`${name}StixBundle`) },
  };
}

interface FeedRoute {
  /** What the feed's schemas are named after. */
  name: 'IpAddress' | 'PhoneNumber';
  kind: FeedKind;
  permission: Permission;
  operationId: string;
  summary: string;
  valueName: string;
  valueSchema: TSchema;
  stixPattern: string;
  /** A value as the feed lists it, and its STIX pattern, for the document's examples. */
  example: string;
  stixExample: string;
}

const ROUTES: FeedRoute[] = [
  {
    name: 'IpAddress',
    kind: 'ip-addresses',
    permission: 'read:ip-addresses',
    operationId: 'ipAddressFeed',
    summary: 'Blocklist of source addresses scoring at least min_score',
    valueName: 'ip_address',
    valueSchema: Type.String({ description: 'Canonical address' }),
    stixPattern: "[ipv4-addr:value = '…'] or [ipv6-addr:value = '…']",
    example: '203.0.113.7',
    stixExample: "[ipv4-addr:value = '203.0.113.7']",
  },
  {
    name: 'PhoneNumber',
    kind: 'phone-numbers',
    permission: 'read:phone-numbers',
    operationId: 'phoneNumberFeed',
    summary: 'Blocklist of called numbers scoring at least min_score',
    valueName: 'phone_number',
    valueSchema: Type.String({ description: 'The number key: E.164 `+…` for international forms' }),
    stixPattern: `[${STIX_NUMBER_TYPE}:value = '+…'] (a custom object type, docs/api.md §14)`,
    example: '+46812118532',
    stixExample: `[${STIX_NUMBER_TYPE}:value = '+46812118532']`,
  },
];

/** The feeds' named schemas, for the /api scope to register. */
export const FEED_SCHEMAS = ROUTES.flatMap(feedSchemas);

/** GET /api/feeds/ip-addresses and GET /api/feeds/phone-numbers (docs/api.md §14). */
export async function feedRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  for (const route of ROUTES) {
    const response = apiAnswers({
      ok: { 200: { description: 'The feed, most recently seen first', schema: Type.String(), headers: { ETag: ETAG } } },
      errors: [422],
      limited: true,
    }) as Record<number, { content?: unknown; headers: Record<string, unknown>; description: string }>;
    response[200]!.content = feedContent(route);
    response[304] = { description: 'Not modified: the If-None-Match tag is still this answer’s', headers: response[200]!.headers };
    app.get(
      `/feeds/${route.kind}`,
      {
        config: { permission: route.permission, rateGroup: 'lookups' },
        schema: {
          summary: route.summary,
          description: `Only the shared data set and the caller’s own events. At most ${MAX_FEED_ENTRIES.toLocaleString('en')} entries, most recently seen first, streamed. Format by \`format\` or Accept (plain text when neither names one). Counted as one lookup, a 304 too.`,
          operationId: route.operationId,
          tags: ['feeds'],
          querystring: route.kind === 'phone-numbers' ? NumberFeedQuery : FeedQuery,
          response,
        },
      },
      async (request, reply) => {
        const query = services.feeds.parseQuery(request.query as Record<string, unknown>, formatFromAccept(request.headers.accept), route.kind);
        const feed = await services.feeds.feed(principalOf(request).account, route.kind, query);
        reply.header('etag', feed.etag).header('vary', 'Accept');
        if (matchesIfNoneMatch(request.headers['if-none-match'], feed.etag)) return reply.code(304).send();
        return reply.type(FEED_MEDIA_TYPES[query.format]).send(feedBody(route.kind, query.format, feed));
      },
    );
  }
}
