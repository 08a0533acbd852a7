import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { DEFAULT_PAGE, MAX_PAGE } from '../../domain/event-query.ts';
import { COLLECTED_METHODS, TRANSPORT_TYPES } from '../../domain/event-fields.ts';
import type { Services } from '../../services.ts';
import { principalOf } from '../api-auth.ts';
import { invalidParameter } from '../api-errors.ts';
import { authErrors, formatSchema } from '../schemas.ts';

/**
 * The parameters, documented for OpenAPI. The domain reads them (one pass naming every bad or
 * unknown parameter with one message each); this schema must say what the domain accepts.
 */
const ListQuery = Type.Object(
  {
    since: Type.Optional(formatSchema('timestamp', { description: 'Events at or after this instant', example: '2026-11-20T10:00:00Z' })),
    until: Type.Optional(formatSchema('timestamp', { description: 'Events before this instant' })),
    called_number: Type.Optional(
      Type.String({ description: 'Normalised like a lookup (`tel:`/`sip:` forms, separators); `+CC`, `00CC` and `011CC` forms match', example: '+46812118532' }),
    ),
    source_ip: Type.Optional(formatSchema('ip', { description: 'Source address; IPv6 in any of its spellings', example: '203.0.113.7' })),
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

/** The longest `event_uuid` path value answered 404 when unknown; see assertEventUuidLength. */
const MAX_EVENT_UUID_PARAM = 100;

/**
 * A longer path value (up to the 512 the router takes) answers 422, in the words of the schema
 * validator that used to check this bound; a shorter value that is no UUID answers 404.
 */
function assertEventUuidLength(value: string): void {
  // Counted in characters, as JSON Schema's maxLength counts.
  if ([...value].length > MAX_EVENT_UUID_PARAM) {
    throw invalidParameter('event_uuid', `must NOT have more than ${MAX_EVENT_UUID_PARAM} characters`);
  }
}

/** GET /api/events and GET /api/events/{event_uuid}: the caller's own events (docs/api.md §8). */
export const eventsQueryRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {

  app.get(
    '/events',
    {
      config: { permission: 'read:events' },
      schema: {
        summary: "List the caller's events, newest first",
        description:
          'Filters combine with AND. A bad or unknown parameter answers 422 validation_failed, whose `errors` name every such parameter at once, each with one message.',
        tags: ['events'],
        querystring: ListQuery,
        response: {
          200: Type.Object({
            data: Type.Array(Type.Ref('StoredEvent')),
            next_cursor: Type.Union([Type.String(), Type.Null()]),
          }),
          422: Type.Ref('Problem'),
          ...authErrors,
        },
      },
    },
    async (request) => services.eventQuery.list(principalOf(request).account, request.query as Record<string, unknown>),
  );

  app.get(
    '/events/:event_uuid',
    {
      config: { permission: 'read:events', pathValue: { code: 'not_found', name: 'event' } },
      preValidation: async (request) => assertEventUuidLength(request.params.event_uuid),
      schema: {
        summary: 'One of the caller’s events',
        tags: ['events'],
        params: Type.Object({
          event_uuid: Type.String({
            maxLength: MAX_EVENT_UUID_PARAM,
            description: `UUID of the event, any case. A value longer than ${MAX_EVENT_UUID_PARAM} characters answers 422; any other that names none of the caller's events, 404`,
          }),
        }),
        response: { 200: Type.Ref('StoredEvent'), 404: Type.Ref('Problem'), ...authErrors },
      },
    },
    async (request) => services.eventQuery.get(principalOf(request).account, request.params.event_uuid),
  );
};
