import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Services } from '../../services.ts';
import { apiAnswers } from '../route-responses.ts';
import { JSON_LIKE_MEDIA_TYPES } from '../json-body.ts';
import { countSubmissionAnswer } from '../outcome-metrics.ts';
import { jsonBodyContent } from '../schemas.ts';
import { EVENT_ACKNOWLEDGED } from '../api/events-submit.ts';
import { EVENT_SUBMISSION, sendAnswer } from '../lanes/laned-endpoints.ts';

/** What these routes use of the services. */
type RouteServices = Pick<Services, 'intake' | 'metrics'>;

/** The secret of an ingest URL, as `ingest-urls create` issues it. */
const IngestParams = Type.Object({
  secret: Type.String({
    description: 'The secret of an ingest URL: `twi_` and 43 base64url characters. It is the credential; keep it out of logs.',
    pattern: '^twi_[A-Za-z0-9_-]{43}$',
  }),
});

/** POST /ingest/{secret}: one honeypot event through a node ingest URL (docs/api.md §11). */
export async function ingestSubmitRoute(app: FastifyInstance, { services }: { services: RouteServices }) {
  app.post(
    '/:secret',
    {
      // Authenticated by its path instead of a token: the event endpoint's allowance and body bound.
      config: { rateGroup: EVENT_SUBMISSION.rateGroup },
      onResponse: countSubmissionAnswer(services.metrics),
      bodyLimit: EVENT_SUBMISSION.bodyLimit,
      schema: {
        summary: 'Submit one honeypot event through a node ingest URL',
        description:
          'For SentryPeer nodes that cannot use the token endpoint: the secret in the path is the credential, and no Authorization header is read. ' +
          'Answers exactly as POST /api/events does, for the account the URL belongs to (Contributor Plan only): 201 once the event is durably stored; 200 for an identical replay of an event_uuid; 409 if the uuid was used with different content. ' +
          `The body is one JSON object, read as JSON when sent as ${JSON_LIKE_MEDIA_TYPES.join(', ')} (a stock node sends application/x-www-form-urlencoded) or with no Content-Type; any other media type, or a Content-Encoding other than identity, is 415. ` +
          'An unknown or revoked URL, or one of a disabled account, is 404, and counts as a failed authentication: too many from one address are refused with 429.',
        tags: ['events'],
        security: [],
        params: IngestParams,
        body: jsonBodyContent(Type.Ref('HoneypotEvent')),
        operationId: 'submitEventThroughIngestUrl',
        response: apiAnswers({
          ok: EVENT_ACKNOWLEDGED,
          errors: [400, 404, 409, 413, 415, 422],
          limited: true,
          // No Authorization header is read, so there is no 401 to answer.
          without: [401],
          describe: {
            403: "The account's plan does not allow submission (`plan_not_allowed`)",
            404: 'No such ingest URL (`not_found`): never issued, revoked, or its account is disabled; counted as a failed authentication',
            429: "The account's submission allowance is spent (with the RateLimit fields), or too many failed authentications came from this address (`rate_limited`)",
          },
        }),
      },
    },
    // The account is set by the scope's authentication hook, which answers every request it does not admit.
    async (request, reply) => sendAnswer(reply, await EVENT_SUBMISSION.answer(services.intake, request.ingestAccount!, request.body)),
  );
}
