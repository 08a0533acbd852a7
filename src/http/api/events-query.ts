import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { DEFAULT_PAGE, MAX_PAGE } from '../../domain/events/event-query.ts';
import { COLLECTED_METHODS, FORMAT_RULES, TRANSPORT_TYPES } from '../../domain/events/event-fields.ts';
import type { Services } from '../../services.ts';
import { principalOf } from './api-auth.ts';
import { apiAnswers } from '../route-responses.ts';
import { nullable } from '../../domain/nullable-schema.ts';
import { formatSchema, SAMPLE_EVENT } from '../schemas.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'eventQuery'>;

/**
 * The parameters, documented for OpenAPI. The domain reads them (one pass naming every bad or
 * unknown parameter with one message each); this schema must say what the domain accepts.
 */
const ListQuery = Type.Object(
  {
    since: Type.Optional(formatSchema('timestamp', { description: 'Events at or after this instant', example: '2026-11-20T10:00:00Z' })),
    until: Type.Optional(formatSchema('timestamp', { description: 'Events before this instant' })),
    called_number: Type.Optional(
      Type.String({
        description:
          'A number is normalised like a lookup (`tel:`/`sip:` forms, separators) and `+CC`, `00CC` and `011CC` forms match; any other value (empty, `NOT_FOUND`, `test_user`) matches the stored value exactly',
        example: '+46812118532',
      }),
    ),
    source_ip: Type.Optional(
      Type.String({
        description:
          'Source address (IPv6 in any of its spellings), or a range of them in CIDR notation (`198.51.100.0/22`, `2001:db8::/32`). A page filtered by a range reads at most 10,000 events: it may hold fewer than `limit`, even none, with a `next_cursor` to go on (docs/api.md §8)',
        example: '203.0.113.7',
        // An address as FORMAT_RULES.ip writes one, optionally a prefix length.
        pattern: `${FORMAT_RULES.ip.pattern.slice(0, -1)}(?:/(?:12[0-8]|1[01][0-9]|[1-9]?[0-9]))?$`,
      }),
    ),
    sip_method: Type.Optional(formatSchema('sip-token', { description: 'SIP method, matched exactly', example: 'INVITE' })),
    node_id: Type.Optional(formatSchema('uuid', { description: 'created_by_node_id, any case' })),
    collected_method: Type.Optional(Type.Enum([...COLLECTED_METHODS], { type: 'string' })),
    transport_type: Type.Optional(Type.Enum([...TRANSPORT_TYPES], { type: 'string' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: DEFAULT_PAGE, description: 'Events per page' })),
    cursor: Type.Optional(
      Type.String({ description: '`next_cursor` of the previous page: opaque, and valid only for the account it was issued to' }),
    ),
  },
  { additionalProperties: false },
);

/** A page of the caller's events. */
const EventPage = Type.Object(
  {
    data: Type.Array(Type.Ref('StoredEvent')),
    next_cursor: nullable<string>(['string'], { description: 'Pass as `cursor` for the next page; null on the last page' }),
  },
  {
    $id: 'EventPage',
    example: { data: [{ ...SAMPLE_EVENT, event_time: '2022-02-22T11:19:15.848934346Z', received_at: '2022-02-22T11:19:16.002Z' }], next_cursor: null },
  },
);

/** The named schemas of these routes, for the /api scope to register. */
export const EVENT_QUERY_SCHEMAS = [EventPage];

/** GET /api/events and GET /api/events/{event_uuid}: the caller's own events (docs/api.md §8). */
export async function eventsQueryRoutes(app: FastifyInstance, { services }: { services: RouteServices }) {
  app.get(
    '/events',
    {
      config: { permission: 'read:events', rateGroup: 'event_reads' },
      schema: {
        summary: "List the caller's events, newest first",
        description:
          'Filters combine with AND. A bad or unknown parameter answers 422 validation_failed, whose `errors` name every such parameter at once, each with one message.',
        operationId: 'listEvents',
        tags: ['events'],
        querystring: ListQuery,
        response: apiAnswers({
          ok: {
            200: {
              description: 'A page of the caller’s events, newest first',
              schema: Type.Ref('EventPage'),
            },
          },
          errors: [422],
          limited: true,
        }),
      },
    },
    async (request) => services.eventQuery.list(principalOf(request).account, request.query as Record<string, unknown>),
  );

  app.get<{ Params: { event_uuid: string } }>(
    '/events/:event_uuid',
    {
      config: { permission: 'read:events', rateGroup: 'event_reads', pathValue: { code: 'not_found', name: 'event' } },
      schema: {
        summary: 'One of the caller’s events',
        operationId: 'getEvent',
        tags: ['events'],
        params: Type.Object({
          event_uuid: formatSchema('uuid', {
            description: "UUID of the event, any case. Any value that names none of the caller's events answers 404, however it is malformed or long",
          }),
        }),
        response: apiAnswers({
          ok: { 200: { description: 'The event as stored', schema: Type.Ref('StoredEvent') } },
          errors: [404],
          limited: true,
          describe: { 404: 'No such event among the caller’s (`not_found`): missing, malformed, or another account’s' },
        }),
      },
    },
    async (request) => services.eventQuery.get(principalOf(request).account, request.params.event_uuid),
  );
}
