import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Services } from '../../services.ts';
import { principalOf } from './api-auth.ts';
import { apiAnswers } from '../route-responses.ts';
import { countSubmissionAnswer } from '../outcome-metrics.ts';
import { jsonBodyContent } from '../schemas.ts';
import { ACKNOWLEDGEMENT_MESSAGE, EVENT_SUBMISSION, sendAnswer } from '../lanes/laned-endpoints.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'intake' | 'metrics'>;

/** The body of a 201 or 200 for a submitted event, through /api or /ingest: apiConventions registers it for both. */
export const EventAcknowledgement = Type.Object(
  { message: Type.String({ example: ACKNOWLEDGEMENT_MESSAGE }) },
  { $id: 'EventAcknowledgement', additionalProperties: false, example: { message: ACKNOWLEDGEMENT_MESSAGE } },
);
/** The Location header of a 201 or 200 for a submitted event. */
const eventLocation = { Location: { type: 'string' as const, description: 'Where the event is read back: /api/events/{event_uuid}', required: true, example: '/api/events/891da16a-56b1-497f-abef-ca3a2a849bea' } };
/** The answers of a stored or replayed event, through /api or an ingest URL. */
export const EVENT_ACKNOWLEDGED = {
  201: { description: 'Stored, durably', schema: Type.Ref('EventAcknowledgement'), headers: eventLocation },
  200: { description: 'An identical replay of an event already stored: nothing new was stored', schema: Type.Ref('EventAcknowledgement'), headers: eventLocation },
};

/**
 * POST /api/events: submit one honeypot event (docs/api.md §5), from its one description
 * (laned-endpoints.ts), which its direct lane is built from too.
 */
export async function eventsSubmitRoute(app: FastifyInstance, { services }: { services: RouteServices }) {
  const { path, permission, rateGroup, bodyLimit } = EVENT_SUBMISSION;
  app.post(
    path,
    {
      config: { permission, submission: true, rateGroup },
      bodyLimit,
      onResponse: countSubmissionAnswer(services.metrics),
      schema: {
        summary: 'Submit one honeypot event',
        description:
          'Contributor Plan only. 201 once the event is durably stored; 200 for an identical replay of an event_uuid; 409 if the uuid was used with different content. The body is one JSON object, sent as application/json, or as text/plain or application/x-www-form-urlencoded (what `curl -d` sends), or with no Content-Type; any other media type, or a Content-Encoding other than identity, is refused with 415.',
        operationId: 'submitEvent',
        tags: ['events'],
        body: jsonBodyContent(Type.Ref('HoneypotEvent')),
        response: apiAnswers({
          ok: EVENT_ACKNOWLEDGED,
          errors: [400, 409, 413, 415, 422],
          limited: true,
        }),
      },
    },
    async (request, reply) => sendAnswer(reply, await EVENT_SUBMISSION.answer(services.intake, principalOf(request).account, request.body)),
  );
}
