import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { MAX_PAGE } from '../../domain/event-query.ts';
import type { Services } from '../../services.ts';
import { principalOf } from '../api-auth.ts';
import { authErrors } from '../schemas.ts';

const ListQuery = Type.Object(
  {
    since: Type.Optional(Type.String({ description: 'Events at or after this instant (RFC 3339 or `YYYY-MM-DD HH:MM:SS`)' })),
    until: Type.Optional(Type.String({ description: 'Events before this instant' })),
    called_number: Type.Optional(Type.String({ description: 'Normalised like a lookup; prefix variants match' })),
    source_ip: Type.Optional(Type.String()),
    sip_method: Type.Optional(Type.String({ maxLength: 32, pattern: "^[A-Za-z0-9.!%*_+`'~-]+$" })),
    node_id: Type.Optional(Type.String({ description: 'created_by_node_id' })),
    collected_method: Type.Optional(Type.Union([Type.Literal('responsive'), Type.Literal('passive')])),
    transport_type: Type.Optional(Type.Union([Type.Literal('UDP'), Type.Literal('TCP'), Type.Literal('TLS')])),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: 100 })),
    cursor: Type.Optional(Type.String({ maxLength: 200, description: 'next_cursor of the previous page' })),
  },
  { additionalProperties: false },
);

/** GET /api/events and GET /api/events/{event_uuid}: the caller's own events (CONTRACT §8). */
export const eventsQueryRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.get(
    '/events',
    {
      config: { permission: 'read:events' },
      schema: {
        summary: "List the caller's events, newest first",
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
    async (request) => services.eventQuery.list(principalOf(request).account, request.query),
  );

  app.get(
    '/events/:event_uuid',
    {
      config: { permission: 'read:events', pathValue: { code: 'not_found', name: 'event' } },
      schema: {
        summary: 'One of the caller’s events',
        tags: ['events'],
        params: Type.Object({ event_uuid: Type.String({ maxLength: 100 }) }),
        response: { 200: Type.Ref('StoredEvent'), 404: Type.Ref('Problem'), ...authErrors },
      },
    },
    async (request) => services.eventQuery.get(principalOf(request).account, request.params.event_uuid),
  );
};
